#pragma once
// Dynamic autotuning of the FMM's acceptance parameter θ and tree depth Nlevels, one step per FMM
// call (seed 004 Paper IV §4). The tuner knows nothing of the FMM: it is fed the runtime of each
// call and answers with the parameters for the next one.
//
// How a move is judged (seed 004 Paper IV §4.2.1, §4.3). Runtimes are smoothed as the minimum over
// `window` calls. While settled at parameters p the tuner keeps the last `window` runtimes at p.
// When a move is due it switches to p' (a *trial*) for exactly `window` calls, then compares
//   time_after  = min of the `window` runtimes at p'  with
//   time_before = min of the last `window` runtimes at p before the trial.
// time_after ≤ time_before accepts p' (the paper reverts only when time_i > time_{i−1}); otherwise
// the tuner reverts to p, and the next call runs at p before any new move (Alg. 1-4 return
// p_{i−1}). One move is tried at a time; θ and Nlevels moves are judged independently (§4.2.4).
// When both are due, the kind not tried last goes first, so neither starves the other.
//
// Schemes:
//   off   never moves.
//   at1   (Alg. 1) random walk: each move goes ±1 level or ±theta_step, direction from
//         std::mt19937_64(seed), so runs are reproducible.
//   at2   (Alg. 2) directed walk: each parameter remembers its direction (initially up)
//         and reverses it when a move of that parameter fails (the paper's single 2-d
//         `move` would also turn the other parameter round). θ moves are units × theta_step;
//         a failed θ move advances the Fibonacci W-cycle of Fig. 4.3:
//           if fibcount < fiblength then units = fib(fibcount++)
//           else units = 1, fiblength++, fibcount = 0
//         with fib = 1, 1, 2, 3, 5, … and initially units = 1, fibcount = 0, fiblength = 1.
//         Repeated failures step 1, 1, 1, 1, 1, 1, 1, 1, 2, 1, 1, 1, 2, 3, 1, 1, 1, 2, 3, 5,
//         1, …: the cycles 1 | 1 1 | 1 1 2 | 1 1 2 3 | …, each after a 1.
//   at3a  (Alg. 3) as at2, but a levels move goes the way that evens the CPU/GPU load: up
//         when the call before the move reports cpu_waited_on_gpu = true, down when false.
//         Calls that report no signal (a CPU-only run) leave it equal to at2, as the paper
//         says.
//   at3b  (Alg. 4) at2 for θ; Nlevels moves are scheduled by cost. A failed levels move in
//         direction d (up or down) costs window × (time_after − time_before); the costs
//         accumulate per direction, and the next move in d is tried only once
//           (accumulated cost_d + last cost_d) ≤ cap / 2 × base time,
//         the base time being the summed runtime of all calls outside failed levels trials.
//         The next try, if it costs what the last one did, keeps each direction within
//         cap / 2 and both together within cap of the run. The first move each way is free
//         (nothing is known yet); cap = 0 never moves Nlevels; a large cap tries one
//         whenever no other move is in flight.
//
// Bounds. Moves are clamped to [theta_min, theta_max] and [levels_min, levels_max]. A move that
// clamping turns into no move (the parameter sits on its bound) is not run: the directed schemes
// turn round (without advancing the W-cycle) and at1 takes the other direction; at3a with a load
// signal, or at3b with the other direction not yet due, skips this levels move. The W-cycle's
// length stops growing once its largest step spans the whole θ range (larger steps all clamp to the
// same bound), which keeps every step a distinct, useful move in long runs.
//
// Cost. record() is amortised O(1): O(1) per call plus one O(window) minimum per trial, and each
// trial lasts `window` calls; the move log grows by one entry per trial.
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace ksum {

enum class AutotuneScheme { off, at1, at2, at3a, at3b };
// "off", "at1", "at2", "at3a" or "at3b"; anything else throws Error(invalid_argument).
AutotuneScheme parse_autotune_scheme(std::string_view name);
std::string_view to_string(AutotuneScheme scheme);

struct AutotuneParams {
  double theta = 0.5; // multipole acceptance parameter
  int levels = 1;     // levels of the tree
  friend bool operator==(const AutotuneParams &, const AutotuneParams &) = default;
};

struct AutotuneOptions {
  AutotuneScheme scheme = AutotuneScheme::at3b; // the paper's final scheme (§5)
  double theta_step = 0.01;                     // unit θ move (seed 004 §4.3.1); > 0
  int window = 3; // runtimes are smoothed as the minimum over this many calls (§4.2.1); ≥ 1
  // Calls at settled parameters (outside trials) between the end of one θ trial and the start of
  // the next; ≥ 1. At an optimum every θ trial fails and the W-cycle's long steps cost most: with
  // 10, θ tuning costs about 5 % of the run in a bowl 30 % slower 0.15 off the optimum (seed 004
  // §4.1).
  int theta_interval = 10;
  // The same for Nlevels moves (at1, at2, at3a; at3b schedules them by cost); ≥ 1. A levels move
  // changes the runtime by a large factor either way (seed 004 eqs. 4.3-4.5), so it comes rarely.
  int levels_interval = 20;
  double cap = 0.1; // at3b: largest fraction of the runtime spent on failed Nlevels moves; ≥ 0
  double theta_min = 0.25, theta_max = 0.8; // 0 < theta_min < theta_max
  int levels_min = 1, levels_max = 12;      // 1 ≤ levels_min ≤ levels_max
  std::uint64_t seed = 1;                   // at1's random directions
};

// One tried move, logged when it is decided.
struct AutotuneMove {
  std::int64_t call;              // index (from 0) of the first call that ran the new parameters
  char kind;                      // 't' θ move, 'l' levels move
  AutotuneParams from, to;        // settled parameters and the trial's
  double time_before, time_after; // smoothed runtimes compared
  bool accepted;                  // time_after ≤ time_before
};

class Autotuner {
public:
  // Throws Error(invalid_argument) naming the field and value for a bad option or an initial point
  // outside the bounds.
  Autotuner(AutotuneOptions options, AutotuneParams initial);

  AutotuneParams current() const { return current_; } // parameters for the next call
  // The last accepted parameters: current() outside a trial, the point a trial is judged against.
  AutotuneParams settled() const { return settled_; }

  // Reports the runtime (seconds, finite, ≥ 0) of the call just made with current() and returns
  // the parameters for the next call. cpu_waited_on_gpu is at3a's load-balance signal: true when
  // the CPU finished its part before the GPU (more levels move near-field work from the GPU to the
  // CPU's far field), false when the GPU finished first; leave it empty without a GPU. Throws
  // Error(non_finite) for NaN or Inf and Error(invalid_argument) for a negative time, leaving the
  // tuner unchanged.
  AutotuneParams record(double seconds, std::optional<bool> cpu_waited_on_gpu = std::nullopt);

  const std::vector<AutotuneMove> &log() const { return log_; }
  // "call,kind,theta_from,levels_from,theta_to,levels_to,time_before,time_after,accepted" and one
  // row per move (kind t or l, accepted 1 or 0), numbers in shortest round-trip form.
  std::string log_csv() const;

  const AutotuneOptions &options() const { return opt_; }
  std::int64_t calls() const { return calls_; } // calls recorded so far
  bool in_trial() const { return trial_; }      // current() is a move under trial
  // The θ step, in units of theta_step, of the next θ move of at2/at3a/at3b (the W-cycle's state).
  std::int64_t theta_step_units() const { return theta_units_; }
  // Accumulated cost of failed levels moves up (direction +1) or down (−1), in seconds, and the
  // base time (at3b schedules its levels moves by these; the other schemes only report them).
  double levels_cost(int direction) const { return cost_[direction > 0 ? 1 : 0]; }
  double base_time() const { return base_time_; }

private:
  bool levels_due(int direction) const;
  bool start_move(char kind);
  void begin_trial(char kind, int direction, AutotuneParams to);
  bool decide(); // ends the trial; true when the move is accepted
  void advance_wcycle();

  AutotuneOptions opt_;
  AutotuneParams current_, settled_;
  std::int64_t calls_ = 0;
  // The last `window` runtimes at the settled parameters (a ring) and the running trial's.
  std::vector<double> ring_, trial_times_;
  int ring_count_ = 0, ring_head_ = 0;
  bool trial_ = false;
  char trial_kind_ = 't';
  int trial_dir_ = 1, trial_count_ = 0;
  std::int64_t trial_call_ = 0;
  double time_before_ = 0;
  // Settled calls since the last θ / levels decision; which kind was tried last.
  std::int64_t theta_wait_ = 0, levels_wait_ = 0;
  char last_kind_ = 'l';
  int theta_dir_ = 1, levels_dir_ = 1;
  // Fibonacci W-cycle (Alg. 2): units of the next θ move, fib(fibcount) and fib(fibcount + 1).
  std::int64_t theta_units_ = 1, fib_count_ = 0, fib_length_ = 1, fib_a_ = 1, fib_b_ = 1;
  std::int64_t fib_peak_ = 1;   // the largest step of the cycle under way
  std::int64_t theta_span_ = 1; // θ range in units of theta_step, rounded up
  std::optional<bool> signal_;
  double base_time_ = 0, cost_[2] = {0, 0}, last_cost_[2] = {0, 0}; // index 0 down, 1 up
  std::mt19937_64 rng_;
  std::vector<AutotuneMove> log_;
};

} // namespace ksum
