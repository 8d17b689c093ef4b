#pragma once
// The communicator of the distributed engines (seed 003 §5.1's TD-BEM, issue 25's sums): public as
// ksum::Communicator (include/ksum/distributed.hpp); runtime::Comm is its name inside the library.
#include <ksum/distributed.hpp>

namespace ksum::runtime {

using Comm = ksum::Communicator;
using ksum::mpi_enabled;

} // namespace ksum::runtime
