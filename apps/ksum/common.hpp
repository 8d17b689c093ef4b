#pragma once
// Pieces every ksum subcommand uses: the progress line, timers, and the options shared by commands.
#include <ksum/direct.hpp>

#include <CLI/CLI.hpp>
#include <chrono>
#include <initializer_list>
#include <string>

namespace ksum::cli {

struct Global {
  bool quiet = false;
};
Global &global();

// A progress line on stderr for work that runs longer than about two seconds: redrawn in place on a
// terminal, a line per tenth otherwise; silent with --quiet.
class ProgressLine {
public:
  explicit ProgressLine(std::string label);
  ~ProgressLine();
  // detail: what the work reports besides its fraction (e.g. an MC run's energy and acceptance),
  // shown after the times.
  void update(double fraction, const std::string &detail = {});
  std::function<void(double)> callback() {
    return [this](double f) { update(f); };
  }

private:
  std::string label_;
  std::chrono::steady_clock::time_point start_, last_;
  bool shown_ = false, tty_ = false;
  int last_tenth_ = -1;
};

double seconds_since(std::chrono::steady_clock::time_point t0);

// Refuses, before any work: an output that is one of the inputs, or an existing output without
// --force. Empty names are skipped.
void refuse_overwrite(const std::string &output, std::initializer_list<const std::string *> inputs,
                      bool force);

// Prints a line to stderr unless --quiet.
void note(const std::string &line);

// A rank other than 0 of a run under mpirun (from the launcher's environment, before MPI starts):
// it draws no progress and prints no error (rank 0 prints the one every rank agreed on).
bool mpi_worker();
// The number of ranks of the launch (1 when not started by mpirun), and this process's rank.
int mpi_ranks();
int mpi_rank();
// main's exit status `rc`. Under mpirun with several ranks a failing process leaves at once,
// without MPI_Finalize: a rank whose error the others did not share would otherwise wait in
// MPI_Finalize for ranks that wait for it, and mpirun ends the job when a rank exits non-zero.
int exit_code(int rc);

void register_info(CLI::App &app);
void register_sum(CLI::App &app);
void register_demo(CLI::App &app);
void register_interpolate(CLI::App &app);
void register_deform(CLI::App &app);
void register_kde(CLI::App &app);
void register_tdbem(CLI::App &app);
void register_mc(CLI::App &app);
void register_bsm(CLI::App &app);
void register_tune(CLI::App &app);

} // namespace ksum::cli
