#pragma once
// Variable-length records of doubles to every rank, exchanged by one MPI_Alltoallv (the L-set
// search of the distributed global fit, the partitioned PUM).
#include <ksum/distributed.hpp>
#include <ksum/error.hpp>

#include <algorithm>
#include <cstdint>
#include <fmt/format.h>
#include <numeric>
#include <vector>

namespace ksum::runtime {

// Per destination rank, variable-length records of doubles, exchanged by one MPI_Alltoallv.
struct Outbox {
  std::vector<std::vector<double>> to;
  explicit Outbox(int P) : to(static_cast<std::size_t>(P)) {}
  // Returns what every rank sent to this one, grouped by source rank (from[r]); `what` names the
  // caller in the error of a message beyond MPI's size.
  std::vector<std::vector<double>> exchange(const Communicator &comm, const char *what) const {
    const int P = comm.size();
    std::vector<std::int64_t> send(static_cast<std::size_t>(P));
    for (int r = 0; r < P; ++r)
      send[r] = static_cast<std::int64_t>(to[r].size());
    const std::vector<std::int64_t> recv = comm.alltoall(send);
    // (A rank that cannot send or receive its part fails here, agreed, before the exchange.)
    std::vector<double> flat, got;
    comm.agree(capture([&] {
      const std::int64_t out = std::accumulate(send.begin(), send.end(), std::int64_t{0}),
                         in = std::accumulate(recv.begin(), recv.end(), std::int64_t{0});
      if (std::max(out, in) > std::int64_t{INT32_MAX})
        throw Error(ErrorCode::unsupported,
                    fmt::format("{} would exchange {} values on rank {} in one message (MPI's "
                                "limit: 2^31 - 1): use more ranks",
                                what, std::max(out, in), comm.rank()));
      flat.reserve(static_cast<std::size_t>(out));
      for (int r = 0; r < P; ++r)
        flat.insert(flat.end(), to[r].begin(), to[r].end());
      got.resize(static_cast<std::size_t>(in));
    }));
    comm.alltoallv(flat.data(), send, got.data(), recv);
    std::vector<std::vector<double>> from(static_cast<std::size_t>(P));
    std::int64_t at = 0;
    for (int r = 0; r < P; ++r) {
      from[r].assign(got.begin() + at, got.begin() + at + recv[r]);
      at += recv[r];
    }
    return from;
  }
};

} // namespace ksum::runtime
