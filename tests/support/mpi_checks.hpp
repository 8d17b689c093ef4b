#pragma once
// Checks for the MPI test programs (tests/distributed/*_mpi_test.cpp), which run alone and under
// mpirun without GoogleTest: every rank checks its own results and counts its failures; main
// returns non-zero when there were any, which fails the mpirun.
#include <ksum/distributed.hpp>
#include <ksum/error.hpp>

#include <cstdio>
#include <fmt/format.h>
#include <optional>
#include <string>

namespace ksum::test {

inline int &mpi_failures() {
  static int count = 0;
  return count;
}

inline void mpi_check(bool ok, const std::string &what, int rank) {
  if (!ok) {
    std::fprintf(stderr, "rank %d: FAILED %s\n", rank, what.c_str());
    ++mpi_failures();
  }
}

// f must throw the same ksum::AgreedError on every rank: its code (when given) and a message
// containing `text`. A plain ksum::Error (thrown on one rank alone) fails.
template <class F>
void expect_agreed_error(const Communicator &comm, const char *name, std::optional<ErrorCode> code,
                         const std::string &text, F &&f) {
  const int rank = comm.rank();
  try {
    f();
    mpi_check(false, fmt::format("{}: no error", name), rank);
  } catch (const AgreedError &e) {
    mpi_check((!code || e.code() == *code) && std::string(e.what()).find(text) != std::string::npos,
              fmt::format("{}: got '{}'", name, e.what()), rank);
  } catch (const Error &e) { // thrown on this rank alone: the others could be waiting
    mpi_check(false, fmt::format("{}: not an AgreedError: '{}'", name, e.what()), rank);
  }
}

} // namespace ksum::test
