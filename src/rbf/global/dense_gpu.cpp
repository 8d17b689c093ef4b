// The dense solver on the GPU: the saddle-point system (4) assembled on the host, factorised and
// solved by cuSOLVER's LU with partial pivoting (64-bit API: getrf, getrs).
#include "rbf/global/solvers.hpp"
#include "runtime/cuda_array.hpp"

#include <ksum/error.hpp>

#include <cusolverDn.h>
#include <fmt/format.h>
#include <memory>

namespace ksum::rbf {

namespace {

void check(cusolverStatus_t s, const char *what) {
  if (s != CUSOLVER_STATUS_SUCCESS)
    throw Error(ErrorCode::device,
                fmt::format("cuSOLVER {} failed (status {})", what, static_cast<int>(s)));
}

struct Handles {
  cusolverDnHandle_t h = nullptr;
  cusolverDnParams_t p = nullptr;
  Handles() {
    check(cusolverDnCreate(&h), "cusolverDnCreate");
    check(cusolverDnCreateParams(&p), "cusolverDnCreateParams");
  }
  ~Handles() {
    if (p)
      cusolverDnDestroyParams(p);
    if (h)
      cusolverDnDestroy(h);
  }
};

} // namespace

SolveResult solve_dense_gpu(const DenseProblem &p) {
  const std::int64_t n = p.x->rows(), m = p.P->cols(), size = n + m, nc = p.f->cols();
  int dev = 0;
  detail::cuda_check(cudaGetDevice(&dev), 0, "cudaGetDevice");
  std::size_t free_b = 0, total_b = 0;
  detail::cuda_check(cudaMemGetInfo(&free_b, &total_b), dev, "cudaMemGetInfo");
  const double need = 8.0 * static_cast<double>(size) * static_cast<double>(size + nc);
  if (need > 0.9 * static_cast<double>(free_b))
    throw Error(ErrorCode::unsupported,
                fmt::format("the dense solver needs {:.1f} GiB on GPU {} ({} × {} matrix) and "
                            "{:.1f} GiB are free. Use --solver fgp or krylov",
                            need / (1 << 30), dev, size, size,
                            static_cast<double>(free_b) / (1 << 30)));
  auto [K, B] = assemble_saddle(p);

  detail::DeviceArray<double> dK, dB;
  detail::DeviceArray<std::int64_t> dpiv;
  detail::DeviceArray<int> dinfo;
  dK.upload(K.data(), size * size);
  dB.upload(B.data(), size * nc);
  dpiv.reserve(size);
  dinfo.reserve(1);
  const Handles hd;
  std::size_t dev_bytes = 0, host_bytes = 0;
  check(cusolverDnXgetrf_bufferSize(hd.h, hd.p, size, size, CUDA_R_64F, dK.ptr, size, CUDA_R_64F,
                                    &dev_bytes, &host_bytes),
        "getrf_bufferSize");
  detail::DeviceArray<char> work;
  work.reserve(static_cast<std::int64_t>(dev_bytes));
  std::vector<char> host_work(host_bytes);
  check(cusolverDnXgetrf(hd.h, hd.p, size, size, CUDA_R_64F, dK.ptr, size, dpiv.ptr, CUDA_R_64F,
                         work.ptr, dev_bytes, host_work.data(), host_bytes, dinfo.ptr),
        "getrf");
  int info = 0;
  detail::cuda_check(cudaMemcpy(&info, dinfo.ptr, sizeof(int), cudaMemcpyDeviceToHost), dev,
                     "cudaMemcpy (getrf info)");
  if (info > 0)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("the interpolation matrix is singular (cuSOLVER getrf: zero pivot "
                            "at row {}): repeated centres, or a kernel and ε for which the "
                            "system is not solvable",
                            info));
  check(cusolverDnXgetrs(hd.h, hd.p, CUBLAS_OP_N, size, nc, CUDA_R_64F, dK.ptr, size, dpiv.ptr,
                         CUDA_R_64F, dB.ptr, size, dinfo.ptr),
        "getrs");
  detail::cuda_check(
      cudaMemcpy(B.data(), dB.ptr, B.size() * sizeof(double), cudaMemcpyDeviceToHost), dev,
      "cudaMemcpy (solution)");
  return split_solution(B.data(), n, m, nc);
}

} // namespace ksum::rbf
