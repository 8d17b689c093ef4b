// Built without CUDA: the GPU dense solver is not available.
#include "rbf/global/solvers.hpp"

#include <ksum/error.hpp>

namespace ksum::rbf {

SolveResult solve_dense_gpu(const DenseProblem &) {
  throw Error(ErrorCode::unsupported,
              "this ksum was built without CUDA: the dense solver runs on the CPU (--backend cpu)");
}

} // namespace ksum::rbf
