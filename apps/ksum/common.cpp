#include "common.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <ksum/error.hpp>
#include <unistd.h>

namespace ksum::cli {

Global &global() {
  static Global g;
  return g;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void refuse_overwrite(const std::string &output, std::initializer_list<const std::string *> inputs,
                      bool force) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const auto *in : inputs)
    if (!in->empty() && fs::equivalent(*in, output, ec))
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("{}: the output would overwrite an input file", output));
  if (!force && fs::exists(fs::symlink_status(output, ec)))
    throw Error(ErrorCode::io, fmt::format("{}: file exists (use --force to overwrite)", output));
}

bool mpi_worker() {
  return mpi_rank() != 0;
}

int mpi_ranks() {
  for (const char *v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
    if (const char *n = std::getenv(v))
      return std::max(1, std::atoi(n));
  return 1;
}

int mpi_rank() {
  for (const char *v : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"})
    if (const char *r = std::getenv(v))
      return std::atoi(r);
  return 0;
}

int exit_code(int rc) {
  if (rc != 0 && mpi_ranks() > 1) {
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(rc);
  }
  return rc;
}

void note(const std::string &line) {
  if (!global().quiet && !mpi_worker()) // under mpirun rank 0 speaks for all
    fmt::print(stderr, "{}\n", line);
}

ProgressLine::ProgressLine(std::string label)
    : label_(std::move(label)), start_(std::chrono::steady_clock::now()), last_(start_),
      tty_(isatty(fileno(stderr)) != 0) {}

ProgressLine::~ProgressLine() {
  if (shown_ && tty_)
    fmt::print(stderr, "\n");
}

void ProgressLine::update(double fraction, const std::string &detail) {
  if (global().quiet)
    return;
  const auto now = std::chrono::steady_clock::now();
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  if (elapsed < 2.0)
    return;
  const double eta = fraction > 0 ? elapsed * (1 - fraction) / fraction : 0;
  if (tty_) {
    if (std::chrono::duration<double>(now - last_).count() < 0.2 && fraction < 1)
      return;
    fmt::print(stderr, "\r{}: {:5.1f}% ({:.1f} s elapsed, {:.1f} s left){}{}   ", label_,
               100 * fraction, elapsed, eta, detail.empty() ? "" : "  ", detail);
  } else {
    const int tenth = static_cast<int>(fraction * 10);
    if (tenth == last_tenth_)
      return;
    last_tenth_ = tenth;
    fmt::print(stderr, "{}: {:3.0f}% ({:.1f} s elapsed, {:.1f} s left){}{}\n", label_,
               100 * fraction, elapsed, eta, detail.empty() ? "" : "  ", detail);
  }
  std::fflush(stderr);
  last_ = now;
  shown_ = true;
}

} // namespace ksum::cli
