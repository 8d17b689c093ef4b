#pragma once
// The task-size model of seed 004 Paper II (Holm et al., "A simple model for tuning tasks",
// §4.1–4.3): the runtime of a task-parallel program at block (task) size S is predicted as
//
//   R(S) = ( O · M(N, S) + C · Σ_k W_k(N, S) · M_k(N, S) ) / P(T, M)                    (§4.1)
//
// with O the task system's overhead per task, C the cost of one work unit, M_k the number of tasks
// of kind k (M = Σ_k M_k) and W_k the work units of each, and P the effective parallelism on T
// threads. The paper refines it twice:
//   • variable work-unit cost (§4.2): C = C(S), measured (here: a few single-task runs) and
//     interpolated; WorkCost below, piecewise linear in (log S, log C);
//   • available parallelism by task kind (§4.3): each kind k has P_k = min(T, concurrency_k)
//     (how many of its tasks can run at once: N-body diagonal tasks all, off-diagonal ones half),
//     Ns_k = ⌈M_k / P_k⌉ serial steps, Ns = Σ_k Ns_k, and P = Σ_k (Ns_k / Ns) · P_k.
// The basic model takes the program's single P(T, M) = min(T, Program::parallelism) and a
// constant C. The best size is the candidate with the smallest predicted R.
//
// Calibration (tasksize_calibrate): O is measured on the running machine with the task system the
// project uses (OpenMP tasks: one thread creates K tasks of a little arithmetic each inside a
// parallel region, the team runs them, O = (t − t_same work as a dynamic loop) · T / K, the
// minima of several runs; O(w) the same at several works per task), C(S) by timing
// one task of each size on one thread. A measurement that comes out non-positive, non-finite or
// unstable falls back to a documented default (Calibration::fallback says which).
//
// The cache (load_or_calibrate): one JSON file, by default $KSUM_CACHE_DIR/tasksize.json, else
// $XDG_CACHE_HOME/ksum/tasksize.json, else ~/.cache/ksum/tasksize.json, holding one calibration per
// (machine, threads) key; a missing, unreadable or corrupt file is rebuilt.
#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace ksum::tasksize {

// One kind of task at a given block size: how many there are (M_k), the work units of each
// (W_k), and how many of them can run at the same time (concurrency_k, before the min with T).
struct TaskKind {
  double count = 0;
  double work = 0;
  double concurrency = 0;
};

// The program at one block size: its task kinds and the basic model's parallelism P(T, M) (before
// the min with T; 0: the sum of the kinds' concurrencies).
struct Program {
  std::vector<TaskKind> kinds;
  double parallelism = 0;
};

// The user's description of the algorithm: the program at block size S (N is captured).
using Describe = std::function<Program(double size)>;

// C(S), seconds per work unit: a constant, or measured points interpolated linearly in
// (log S, log C) and held constant beyond the first and last point.
class WorkCost {
public:
  WorkCost() = default;
  explicit WorkCost(double constant); // > 0 and finite
  // A measured point; size > 0, seconds_per_unit > 0 and finite (else Error invalid_argument).
  void add(double size, double seconds_per_unit);
  double operator()(double size) const; // Error if empty
  bool empty() const { return points_.empty(); }
  const std::vector<std::pair<double, double>> &points() const { return points_; }

private:
  std::vector<std::pair<double, double>> points_; // sorted by size
};

enum class ParallelismModel { basic, by_kind };

struct Model {
  double overhead = 1e-6; // O, seconds per task (> 0)
  int threads = 1;        // T (≥ 1)
  WorkCost cost;          // C(S); a single point is a constant C
  ParallelismModel parallelism = ParallelismModel::by_kind;
  // An extension of the paper's model (0: the paper's): on T > 1 threads the run ends with the
  // last task, and a thread slowed by anything else (another process, a frequency change) finishes
  // up to one task late; `tail` · C(S) · max_k W_k is added for it. The paper's threads are equally
  // fast, so its optimum is often exactly T tasks, which a busy machine punishes (measured in
  // docs/tasksize.md); ksum's methods use 0.5.
  double tail = 0;
  // A second extension (empty: the paper's constant O): O as a function of the work of one task
  // in seconds, C(S) · W_k, interpolated like C(S) (x = seconds of work per task, y = O). On many
  // threads short tasks leave the team idle and contending for the task queue, and each then
  // costs far more than a long one (measured: docs/tasksize.md); each kind k pays O(C · W_k).
  WorkCost overhead_by_work;
};

// The effective parallelism of §4.1 (basic) or §4.3 (by_kind) on T threads; ≥ 1 when any task
// exists.
double effective_parallelism(const Program &p, int threads, ParallelismModel model);
// R(S) for the program at size S. Errors: a negative count or work, a non-finite term.
double predict_runtime(const Model &m, const Program &p, double size);

struct Curve {
  std::vector<double> sizes, runtime; // predicted seconds at each candidate size
  double best_size = 0, best_runtime = 0;
};
// R over the candidate sizes (each > 0), and the best of them (the smallest on ties).
Curve predict(const Model &m, const Describe &describe, const std::vector<double> &sizes);

// Candidate sizes: powers of two from lo to hi (both included when they are powers of two).
std::vector<double> powers_of_two(double lo, double hi);

// --- calibration -----------------------------------------------------------------------------

struct Calibration {
  std::string machine; // CPU model and core count (the cache key with threads)
  int threads = 1;
  double overhead = 0;       // O, seconds per task
  double loop_overhead = 0;  // O of one chunk of an OpenMP schedule(dynamic) loop (0: not measured)
  WorkCost overhead_by_work; // O(seconds of work per task) of OpenMP tasks (empty: not measured)
  std::map<std::string, WorkCost> costs; // C(S) per kernel name
  std::vector<std::string> fallback;     // what fell back to a default, and why
  double seconds = 0;                    // the calibration's own run time
};

// The defaults used when a measurement fails: O = 1 µs per task, and a kernel's C(S) = its
// median over the sizes that did measure (or 1 ns per unit when none did).
inline constexpr double kDefaultOverhead = 1e-6;
inline constexpr double kDefaultWorkCost = 1e-9;

// O of OpenMP tasks on `threads` threads (0: OpenMP's default): one thread creates `tasks` tasks
// of max(10 µs, 2 µs · T) of arithmetic each, with an `inout` dependence (4T chains: task k
// follows task k − 4T), and the team runs them; the same work as a dynamic loop of 8 chunks per
// thread is the baseline,
// O = (t_tasks − t_loop) · T / tasks, the minima of `repeats` runs. Where that is not positive
// (below the noise: one thread), empty tasks without dependences measure it (their region's time
// less an empty region's, · T / tasks; on many threads these measure the team's contention for
// the queue instead: 73 µs per task on 16 threads of a Xeon host). Returns a value > 0, or
// kDefaultOverhead with *why set when neither is.
double measure_task_overhead(int threads, std::int64_t tasks = 4000, int repeats = 7,
                             std::string *why = nullptr);

// O of OpenMP tasks as a function of each task's work (Model::overhead_by_work): for w = 1, 4,
// 16, 64, 256 µs of arithmetic per task, K = clamp(0.02 s · T / w, 8T, 20000) tasks created by one
// thread with `inout` dependences (4T chains) against the same work as a dynamic loop of 8
// chunks per thread, O(w) = (t_tasks − t_loop) · T / K, the minima of `repeats` runs. A point
// that is not positive (below the noise) is left out and said in *fallback; none: empty.
WorkCost measure_task_overhead_curve(int threads, int repeats = 5,
                                     std::vector<std::string> *fallback = nullptr);

// O of one chunk of an OpenMP `for schedule(dynamic, 1)` loop (the CPU direct sum's tasks),
// from empty iterations: (t − t_empty region) · min(T, chunks) / chunks, the minima of `repeats`
// runs.
double measure_loop_overhead(int threads, std::int64_t chunks = 20000, int repeats = 7,
                             std::string *why = nullptr);

// C(S) of a kernel from single-thread runs of one task of each size: kernel(S) runs one task,
// work(S) its work units. Each size is timed for at least min_seconds (repeating the task) and
// the median of `repeats` such timings is taken.
WorkCost measure_work_cost(const std::function<void(double size)> &kernel,
                           const std::function<double(double size)> &work,
                           const std::vector<double> &sizes, int repeats = 3,
                           double min_seconds = 2e-3, std::vector<std::string> *fallback = nullptr,
                           const std::string &name = "kernel");

// A description of this machine: the CPU model name and the number of hardware threads.
std::string machine_description();

// The cache file: $KSUM_CACHE_DIR/tasksize.json, else $XDG_CACHE_HOME/ksum/tasksize.json, else
// $HOME/.cache/ksum/tasksize.json (else ./tasksize.json).
std::filesystem::path default_cache_path();

// The calibration stored for (machine, threads) in `path`, if the file holds a valid one.
// A corrupt or unreadable file gives false and *why (never an exception).
bool load_calibration(const std::filesystem::path &path, const std::string &machine, int threads,
                      Calibration &out, std::string *why = nullptr);
// Writes `c` into `path` under its key, keeping the other keys of a valid file (a corrupt file is
// replaced). Creates the directory. Error io on failure.
void save_calibration(const std::filesystem::path &path, const Calibration &c);

// Whether the task or loop overhead of `c` is a fallback default (Calibration::fallback says so):
// such a calibration is used, but not written to the cache.
bool overhead_fell_back(const Calibration &c);

// The calibration from the cache, or a fresh one (measured by `calibrate`) written back. *rebuilt
// tells which, *why why the cache was not used.
Calibration load_or_calibrate(const std::filesystem::path &path, int threads,
                              const std::function<Calibration(int threads)> &calibrate,
                              bool *rebuilt = nullptr, std::string *why = nullptr);

// --- ksum's own methods ------------------------------------------------------------------------

// The CPU direct sum (DirectOptions::cpu_block): targets per task for m targets and n sources on
// `threads` threads (0: OpenMP's default), chosen by the model from the calibration cached for
// this machine and thread count (`ksum tune` writes it: its loop overhead and the C(S) of kernel
// "direct_cpu"); the model's tasks are the ⌈m / S⌉ target blocks of S · n pairs, all concurrent,
// with Model::tail = 0.5.
// Candidates: powers of two from 8 to m and ⌈m / (k T)⌉ for k = 1, 2, 4, …, 64. Without a usable
// cache (or with KSUM_TASKSIZE=off in the environment) the fixed default kDirectCpuBlock. The
// cache file is read once per process and thread count.
inline constexpr std::int64_t kDirectCpuBlock = 32;
// C(S) of the CPU direct sum (the cache's kernel "direct_cpu"): one task, a block of S targets
// against 2048 sources (Laplace, 3D, double, one thread) for S = 8 … 4096; a unit is one pair.
WorkCost measure_direct_cpu_cost(std::vector<std::string> *fallback = nullptr);
std::int64_t direct_cpu_block(std::int64_t m, std::int64_t n, int threads);
// The same from a given calibration (no file), for benches and tests.
std::int64_t direct_cpu_block(std::int64_t m, std::int64_t n, const Calibration &c);

// A loop of `items` independent items costing about `seconds_per_item` each, run as an OpenMP
// schedule(dynamic, S) loop on `threads` threads (0: OpenMP's default): the S the model chooses
// (the basic model with the calibrated loop-chunk overhead O of the cache for this machine and
// thread count, constant C = seconds_per_item, every chunk concurrent, Model::tail = 0.5; the
// candidates are powers of two from 1 to items and ⌈items / (k T)⌉ for k = 1, 2, 4, …, 64). Without
// a cache O is kDefaultOverhead; with KSUM_TASKSIZE=off in the environment, or a cost that is not
// positive and finite, `fallback`. Used by the PUM evaluation (PumOptions::eval_chunk).
std::int64_t dynamic_chunk(std::int64_t items, double seconds_per_item, int threads,
                           std::int64_t fallback);
// The chunk of a loop that a plan runs again and again (the 3D FMM's near pass, the FGT's
// evaluation loop, the 2D FMM's near field): `fallback` until a run was recorded, then the model
// from the per-item costs the runs measured (seconds × threads / items, the least seen at each
// chunk size). With one size measured the cost is constant (dynamic_chunk); when the model then
// picks that same size, the next run probes 4× it (if that still gives ≥ 2 chunks per thread), so
// that C(S) is known at two sizes; from two sizes on the model uses C(S) interpolated (§4.2,
// online: where neighbouring items share data, as the FGT's target boxes share source boxes, C
// falls with S); the size chosen from the first two sizes is then kept (settled) until reset()
// or another item count. A size given by the user (> 0) wins; one thread or KSUM_TASKSIZE=off
// gives `fallback`.
class LearnedChunk {
public:
  explicit LearnedChunk(std::int64_t fallback) : fallback_(fallback) {}
  std::int64_t choose(int threads, std::int64_t forced) const;
  // A run of `items` items in chunks of `chunk` on `threads` threads took `seconds`.
  void record(std::int64_t items, int threads, double seconds, std::int64_t chunk);
  void reset() { // a new tree or plan: measure again
    items_ = 0;
    settled_ = 0;
    cost_.clear();
  }
  const std::map<std::int64_t, double> &costs() const { return cost_; }

private:
  std::int64_t model_choice(int threads) const;
  std::int64_t fallback_, items_ = 0, settled_ = 0;
  int settled_threads_ = 0;
  std::map<std::int64_t, double> cost_; // chunk → the least seconds per item seen
};
// The same from a given loop overhead (seconds per chunk, no cache), for benches and tests. (A
// name of its own: an overload on fallback vs overhead would turn on an integer vs a double.)
std::int64_t dynamic_chunk_with_overhead(std::int64_t items, double seconds_per_item, int threads,
                                         double loop_overhead);
// The same with a per-item cost C(S) that depends on the chunk size S.
std::int64_t dynamic_chunk_with_cost(std::int64_t items, const WorkCost &cost, int threads,
                                     double loop_overhead);

// A pass over a complete tree of `levels` levels (level l holds branching^l boxes) that runs the
// boxes above a task level t one after the other and then one task per box of level t, each task
// its box's whole subtree (the 2D FMM's downward pass: M2L, L2L and L2P). The model sees two
// phases one after the other: the B_above(t) = Σ_{l<t} b^l boxes on one thread, then b^t tasks of
// B_below(t) / b^t boxes each, all concurrent (schedule(dynamic, 1), the loop-chunk overhead O,
// Model::tail = 0.5), C = seconds_per_box:
//   R(t) = C · B_above(t) + R_model(b^t tasks of B_below(t) / b^t units on T threads).
// Returns the t in [0, levels − 1] of the smallest R (the shallowest on ties).
int subtree_task_level_with_overhead(int levels, int branching, double seconds_per_box, int threads,
                                     double loop_overhead);
// The predicted R(t) of the above (for benches and tests).
double subtree_pass_runtime(int levels, int branching, int level, double seconds_per_box,
                            int threads, double loop_overhead);
// The task level a plan that runs the pass again and again uses (the 2D FMM): `fallback` until a
// run was recorded, then the model's level from the cost per box that run measured (its seconds
// over B_above(t) + B_below(t) / min(T, b^t), t the level it ran with) and the cached loop overhead
// (kDefaultOverhead without a cache). A level given by the user (≥ 0) wins; KSUM_TASKSIZE=off in
// the environment gives `fallback`; one thread gives 0 (one task). A forced or fallback level
// beyond the tree is clamped to its last level.
// The cost per box is the least of the runs recorded; from the second run on the level chosen is
// kept (for the same tree and thread count) until reset().
class LearnedLevel {
public:
  int choose(int levels, int branching, int threads, int forced, int fallback) const;
  void record(int levels, int branching, int level, int threads, double seconds);
  void reset() {
    cost_ = 0;
    records_ = 0;
    settled_ = 0;
  }
  double seconds_per_box() const { return cost_; }

private:
  double cost_ = 0;
  int records_ = 0, settled_ = 0;
  std::array<int, 3> settled_for_{}; // levels, branching, threads of settled_
};

} // namespace ksum::tasksize
