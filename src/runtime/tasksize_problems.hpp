#pragma once
// The test problems of seed 004 Paper II (§3, §4.1.1, §4.1.2, §5) with OpenMP tasks: dense matrix
// multiplication with few (one task per output block) or many (one task per block product, tasks
// of one output block serialised by dependences) tasks, as hand-written loops or BLAS calls; the
// all-pairs N-body interaction with a light or a heavy kernel (block-block tasks, symmetric: the
// off-diagonal tasks write two blocks); and the evaluation problem, block Cholesky (potrf, trsm,
// syrk, gemm tasks with dependences). Each problem has the paper's description (M, W, P for the
// model of include/ksum/tasksize.hpp), one task of size S for measuring C(S), and the whole run.
#include <ksum/tasksize.hpp>

#include <cstdint>
#include <string_view>
#include <vector>

namespace ksum::tasksize::problems {

enum class Kind {
  matmul_few_loops, // C = A·B, one task per output block, nested loops (§3.1's "few tasks")
  matmul_few_blas,  // the same with one dgemm per block product (one BLAS thread per task)
  matmul_many_blas, // one task per block product, depend(inout) on its output block
  nbody_light,      // all-pairs forces, 1/r² kernel: work unit = one pair interaction
  nbody_heavy,      // the same with a kernel about 10× heavier (the paper's two- vs three-body)
  cholesky          // block Cholesky of an SPD matrix (the paper's evaluation problem, §5)
};

const std::vector<Kind> &all_kinds();
std::string_view name(Kind k);     // "matmul_few_loops", …
Kind parse_kind(std::string_view); // Error(invalid_argument) naming the accepted names

// The problem size the benchmark and `ksum tune --plot` use by default: a sweep of block sizes
// takes seconds on two cores (matmul loops 512, BLAS matmuls 1024, N-body 8192 / 4096 (heavy),
// Cholesky 1536).
std::int64_t default_n(Kind k);

// The paper's description at problem size n and block size s: task kinds with their counts M_k,
// work units W_k and concurrencies (see the .cpp for each problem's formulas), and the basic
// model's P. B = ⌈n / s⌉.
Program describe(Kind k, std::int64_t n, double s);

// Work units of one task of size s (of the kind whose cost C(S) is measured: the block product
// for matmul, an off-diagonal block pair for N-body, a gemm update for Cholesky).
double task_work(Kind k, double s);

// State for running single tasks of size up to s_max on the calling thread (allocated once).
class TaskBench {
public:
  TaskBench(Kind k, std::int64_t s_max);
  ~TaskBench();
  TaskBench(const TaskBench &) = delete;
  TaskBench &operator=(const TaskBench &) = delete;
  void run(std::int64_t s); // one task of size s ≤ s_max
private:
  struct Impl;
  Impl *impl_;
};

// The whole problem of size n with block size s (1 ≤ s ≤ n) on `threads` threads (0: OpenMP's
// default): seconds of the task-parallel part (set-up excluded), and a checksum of the result
// (the same for every s up to rounding; the tests compare it with a serial reference).
struct RunResult {
  double seconds = 0;
  double checksum = 0;
  std::int64_t tasks = 0; // tasks created
};
RunResult run(Kind k, std::int64_t n, std::int64_t s, int threads);

// The serial reference checksum of the problem (plain loops, fp64).
double reference_checksum(Kind k, std::int64_t n);

} // namespace ksum::tasksize::problems
