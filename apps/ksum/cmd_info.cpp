// ksum info: what this build can do (CUDA, GPUs, threads) and the kernel catalogue.
#include "common.hpp"

#include <ksum/device.hpp>
#include <ksum/kernels.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace ksum::cli {

void register_info(CLI::App &app) {
  auto *cmd =
      app.add_subcommand("info", "Build options, CPU threads, GPUs and the kernel catalogue");
  static bool as_json = false;
  cmd->add_flag("--json", as_json, "Print as JSON");
  cmd->callback([] {
    const auto gs = gpus();
    if (as_json) {
      nlohmann::json j;
      j["version"] = version();
      j["cuda"] = cuda_enabled();
      j["cuda_runtime"] = cuda_runtime_version();
      j["threads"] = max_threads();
      for (const auto &g : gs)
        j["gpus"].push_back(
            {{"id", g.id},
             {"name", g.name},
             {"memory_bytes", g.total_memory},
             {"free_bytes", g.free_memory},
             {"compute_capability", fmt::format("{}.{}", g.compute_major, g.compute_minor)},
             {"multiprocessors", g.multiprocessors}});
      for (const auto &k : all_kernels())
        j["kernels"].push_back({{"name", k.name},
                                {"formula", k.formula},
                                {"min_degree", k.min_degree},
                                {"compact", k.support == Support::compact}});
      fmt::print("{}\n", j.dump(2));
      return;
    }
    fmt::print("ksum {}\n", version());
    fmt::print("  CUDA backend : {}\n",
               cuda_enabled() ? fmt::format("built (runtime {})", cuda_runtime_version())
                              : std::string("not built"));
    fmt::print("  CPU threads  : {} (OpenMP; set OMP_NUM_THREADS or --threads)\n", max_threads());
    if (gs.empty())
      fmt::print("  GPUs         : none visible\n");
    for (const auto &g : gs)
      fmt::print("  GPU {}        : {}, {:.1f} GiB ({:.1f} GiB free), compute capability {}.{}, "
                 "{} SMs\n",
                 g.id, g.name, g.total_memory / 1073741824.0, g.free_memory / 1073741824.0,
                 g.compute_major, g.compute_minor, g.multiprocessors);
    fmt::print("  backend auto : {}\n", gs.empty() ? "cpu" : "gpu");
    fmt::print("\nKernels, K(x, y) = phi(s), s = eps*|x - y|:\n");
    fmt::print("  {:<22}{:<32}{:>10}  {}\n", "name", "phi(s)", "min deg", "support");
    for (const auto &k : all_kernels())
      fmt::print("  {:<22}{:<32}{:>10}  {}\n", k.name, k.formula, k.min_degree,
                 k.support == Support::compact ? "compact (s < 1)" : "global");
  });
}

} // namespace ksum::cli
