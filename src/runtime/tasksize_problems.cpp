// The test problems of seed 004 Paper II with OpenMP tasks (src/runtime/tasksize_problems.hpp),
// their descriptions for the task-size model, single tasks for C(S), and serial references.
//
// Layouts (fp64): matmul row-major n × n (A, B, C); N-body structure of arrays (x, y, z, mass and
// the force accumulators fx, fy, fz); Cholesky column-major n × n, lower triangle. Block I of a
// dimension covers [I·s, min(n, (I + 1)·s)): B = ⌈n / s⌉ blocks, the last one short.
//
// Work units (the W of the model, consistent between describe(), task_work() and TaskBench):
//   matmul: one multiply-add (a task of matmul_few: B block products of s³, the paper's N·S²);
//   N-body: one particle pair (an off-diagonal block pair: s²; a diagonal block: (s² − s)/2);
//   Cholesky: one flop (potrf s³/3, trsm s³, syrk s³, gemm 2s³).
#include "runtime/tasksize_problems.hpp"

#include "linalg/bsm/cpu_ops.hpp" // cblas, LAPACKE and BlasThreads (OpenBLAS thread control)

#include <ksum/error.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <fmt/format.h>
#include <memory>
#include <omp.h>
#include <string>

namespace ksum::tasksize::problems {

namespace {

constexpr std::array<std::pair<Kind, std::string_view>, 6> kNames{{
    {Kind::matmul_few_loops, "matmul_few_loops"},
    {Kind::matmul_few_blas, "matmul_few_blas"},
    {Kind::matmul_many_blas, "matmul_many_blas"},
    {Kind::nbody_light, "nbody_light"},
    {Kind::nbody_heavy, "nbody_heavy"},
    {Kind::cholesky, "cholesky"},
}};

bool is_matmul(Kind k) {
  return k == Kind::matmul_few_loops || k == Kind::matmul_few_blas || k == Kind::matmul_many_blas;
}
bool is_nbody(Kind k) {
  return k == Kind::nbody_light || k == Kind::nbody_heavy;
}

// Deterministic pseudo-random numbers: splitmix64 of (seed, index) mapped to [-1, 1).
double uniform(std::uint64_t seed, std::uint64_t i) {
  std::uint64_t z = seed * 0x9E3779B97F4A7C15ull + i + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-52 - 1.0;
}

constexpr std::uint64_t kSeedA = 11, kSeedB = 12, kSeedBody = 21, kSeedSpd = 31;

void check_n(std::int64_t n) {
  if (n < 1)
    throw Error(ErrorCode::invalid_argument, fmt::format("problem size n = {}: must be ≥ 1", n));
  if (n > (std::int64_t{1} << 20))
    throw Error(ErrorCode::invalid_argument,
                fmt::format("problem size n = {}: larger than this benchmark supports (2^20)", n));
}

void check_sizes(std::int64_t n, double s) {
  check_n(n);
  if (!(s >= 1) || !std::isfinite(s) || s > static_cast<double>(n))
    throw Error(ErrorCode::invalid_argument,
                fmt::format("block size s = {}: must satisfy 1 ≤ s ≤ n = {}", s, n));
}

std::int64_t blocks(std::int64_t n, std::int64_t s) {
  return (n + s - 1) / s;
}

// Extent of block I (the last one short).
std::int64_t extent(std::int64_t n, std::int64_t s, std::int64_t I) {
  return std::min(s, n - I * s);
}

// Runs `body` (which creates the tasks inside `single`, counting them) on T threads and returns
// its wall time; the implicit barrier at the end of `single` waits for every task.
template <class Body> double timed_region(int threads, Body &&body) {
  const int T = threads > 0 ? threads : omp_get_max_threads();
  const double t0 = omp_get_wtime();
#pragma omp parallel num_threads(T)
  {
#pragma omp single
    body();
  }
  return omp_get_wtime() - t0;
}

// --- matrix multiplication ---------------------------------------------------------------------

struct Matmul {
  std::int64_t n;
  std::vector<double> a, b, c;
  explicit Matmul(std::int64_t n_)
      : n(n_), a(static_cast<std::size_t>(n * n)), b(a.size()), c(a.size(), 0.0) {
    for (std::size_t i = 0; i < a.size(); ++i) {
      a[i] = uniform(kSeedA, i);
      b[i] = uniform(kSeedB, i);
    }
  }
};

// C += A·B on an mi × mk by mk × mj block product, row-major with leading dimension ld: the plain
// i-k-j loops (no cache blocking, the paper's "nested loops" task).
void product_loops(const double *A, const double *Bm, double *C, std::int64_t mi, std::int64_t mj,
                   std::int64_t mk, std::int64_t ld) {
  for (std::int64_t i = 0; i < mi; ++i) {
    double *__restrict c = C + i * ld;
    const double *a = A + i * ld;
    for (std::int64_t k = 0; k < mk; ++k) {
      const double aik = a[k];
      const double *__restrict b = Bm + k * ld;
      for (std::int64_t j = 0; j < mj; ++j)
        c[j] += aik * b[j];
    }
  }
}

// C = A·B + beta·C on a block product with one dgemm (row-major).
void product_blas(const double *A, const double *Bm, double *C, std::int64_t mi, std::int64_t mj,
                  std::int64_t mk, std::int64_t ld, double beta) {
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(mi), static_cast<int>(mj),
              static_cast<int>(mk), 1.0, A, static_cast<int>(ld), Bm, static_cast<int>(ld), beta, C,
              static_cast<int>(ld));
}

double abs_sum(const std::vector<double> &v) {
  double s = 0;
  for (double x : v)
    s += std::abs(x);
  return s;
}

RunResult run_matmul(Kind k, std::int64_t n, std::int64_t s, int threads) {
  Matmul m(n);
  const std::int64_t B = blocks(n, s);
  const double *A = m.a.data(), *Bm = m.b.data();
  double *C = m.c.data();
  std::int64_t tasks = 0;
  // One BLAS thread inside the tasks (OpenBLAS's pthreads pool would oversubscribe the team).
  bsm::BlasThreads one(1);
  RunResult r;
  if (k == Kind::matmul_many_blas) {
    // One task per block product (I, J, K); the K outermost so that the first B² tasks are
    // independent; tasks writing the same C block are serialised by depend(inout).
    r.seconds = timed_region(threads, [&] {
      for (std::int64_t K = 0; K < B; ++K)
        for (std::int64_t I = 0; I < B; ++I)
          for (std::int64_t J = 0; J < B; ++J) {
            double *cij = C + I * s * n + J * s;
            ++tasks;
#pragma omp task firstprivate(I, J, K, cij) depend(inout : cij[0])
            product_blas(A + I * s * n + K * s, Bm + K * s * n + J * s, cij, extent(n, s, I),
                         extent(n, s, J), extent(n, s, K), n, 1.0);
          }
    });
  } else {
    const bool blas = k == Kind::matmul_few_blas;
    // One task per output block, looping over the K blocks.
    r.seconds = timed_region(threads, [&] {
      for (std::int64_t I = 0; I < B; ++I)
        for (std::int64_t J = 0; J < B; ++J) {
          ++tasks;
#pragma omp task firstprivate(I, J)
          {
            const std::int64_t mi = extent(n, s, I), mj = extent(n, s, J);
            double *cij = C + I * s * n + J * s;
            if (!blas)
              for (std::int64_t i = 0; i < mi; ++i)
                std::fill_n(cij + i * n, mj, 0.0);
            for (std::int64_t K = 0; K < B; ++K) {
              const double *aik = A + I * s * n + K * s, *bkj = Bm + K * s * n + J * s;
              if (blas)
                product_blas(aik, bkj, cij, mi, mj, extent(n, s, K), n, K == 0 ? 0.0 : 1.0);
              else
                product_loops(aik, bkj, cij, mi, mj, extent(n, s, K), n);
            }
          }
        }
    });
  }
  r.checksum = abs_sum(m.c);
  r.tasks = tasks;
  return r;
}

double reference_matmul(std::int64_t n) {
  Matmul m(n);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t k = 0; k < n; ++k) {
      const double aik = m.a[static_cast<std::size_t>(i * n + k)];
      for (std::int64_t j = 0; j < n; ++j)
        m.c[static_cast<std::size_t>(i * n + j)] += aik * m.b[static_cast<std::size_t>(k * n + j)];
    }
  return abs_sum(m.c);
}

// --- N-body ------------------------------------------------------------------------------------

// Softening ε² of the 1/r² force (positions in the unit cube).
constexpr double kSoft2 = 1e-4;

// The heavy kernel's screening factor: e^{−u} with u = r² / λ² (λ² = 1/4), as its Taylor series
// truncated after the u^kHeavyDegree term and evaluated by Horner's rule. For r² ≤ 3 + ε² (the unit
// cube) u ≤ 12 and the series is smooth and bounded; the degree is what makes the kernel heavy:
// about 10× the work per pair of the light one (measured on the dev machine, see bench).
constexpr int kHeavyDegree = 64;
constexpr double kHeavyInvLambda2 = 4.0;

constexpr std::array<double, kHeavyDegree + 1> heavy_coefficients() {
  std::array<double, kHeavyDegree + 1> c{};
  double f = 1;
  for (int k = 0; k <= kHeavyDegree; ++k) {
    c[static_cast<std::size_t>(k)] = (k % 2 ? -1.0 : 1.0) / f;
    f *= k + 1;
  }
  return c;
}
constexpr auto kHeavy = heavy_coefficients();

// The scalar weight w(r²) with F_i = w·m_i·m_j·(x_j − x_i): light 1/r³ (softened); heavy the same
// times the screening series.
template <bool Heavy> inline double pair_weight(double r2) {
  const double inv = 1.0 / std::sqrt(r2);
  double w = inv * inv * inv;
  if constexpr (Heavy) {
    const double u = r2 * kHeavyInvLambda2;
    double p = kHeavy[kHeavyDegree];
    for (int k = kHeavyDegree - 1; k >= 0; --k)
      p = p * u + kHeavy[static_cast<std::size_t>(k)];
    w *= p;
  }
  return w;
}

struct Bodies {
  std::int64_t n;
  std::vector<double> x, y, z, m, fx, fy, fz;
  explicit Bodies(std::int64_t n_) : n(n_) {
    const auto N = static_cast<std::size_t>(n);
    x.resize(N), y.resize(N), z.resize(N), m.resize(N);
    fx.assign(N, 0.0), fy.assign(N, 0.0), fz.assign(N, 0.0);
    for (std::size_t i = 0; i < N; ++i) {
      x[i] = 0.5 + 0.5 * uniform(kSeedBody, 4 * i);
      y[i] = 0.5 + 0.5 * uniform(kSeedBody, 4 * i + 1);
      z[i] = 0.5 + 0.5 * uniform(kSeedBody, 4 * i + 2);
      m[i] = 1.0 + 0.5 * uniform(kSeedBody, 4 * i + 3);
    }
  }
  double checksum() const {
    double s = 0;
    for (std::size_t i = 0; i < x.size(); ++i)
      s += std::abs(fx[i]) + std::abs(fy[i]) + std::abs(fz[i]);
    return s;
  }
};

// Pointers to one block of bodies (positions, masses, force accumulators).
struct BodyBlock {
  const double *x, *y, *z, *m;
  double *fx, *fy, *fz;
  std::int64_t len;
};

BodyBlock block_of(Bodies &b, std::int64_t first, std::int64_t len) {
  return {b.x.data() + first,  b.y.data() + first,  b.z.data() + first,  b.m.data() + first,
          b.fx.data() + first, b.fy.data() + first, b.fz.data() + first, len};
}

// Off-diagonal task: every pair (i ∈ P, j ∈ Q) once, the force added to i and subtracted from j
// (Newton's third law): s² work units.
template <bool Heavy> void interact_pair(const BodyBlock &P, const BodyBlock &Q) {
  double *__restrict qfx = Q.fx, *__restrict qfy = Q.fy, *__restrict qfz = Q.fz;
  for (std::int64_t i = 0; i < P.len; ++i) {
    const double xi = P.x[i], yi = P.y[i], zi = P.z[i], mi = P.m[i];
    double ax = 0, ay = 0, az = 0;
    for (std::int64_t j = 0; j < Q.len; ++j) {
      const double dx = Q.x[j] - xi, dy = Q.y[j] - yi, dz = Q.z[j] - zi;
      const double w = mi * Q.m[j] * pair_weight<Heavy>(dx * dx + dy * dy + dz * dz + kSoft2);
      ax += w * dx, ay += w * dy, az += w * dz;
      qfx[j] -= w * dx, qfy[j] -= w * dy, qfz[j] -= w * dz;
    }
    P.fx[i] += ax, P.fy[i] += ay, P.fz[i] += az;
  }
}

// Diagonal task: the (s² − s)/2 pairs i < j inside one block.
template <bool Heavy> void interact_self(const BodyBlock &P) {
  double *__restrict fx = P.fx, *__restrict fy = P.fy, *__restrict fz = P.fz;
  for (std::int64_t i = 0; i < P.len; ++i) {
    const double xi = P.x[i], yi = P.y[i], zi = P.z[i], mi = P.m[i];
    double ax = 0, ay = 0, az = 0;
    for (std::int64_t j = i + 1; j < P.len; ++j) {
      const double dx = P.x[j] - xi, dy = P.y[j] - yi, dz = P.z[j] - zi;
      const double w = mi * P.m[j] * pair_weight<Heavy>(dx * dx + dy * dy + dz * dz + kSoft2);
      ax += w * dx, ay += w * dy, az += w * dz;
      fx[j] -= w * dx, fy[j] -= w * dy, fz[j] -= w * dz;
    }
    fx[i] += ax, fy[i] += ay, fz[i] += az;
  }
}

// The block pairs I < J in round-robin (circle method) order: B − 1 rounds (B even; B odd adds a
// dummy block and has B rounds) of pairs that touch disjoint blocks. OpenMP orders inout
// dependences on one block by task creation, so the creation order shapes the task graph: in
// row-major order (0,1), (0,2), … every task of row 0 waits for the one before it and the first
// B − 1 tasks run one at a time; in round order the tasks of a round are independent, which is
// the model's "half of the off-diagonal tasks can run at once" (§4.3) as far as T ≤ B/2.
std::vector<std::pair<std::int64_t, std::int64_t>> round_robin_pairs(std::int64_t B) {
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  out.reserve(static_cast<std::size_t>(B * (B - 1) / 2));
  const std::int64_t E = B % 2 ? B + 1 : B; // with the dummy block B when B is odd
  if (E < 2)
    return out;
  const std::int64_t R = E - 1; // rounds; block E − 1 stays fixed, the others rotate
  for (std::int64_t r = 0; r < R; ++r) {
    auto add = [&](std::int64_t i, std::int64_t j) {
      if (i < B && j < B)
        out.emplace_back(std::min(i, j), std::max(i, j));
    };
    add(r, E - 1);
    for (std::int64_t k = 1; k < E / 2; ++k)
      add((r + k) % R, (r - k + R) % R);
  }
  return out;
}

template <bool Heavy> RunResult run_nbody_impl(std::int64_t n, std::int64_t s, int threads) {
  Bodies b(n);
  const std::int64_t B = blocks(n, s);
  std::vector<char> dep(static_cast<std::size_t>(B)); // one dependence address per block
  char *d = dep.data();
  // Tasks see the bodies through a pointer (a variable named in a task and not shared in the
  // enclosing context would be copied into it: firstprivate by default).
  Bodies *bp = &b;
  std::int64_t tasks = 0;
  RunResult r;
  r.seconds = timed_region(threads, [&] {
    for (std::int64_t I = 0; I < B; ++I) {
      ++tasks;
#pragma omp task firstprivate(I, bp) depend(inout : d[I])
      interact_self<Heavy>(block_of(*bp, I * s, extent(n, s, I)));
    }
    for (const auto &pair : round_robin_pairs(B)) {
      const std::int64_t I = pair.first, J = pair.second;
      ++tasks;
#pragma omp task firstprivate(I, J, bp) depend(inout : d[I], d[J])
      interact_pair<Heavy>(block_of(*bp, I * s, extent(n, s, I)),
                           block_of(*bp, J * s, extent(n, s, J)));
    }
  });
  r.checksum = b.checksum();
  r.tasks = tasks;
  return r;
}

// Serial reference: for every i the sum over all j ≠ i, without the symmetry.
template <bool Heavy> double reference_nbody_impl(std::int64_t n) {
  Bodies b(n);
  for (std::int64_t i = 0; i < n; ++i) {
    const auto I = static_cast<std::size_t>(i);
    double ax = 0, ay = 0, az = 0;
    for (std::int64_t j = 0; j < n; ++j) {
      if (j == i)
        continue;
      const auto J = static_cast<std::size_t>(j);
      const double dx = b.x[J] - b.x[I], dy = b.y[J] - b.y[I], dz = b.z[J] - b.z[I];
      const double w = b.m[I] * b.m[J] * pair_weight<Heavy>(dx * dx + dy * dy + dz * dz + kSoft2);
      ax += w * dx, ay += w * dy, az += w * dz;
    }
    b.fx[I] = ax, b.fy[I] = ay, b.fz[I] = az;
  }
  return b.checksum();
}

// --- Cholesky ----------------------------------------------------------------------------------

// The SPD matrix: symmetric off-diagonal entries in (−1, 1) and n on the diagonal (strictly
// diagonally dominant, so SPD), column-major.
std::vector<double> spd_matrix(std::int64_t n) {
  std::vector<double> a(static_cast<std::size_t>(n * n));
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = j; i < n; ++i) {
      const double v = i == j ? static_cast<double>(n)
                              : uniform(kSeedSpd, static_cast<std::uint64_t>(i * n + j));
      a[static_cast<std::size_t>(i + j * n)] = v;
      a[static_cast<std::size_t>(j + i * n)] = v;
    }
  return a;
}

double lower_abs_sum(const std::vector<double> &a, std::int64_t n) {
  double s = 0;
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = j; i < n; ++i)
      s += std::abs(a[static_cast<std::size_t>(i + j * n)]);
  return s;
}

RunResult run_cholesky(std::int64_t n, std::int64_t s, int threads) {
  std::vector<double> a = spd_matrix(n);
  const std::int64_t B = blocks(n, s);
  std::vector<char> dep(static_cast<std::size_t>(B * B)); // dependence address of block (I, J)
  char *d = dep.data();
  double *A = a.data();
  const int ld = static_cast<int>(n);
  auto blk = [&](std::int64_t I, std::int64_t J) { return A + I * s + J * s * n; };
  std::int64_t tasks = 0;
  int failed = 0; // a potrf info ≠ 0 (not SPD: cannot happen for spd_matrix)
  int *failed_p = &failed;
  bsm::BlasThreads one(1);
  RunResult r;
  // Right-looking: at step K factor the diagonal block, solve the column below it, and update the
  // trailing lower triangle (syrk on diagonal blocks, gemm below them).
  r.seconds = timed_region(threads, [&] {
    for (std::int64_t K = 0; K < B; ++K) {
      const int sk = static_cast<int>(extent(n, s, K));
      double *akk = blk(K, K);
      ++tasks;
#pragma omp task firstprivate(K, akk, sk, failed_p) depend(inout : d[K * B + K])
      {
        if (LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, 'L', sk, akk, ld) != 0) {
#pragma omp atomic write
          *failed_p = 1;
        }
      }
      for (std::int64_t I = K + 1; I < B; ++I) {
        const int si = static_cast<int>(extent(n, s, I));
        double *aik = blk(I, K);
        ++tasks;
#pragma omp task firstprivate(I, K, akk, aik, si, sk) depend(in                                    \
                                                             : d[K * B + K])                       \
    depend(inout                                                                                   \
           : d[I * B + K])
        cblas_dtrsm(CblasColMajor, CblasRight, CblasLower, CblasTrans, CblasNonUnit, si, sk, 1.0,
                    akk, ld, aik, ld);
      }
      for (std::int64_t I = K + 1; I < B; ++I) {
        const int si = static_cast<int>(extent(n, s, I));
        double *aik = blk(I, K), *aii = blk(I, I);
        ++tasks;
#pragma omp task firstprivate(I, K, aik, aii, si, sk) depend(in                                    \
                                                             : d[I * B + K])                       \
    depend(inout                                                                                   \
           : d[I * B + I])
        cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, si, sk, -1.0, aik, ld, 1.0, aii, ld);
        for (std::int64_t J = K + 1; J < I; ++J) {
          const int sj = static_cast<int>(extent(n, s, J));
          double *ajk = blk(J, K), *aij = blk(I, J);
          ++tasks;
#pragma omp task firstprivate(I, J, K, aik, ajk, aij, si, sj, sk)                                  \
    depend(in                                                                                      \
           : d[I * B + K], d[J * B + K]) depend(inout                                              \
                                                : d[I * B + J])
          cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, si, sj, sk, -1.0, aik, ld, ajk, ld,
                      1.0, aij, ld);
        }
      }
    }
  });
  if (failed)
    throw Error(ErrorCode::internal, "block Cholesky: potrf found the test matrix not SPD");
  r.checksum = lower_abs_sum(a, n);
  r.tasks = tasks;
  return r;
}

// Serial reference: the unblocked (left-looking, column by column) Cholesky in plain loops.
double reference_cholesky(std::int64_t n) {
  std::vector<double> a = spd_matrix(n);
  auto at = [&](std::int64_t i, std::int64_t j) -> double & {
    return a[static_cast<std::size_t>(i + j * n)];
  };
  for (std::int64_t j = 0; j < n; ++j) {
    double djj = at(j, j);
    for (std::int64_t k = 0; k < j; ++k)
      djj -= at(j, k) * at(j, k);
    if (!(djj > 0))
      throw Error(ErrorCode::internal, "reference Cholesky: the test matrix is not SPD");
    const double ljj = std::sqrt(djj);
    at(j, j) = ljj;
    for (std::int64_t i = j + 1; i < n; ++i) {
      double v = at(i, j);
      for (std::int64_t k = 0; k < j; ++k)
        v -= at(i, k) * at(j, k);
      at(i, j) = v / ljj;
    }
  }
  return lower_abs_sum(a, n);
}

} // namespace

// --- the interface -----------------------------------------------------------------------------

const std::vector<Kind> &all_kinds() {
  static const std::vector<Kind> kinds = [] {
    std::vector<Kind> v;
    for (const auto &[k, nm] : kNames)
      v.push_back(k);
    return v;
  }();
  return kinds;
}

std::string_view name(Kind k) {
  for (const auto &[kk, nm] : kNames)
    if (kk == k)
      return nm;
  throw Error(ErrorCode::invalid_argument,
              fmt::format("unknown task-size problem kind {}", static_cast<int>(k)));
}

Kind parse_kind(std::string_view s) {
  std::string names;
  for (const auto &[k, nm] : kNames) {
    if (nm == s)
      return k;
    names += names.empty() ? "" : ", ";
    names += nm;
  }
  throw Error(ErrorCode::invalid_argument,
              fmt::format("unknown task-size problem '{}' (one of {})", s, names));
}

// The descriptions (B = ⌈n / s⌉; s may be fractional for the model's curves):
//   matmul_few_*  (§4.1.1): M = B² tasks of W = n·s² multiply-adds, concurrency B², P = B².
//   matmul_many_blas:       M = B³ tasks of W = s³, concurrency B² (the B tasks writing one C
//                           block are serialised by their dependences), P = B².
//   nbody_* (§4.1.2, §4.3): diagonal: B tasks of (s² − s)/2 pairs, all concurrent (concurrency
//                           B); off-diagonal: M_off = (B² − B)/2 tasks of s² pairs, each writing
//                           two blocks, so half of them concurrent (M_off / 2); P = M / 2.
//   cholesky (§5):          potrf B tasks of s³/3 flops, trsm and syrk B(B − 1)/2 tasks of s³,
//                           gemm B(B − 1)(B − 2)/6 tasks of 2s³; P = M / B. The model's
//                           assumption for the concurrency of a kind: its tasks per elimination
//                           step on average (steps K = 0 … B − 1 have B − 1 − K trsm and syrk and
//                           (B − 1 − K)(B − 2 − K)/2 gemm tasks, potrf one): (B − 1)/2 for trsm
//                           and syrk, (B − 1)(B − 2)/6 for gemm, 1 for potrf.
std::int64_t default_n(Kind k) {
  switch (k) {
  case Kind::matmul_few_loops:
    return 512;
  case Kind::matmul_few_blas:
  case Kind::matmul_many_blas:
    return 1024;
  case Kind::nbody_light:
    return 8192;
  case Kind::nbody_heavy:
    return 4096;
  case Kind::cholesky:
    return 1536;
  }
  return 1024;
}

Program describe(Kind k, std::int64_t n, double s) {
  check_sizes(n, s);
  const double B = std::ceil(static_cast<double>(n) / s);
  const double N = static_cast<double>(n);
  Program p;
  switch (k) {
  case Kind::matmul_few_loops:
  case Kind::matmul_few_blas:
    p.kinds = {{B * B, N * s * s, B * B}};
    p.parallelism = B * B;
    break;
  case Kind::matmul_many_blas:
    p.kinds = {{B * B * B, s * s * s, B * B}};
    p.parallelism = B * B;
    break;
  case Kind::nbody_light:
  case Kind::nbody_heavy: {
    const double m_off = (B * B - B) / 2;
    p.kinds = {{B, (s * s - s) / 2, B}, {m_off, s * s, m_off / 2}};
    p.parallelism = (B + m_off) / 2;
    break;
  }
  case Kind::cholesky: {
    const double s3 = s * s * s, tri = B * (B - 1) / 2, upd = B * (B - 1) * (B - 2) / 6;
    p.kinds = {{B, s3 / 3, 1},
               {tri, s3, (B - 1) / 2},
               {tri, s3, (B - 1) / 2},
               {upd, 2 * s3, (B - 1) * (B - 2) / 6}};
    p.parallelism = (B + 2 * tri + upd) / B;
    break;
  }
  default:
    name(k); // throws
  }
  return p;
}

double task_work(Kind k, double s) {
  if (!(s >= 1) || !std::isfinite(s))
    throw Error(ErrorCode::invalid_argument,
                fmt::format("block size s = {}: must be ≥ 1 and finite", s));
  if (is_matmul(k))
    return s * s * s;
  if (is_nbody(k))
    return s * s;
  if (k == Kind::cholesky)
    return 2 * s * s * s;
  name(k); // throws
  return 0;
}

// One task of size s on the calling thread, on buffers with leading dimension s_max (so that a
// TaskBench with s_max = n has the strides of the whole run): matmul C += A·B of s × s blocks
// (loops or one dgemm), N-body the off-diagonal interaction of two blocks of s bodies, Cholesky
// the gemm update C −= A·Bᵀ. OpenBLAS runs one thread while a TaskBench exists.
struct TaskBench::Impl {
  Kind kind;
  std::int64_t s_max;
  std::vector<double> a, b, c;
  std::unique_ptr<Bodies> bodies;
  std::unique_ptr<bsm::BlasThreads> one;
};

TaskBench::TaskBench(Kind k, std::int64_t s_max) : impl_(nullptr) {
  check_n(s_max);
  name(k); // validates the kind
  auto impl = std::make_unique<Impl>();
  impl->kind = k;
  impl->s_max = s_max;
  if (is_nbody(k)) {
    impl->bodies = std::make_unique<Bodies>(2 * s_max);
  } else {
    const auto size = static_cast<std::size_t>(s_max * s_max);
    impl->a.resize(size), impl->b.resize(size), impl->c.assign(size, 0.0);
    for (std::size_t i = 0; i < size; ++i) {
      impl->a[i] = uniform(kSeedA, i);
      impl->b[i] = uniform(kSeedB, i);
    }
    impl->one = std::make_unique<bsm::BlasThreads>(1);
  }
  impl_ = impl.release();
}

TaskBench::~TaskBench() {
  delete impl_;
}

void TaskBench::run(std::int64_t s) {
  Impl &m = *impl_;
  if (s < 1 || s > m.s_max)
    throw Error(
        ErrorCode::invalid_argument,
        fmt::format("task size s = {}: must satisfy 1 ≤ s ≤ {} (the bench's s_max)", s, m.s_max));
  const std::int64_t ld = m.s_max;
  switch (m.kind) {
  case Kind::matmul_few_loops:
    product_loops(m.a.data(), m.b.data(), m.c.data(), s, s, s, ld);
    break;
  case Kind::matmul_few_blas:
  case Kind::matmul_many_blas:
    product_blas(m.a.data(), m.b.data(), m.c.data(), s, s, s, ld, 1.0);
    break;
  case Kind::nbody_light:
    interact_pair<false>(block_of(*m.bodies, 0, s), block_of(*m.bodies, m.s_max, s));
    break;
  case Kind::nbody_heavy:
    interact_pair<true>(block_of(*m.bodies, 0, s), block_of(*m.bodies, m.s_max, s));
    break;
  case Kind::cholesky:
    // The values drift with repetition (C −= A·Bᵀ again and again); only the time matters.
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, static_cast<int>(s), static_cast<int>(s),
                static_cast<int>(s), -1.0, m.a.data(), static_cast<int>(ld), m.b.data(),
                static_cast<int>(ld), 1.0, m.c.data(), static_cast<int>(ld));
    break;
  }
}

RunResult run(Kind k, std::int64_t n, std::int64_t s, int threads) {
  check_sizes(n, static_cast<double>(s));
  if (threads < 0)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("threads = {}: must be ≥ 0 (0: OpenMP's default)", threads));
  switch (k) {
  case Kind::matmul_few_loops:
  case Kind::matmul_few_blas:
  case Kind::matmul_many_blas:
    return run_matmul(k, n, s, threads);
  case Kind::nbody_light:
    return run_nbody_impl<false>(n, s, threads);
  case Kind::nbody_heavy:
    return run_nbody_impl<true>(n, s, threads);
  case Kind::cholesky:
    return run_cholesky(n, s, threads);
  }
  name(k); // throws
  return {};
}

double reference_checksum(Kind k, std::int64_t n) {
  check_n(n);
  switch (k) {
  case Kind::matmul_few_loops:
  case Kind::matmul_few_blas:
  case Kind::matmul_many_blas:
    return reference_matmul(n);
  case Kind::nbody_light:
    return reference_nbody_impl<false>(n);
  case Kind::nbody_heavy:
    return reference_nbody_impl<true>(n);
  case Kind::cholesky:
    return reference_cholesky(n);
  }
  name(k); // throws
  return 0;
}

} // namespace ksum::tasksize::problems
