// The multiquadric treecode's GPU kernels (mq_launch.hpp).
//
// Setup, one block per source box: the sources go through shared memory S at a time; for each
// degree l the block computes G_l of those S sources from G_{l−1} and G_{l−2} (three rotating
// buffers in shared memory, one entry per thread) by the recursion of multiquadric.hpp in gather
// form, and each thread adds Σ_s w_s G_l^{(s)} to the coefficients it owns. A coefficient is read
// and written once per S sources, not once per source (the seed's GPU setup was bound by exactly
// that global-memory traffic).
//
// Eval, one block per target leaf, a target per thread: every thread of a block walks the same far
// and near lists, so the coefficients and source points it reads are shared through the cache.
#include "fmm/fmm3d/mq_launch.hpp"

#include <ksum/error.hpp>

#include <cuda_runtime.h>
#include <string>

namespace ksum::detail {
namespace {

constexpr int setup_threads = 128;
constexpr int eval_threads = 64;
constexpr int max_terms = 64;                   // multiquadric.hpp's mq_max_terms
constexpr std::size_t shared_budget = 96 << 10; // bytes of dynamic shared memory per block

void check(cudaError_t e, const char *what) {
  if (e != cudaSuccess)
    throw Error(ErrorCode::device, std::string("GPU multiquadric treecode: ") + what +
                                       " failed: " + cudaGetErrorString(e));
}

__host__ __device__ constexpr int tri(int m) {
  return m * (m + 1) / 2;
}
// Entry (a, ·, c) of degree l within that degree: T(l − a) + c.
__device__ int at(int l, int a, int c) {
  return tri(l - a) + c;
}

// Sources per block round: three degree buffers and 5 values (t, α, w) per source.
template <class T> int sources_per_round(int terms) {
  const std::size_t per = (3 * static_cast<std::size_t>(tri(terms)) + 5) * sizeof(T);
  return static_cast<int>(std::max<std::size_t>(1, std::min<std::size_t>(32, shared_budget / per)));
}

template <class T>
__global__ void __launch_bounds__(setup_threads)
    setup_kernel(MqTree<T> t, const std::int32_t *list, int S) {
  extern __shared__ unsigned char raw[];
  T *buf = reinterpret_cast<T *>(raw);
  const int E = tri(t.terms); // entries of the largest degree (terms − 1)
  T *src = buf + 3 * S * E;   // per source: t (3), α, w
  const std::int32_t b = list[blockIdx.x];
  const MqBox<T> B = t.boxes[b];
  T *coef = t.coef + static_cast<std::int64_t>(B.slot) * t.ncoef;
  for (std::int64_t j0 = B.begin; j0 < B.end; j0 += S) {
    const int ns = static_cast<int>(B.end - j0 < S ? B.end - j0 : S);
    __syncthreads(); // the previous round is done with src and the buffers
    for (int s = threadIdx.x; s < ns; s += blockDim.x) {
      T a2 = t.c2 / (B.rho * B.rho);
      for (int k = 0; k < 3; ++k) {
        const T v = (t.points[k * t.n + j0 + s] - B.centre[k]) / B.rho;
        src[5 * s + k] = v;
        a2 += v * v;
      }
      src[5 * s + 3] = a2;
      src[5 * s + 4] = t.ws[j0 + s];
    }
    __syncthreads();
    for (int l = 0; l < t.terms; ++l) {
      T *cur = buf + (l % 3) * S * E;
      const T *p1 = buf + ((l + 2) % 3) * S * E; // degree l − 1
      const T *p2 = buf + ((l + 1) % 3) * S * E; // degree l − 2
      const T A = l > 0 ? T(2 * l - 3) / T(l) : T(0);
      const T Bl = l > 0 ? T(3 - l) / T(l) : T(0);
      const int ne = tri(l + 1);
      for (int k = threadIdx.x; k < ne; k += blockDim.x) {
        int m = static_cast<int>((sqrtf(8.0f * static_cast<float>(k) + 1.0f) - 1.0f) / 2.0f);
        while (tri(m) > k)
          --m;
        while (tri(m + 1) <= k)
          ++m;
        const int c = k - tri(m), a = l - m, bb = m - c; // the monomial x^a y^bb z^c
        T acc = 0;
        for (int s = 0; s < ns; ++s) {
          const T *q = src + 5 * s;
          T g = 1;
          if (l > 0) {
            const T *g1 = p1 + s * E;
            T lin = 0;
            if (a > 0)
              lin += q[0] * g1[at(l - 1, a - 1, c)];
            if (bb > 0)
              lin += q[1] * g1[at(l - 1, a, c)];
            if (c > 0)
              lin += q[2] * g1[at(l - 1, a, c - 1)];
            g = A * lin;
            if (l >= 2 && l != 3) { // B_3 = 0
              const T *g2 = p2 + s * E;
              T sq = 0;
              if (a > 1)
                sq += g2[at(l - 2, a - 2, c)];
              if (bb > 1)
                sq += g2[at(l - 2, a, c)];
              if (c > 1)
                sq += g2[at(l - 2, a, c - 2)];
              g += Bl * q[3] * sq;
            }
          }
          cur[s * E + k] = g;
          acc += q[4] * g;
        }
        coef[l * (l + 1) * (l + 2) / 6 + k] += acc;
      }
      __syncthreads();
    }
  }
}

// The series of a box at x̃ (the offset from its centre in its units ρ), in the unit vector x̂ and
// r = |x̃|: G_l(x̃) / r^{2l−1} = r^{1−l} G_l(x̂), so every power is at most 1 in magnitude.
template <class T> __device__ T series(int terms, const T *cf, T x, T y, T z) {
  const T r = sqrt(x * x + y * y + z * z), inv = 1 / r;
  x *= inv;
  y *= inv;
  z *= inv;
  T py[max_terms], pz[max_terms], px[max_terms];
  px[0] = py[0] = pz[0] = 1;
  for (int k = 1; k < terms; ++k) {
    px[k] = px[k - 1] * x;
    py[k] = py[k - 1] * y;
    pz[k] = pz[k - 1] * z;
  }
  T scale = r, u = 0;
  int idx = 0;
  for (int l = 0; l < terms; ++l) {
    T s = 0;
    for (int m = 0; m <= l; ++m) { // a = l − m; entries T(m) + c, c = 0 … m: consecutive
      T sm = 0;
      for (int c = 0; c <= m; ++c)
        sm += cf[idx++] * py[m - c] * pz[c];
      s += px[l - m] * sm;
    }
    u += s * scale;
    scale *= inv;
  }
  return u;
}

template <class T> __device__ T direct(const MqTree<T> &t, const MqBox<T> &B, T x, T y, T z) {
  T u = 0;
  for (std::int64_t j = B.begin; j < B.end; ++j) {
    const T dx = x - t.points[j], dy = y - t.points[t.n + j], dz = z - t.points[2 * t.n + j];
    u += t.ws[j] * sqrt(dx * dx + dy * dy + dz * dz + t.c2);
  }
  return u;
}

template <class T>
__global__ void __launch_bounds__(eval_threads)
    eval_kernel(MqTree<T> t, const std::int32_t *leaves, T *us) {
  const std::int32_t leaf = leaves[blockIdx.x];
  const MqBox<T> L = t.boxes[leaf];
  for (std::int64_t i = L.begin + threadIdx.x; i < L.end; i += blockDim.x) {
    const T x = t.points[i], y = t.points[t.n + i], z = t.points[2 * t.n + i];
    T u = 0;
    for (std::int32_t a = leaf; a >= 0; a = t.boxes[a].parent)
      for (std::int64_t k = t.far_offsets[a]; k < t.far_offsets[a + 1]; ++k) {
        const MqBox<T> B = t.boxes[t.far[k]];
        if (const int terms = t.use_series[k]) {
          const T inv = 1 / B.rho;
          u += B.rho * series(terms, t.coef + static_cast<std::int64_t>(B.slot) * t.ncoef,
                              (x - B.centre[0]) * inv, (y - B.centre[1]) * inv,
                              (z - B.centre[2]) * inv);
        } else {
          u += direct(t, B, x, y, z);
        }
      }
    for (std::int64_t k = t.near_offsets[leaf]; k < t.near_offsets[leaf + 1]; ++k)
      u += direct(t, t.boxes[t.near[k]], x, y, z);
    us[i] = u;
  }
}

} // namespace

template <class T>
void launch_mq_setup(const MqTree<T> &t, const std::int32_t *list, std::int64_t count,
                     void *stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  check(cudaMemsetAsync(t.coef, 0, static_cast<std::size_t>(count * t.ncoef) * sizeof(T), s),
        "clearing the expansions");
  if (count == 0 || t.terms <= 0)
    return;
  const int S = sources_per_round<T>(t.terms);
  const std::size_t bytes = (3 * static_cast<std::size_t>(S) * tri(t.terms) + 5 * S) * sizeof(T);
  check(cudaFuncSetAttribute(setup_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(shared_budget)),
        "cudaFuncSetAttribute");
  setup_kernel<T><<<static_cast<unsigned>(count), setup_threads, bytes, s>>>(t, list, S);
  check(cudaGetLastError(), "the setup launch");
}

template <class T>
void launch_mq_eval(const MqTree<T> &t, const std::int32_t *leaves, std::int64_t count, T *us,
                    void *stream) {
  if (count == 0)
    return;
  eval_kernel<T>
      <<<static_cast<unsigned>(count), eval_threads, 0, static_cast<cudaStream_t>(stream)>>>(
          t, leaves, us);
  check(cudaGetLastError(), "the eval launch");
}

template void launch_mq_setup<float>(const MqTree<float> &, const std::int32_t *, std::int64_t,
                                     void *);
template void launch_mq_setup<double>(const MqTree<double> &, const std::int32_t *, std::int64_t,
                                      void *);
template void launch_mq_eval<float>(const MqTree<float> &, const std::int32_t *, std::int64_t,
                                    float *, void *);
template void launch_mq_eval<double>(const MqTree<double> &, const std::int32_t *, std::int64_t,
                                     double *, void *);

} // namespace ksum::detail
