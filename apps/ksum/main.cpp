// ksum: fast kernel sums from the command line. One file per subcommand (cmd_*.cpp).
#include "common.hpp"

#include <ksum/device.hpp>
#include <ksum/distributed.hpp>
#include <ksum/error.hpp>

#include <fmt/format.h>
#include <string>

namespace ksum::cli {
void register_simulate(CLI::App &app); // cmd_simulate.cpp
}

int main(int argc, char **argv) {
  CLI::App app{fmt::format("ksum {}: fast kernel summation on CPUs and NVIDIA GPUs.\n"
                           "  u(x_i) = sum_j w_j K(|x_i - y_j|)\n"
                           "Run 'ksum demo' for a first look, 'ksum <command> --help' for details.",
                           ksum::version()),
               "ksum"};
  app.require_subcommand(1);
  app.add_flag("-q,--quiet", ksum::cli::global().quiet, "No progress line, no summary on stderr");
  app.set_version_flag("--version", std::string(ksum::version()));
  ksum::cli::register_info(app);
  ksum::cli::register_sum(app);
  ksum::cli::register_interpolate(app);
  ksum::cli::register_deform(app);
  ksum::cli::register_kde(app);
  ksum::cli::register_tdbem(app);
  ksum::cli::register_mc(app);
  ksum::cli::register_bsm(app);
  ksum::cli::register_tune(app);
  ksum::cli::register_demo(app);
  ksum::cli::register_simulate(app);
  // Under mpirun with several ranks only the commands that split their work over the ranks run; the
  // others would each do all of it and write the same output files at once.
  if (const int ranks = ksum::cli::mpi_ranks(); ranks > 1) {
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      if (!arg.empty() && arg[0] == '-')
        continue;
      if (arg != "sum" && arg != "interpolate" && arg != "tdbem" && arg != "info") {
        if (!ksum::cli::mpi_worker())
          fmt::print(stderr,
                     "ksum: error: ksum {} does not run over MPI ranks (under mpirun with {} "
                     "ranks only `ksum sum`, `ksum interpolate` and `ksum tdbem` "
                     "do): run it without mpirun\n",
                     arg, ranks);
        return 1;
      }
      break;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    return app.exit(e);
  } catch (const ksum::AgreedError &e) {
    // Under mpirun every rank throws the error the ranks agreed on; rank 0 prints it.
    if (!ksum::cli::mpi_worker())
      fmt::print(stderr, "ksum: error: {}\n", e.what());
    return ksum::cli::exit_code(1);
  } catch (const ksum::Error &e) {
    if (ksum::cli::mpi_ranks() > 1)
      fmt::print(stderr, "ksum: error (rank {}): {}\n", ksum::cli::mpi_rank(), e.what());
    else
      fmt::print(stderr, "ksum: error: {}\n", e.what());
    return ksum::cli::exit_code(1);
  } catch (const std::exception &e) {
    fmt::print(stderr, "ksum: internal error: {}\n", e.what());
    return ksum::cli::exit_code(3);
  }
  return 0;
}
