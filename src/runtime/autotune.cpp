// The dynamic autotuner of seed 004 Paper IV §4 (Algorithms 1-4): trial moves in θ and Nlevels,
// judged on window-smoothed runtimes and reverted when slower. The header states the semantics.
#include <ksum/autotune.hpp>
#include <ksum/error.hpp>

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>

namespace ksum {

namespace {

template <class V>
[[noreturn]] void bad_option(std::string_view field, V value, std::string_view rule) {
  throw Error(ErrorCode::invalid_argument,
              fmt::format("autotune: {} = {} is invalid; it must be {}", field, value, rule));
}

void validate(const AutotuneOptions &o, const AutotuneParams &p) {
  if (!(std::isfinite(o.theta_step) && o.theta_step > 0))
    bad_option("theta_step", o.theta_step, "finite and > 0");
  if (o.window < 1)
    bad_option("window", o.window, ">= 1");
  if (o.theta_interval < 1)
    bad_option("theta_interval", o.theta_interval, ">= 1");
  if (o.levels_interval < 1)
    bad_option("levels_interval", o.levels_interval, ">= 1");
  if (!(std::isfinite(o.cap) && o.cap >= 0))
    bad_option("cap", o.cap, "finite and >= 0");
  if (!(std::isfinite(o.theta_min) && o.theta_min > 0))
    bad_option("theta_min", o.theta_min, "finite and > 0");
  if (!(std::isfinite(o.theta_max) && o.theta_max > o.theta_min))
    bad_option("theta_max", o.theta_max, fmt::format("finite and > theta_min = {}", o.theta_min));
  if (o.levels_min < 1)
    bad_option("levels_min", o.levels_min, ">= 1");
  if (o.levels_max < o.levels_min)
    bad_option("levels_max", o.levels_max, fmt::format(">= levels_min = {}", o.levels_min));
  if (!(std::isfinite(p.theta) && p.theta >= o.theta_min && p.theta <= o.theta_max))
    bad_option("initial theta", p.theta,
               fmt::format("within [theta_min, theta_max] = [{}, {}]", o.theta_min, o.theta_max));
  if (p.levels < o.levels_min || p.levels > o.levels_max)
    bad_option(
        "initial levels", p.levels,
        fmt::format("within [levels_min, levels_max] = [{}, {}]", o.levels_min, o.levels_max));
}

bool directed(AutotuneScheme s) {
  return s != AutotuneScheme::at1;
}

} // namespace

AutotuneScheme parse_autotune_scheme(std::string_view name) {
  for (auto s : {AutotuneScheme::off, AutotuneScheme::at1, AutotuneScheme::at2,
                 AutotuneScheme::at3a, AutotuneScheme::at3b})
    if (name == to_string(s))
      return s;
  throw Error(ErrorCode::invalid_argument,
              fmt::format("unknown autotune scheme '{}'; valid: off, at1, at2, at3a, at3b", name));
}

std::string_view to_string(AutotuneScheme scheme) {
  switch (scheme) {
  case AutotuneScheme::off:
    return "off";
  case AutotuneScheme::at1:
    return "at1";
  case AutotuneScheme::at2:
    return "at2";
  case AutotuneScheme::at3a:
    return "at3a";
  case AutotuneScheme::at3b:
    return "at3b";
  }
  return "?";
}

Autotuner::Autotuner(AutotuneOptions options, AutotuneParams initial)
    : opt_(options), current_(initial), settled_(initial), rng_(options.seed) {
  validate(opt_, initial);
  ring_.assign(static_cast<std::size_t>(opt_.window), 0.0);
  trial_times_.assign(static_cast<std::size_t>(opt_.window), 0.0);
  // Steps beyond the θ range all clamp to a bound; 1e15 keeps the Fibonacci numbers in range.
  const double span = std::ceil((opt_.theta_max - opt_.theta_min) / opt_.theta_step);
  theta_span_ = static_cast<std::int64_t>(std::clamp(span, 1.0, 1e15));
}

bool Autotuner::levels_due(int direction) const {
  if (opt_.scheme != AutotuneScheme::at3b)
    return levels_wait_ >= opt_.levels_interval;
  // seed 004 Paper IV Alg. 4: the next try in a direction waits until its accumulated cost plus the
  // expected cost of one more failure (the last one's) fits the cap; each direction gets half of
  // it.
  const int i = direction > 0 ? 1 : 0;
  return opt_.cap > 0 && cost_[i] + last_cost_[i] <= 0.5 * opt_.cap * base_time_;
}

void Autotuner::advance_wcycle() {
  // seed 004 Paper IV Alg. 2 and Fig. 4.3: Fibonacci steps in a cycle that grows by one each time
  // it completes, and restarts at fib(0) (the printed pseudocode leaves out fibcount = 0).
  if (fib_count_ < fib_length_) {
    theta_units_ = fib_peak_ = fib_a_;
    ++fib_count_;
    const std::int64_t next = fib_a_ + fib_b_;
    fib_a_ = fib_b_;
    fib_b_ = next;
  } else {
    theta_units_ = 1;
    if (fib_peak_ < theta_span_) // a longer cycle would only repeat the full-range step
      ++fib_length_;
    fib_count_ = 0;
    fib_a_ = fib_b_ = 1;
  }
}

void Autotuner::begin_trial(char kind, int direction, AutotuneParams to) {
  time_before_ = *std::min_element(ring_.begin(), ring_.end());
  trial_ = true;
  trial_kind_ = kind;
  trial_dir_ = direction;
  trial_count_ = 0;
  trial_call_ = calls_;
  last_kind_ = kind;
  current_ = to;
}

bool Autotuner::start_move(char kind) {
  const bool at1 = opt_.scheme == AutotuneScheme::at1;
  if (kind == 't') {
    // seed 004 Paper IV Alg. 1: ±theta_step at random; Alg. 2: the remembered direction times
    // the W-cycle's step.
    const std::int64_t units = at1 ? 1 : theta_units_;
    int dir = at1 ? ((rng_() & 1) ? 1 : -1) : theta_dir_;
    auto target = [&](int d) {
      return std::clamp(settled_.theta + static_cast<double>(d * units) * opt_.theta_step,
                        opt_.theta_min, opt_.theta_max);
    };
    double to = target(dir);
    if (to == settled_.theta) { // on the bound: turn round
      dir = -dir;
      if (!at1)
        theta_dir_ = dir;
      to = target(dir);
    }
    if (to == settled_.theta) {
      theta_wait_ = 0;
      return false;
    }
    begin_trial('t', dir, {to, settled_.levels});
    return true;
  }

  const int levels = settled_.levels;
  auto feasible = [&](int d) {
    return levels + d >= opt_.levels_min && levels + d <= opt_.levels_max;
  };
  int dir = 0;
  if (at1) {
    dir = (rng_() & 1) ? 1 : -1;
    if (!feasible(dir))
      dir = -dir;
  } else if (opt_.scheme == AutotuneScheme::at3a && signal_) {
    dir = *signal_ ? 1 : -1; // seed 004 Paper IV Alg. 3: towards load balance, never turned round
  } else if (opt_.scheme == AutotuneScheme::at3b) {
    // Alg. 4's "[0, ±1] as appropriate": the remembered direction when it is due, else the other.
    for (int d : {levels_dir_, -levels_dir_})
      if (feasible(d) && levels_due(d)) {
        dir = d;
        break;
      }
  } else {
    dir = levels_dir_;
    if (!feasible(dir))
      dir = levels_dir_ = -dir;
  }
  if (dir == 0 || !feasible(dir)) {
    levels_wait_ = 0;
    return false;
  }
  begin_trial('l', dir, {settled_.theta, levels + dir});
  return true;
}

bool Autotuner::decide() {
  const auto n = static_cast<std::size_t>(opt_.window);
  double after = trial_times_[0], sum = 0;
  for (std::size_t k = 0; k < n; ++k) {
    after = std::min(after, trial_times_[k]);
    sum += trial_times_[k];
  }
  // seed 004 Paper IV Alg. 1-4: revert when time_i > time_{i-1}.
  const bool accepted = after <= time_before_;
  log_.push_back({trial_call_, trial_kind_, settled_, current_, time_before_, after, accepted});
  trial_ = false;
  const int dir = accepted ? trial_dir_ : -trial_dir_; // Alg. 2: on failure, move = −move
  if (trial_kind_ == 't') {
    theta_wait_ = 0;
    theta_dir_ = dir;
    if (!accepted && directed(opt_.scheme))
      advance_wcycle();
  } else {
    levels_wait_ = 0;
    levels_dir_ = dir;
    if (!accepted) { // Alg. 4: cost = time_i − time_{i−1}, paid on each call of the trial
      const int i = trial_dir_ > 0 ? 1 : 0;
      last_cost_[i] = static_cast<double>(opt_.window) * (after - time_before_);
      cost_[i] += last_cost_[i];
    }
  }
  // Alg. 4 leaves failing calls out of the base time; we leave out only failed levels trials, so
  // that cap bounds their cost as a fraction of the whole run (failed θ trials are run time too).
  if (accepted || trial_kind_ == 't')
    base_time_ += sum;
  if (accepted) { // the trial's runtimes are the new parameters' window
    settled_ = current_;
    std::swap(ring_, trial_times_);
    ring_head_ = 0;
    ring_count_ = opt_.window;
  } else {
    current_ = settled_;
  }
  return accepted;
}

AutotuneParams Autotuner::record(double seconds, std::optional<bool> cpu_waited_on_gpu) {
  if (!std::isfinite(seconds))
    throw Error(ErrorCode::non_finite,
                fmt::format("Autotuner::record: the runtime of call {} is {}; it must be finite "
                            "and >= 0",
                            calls_, seconds));
  if (seconds < 0)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("Autotuner::record: the runtime of call {} is {}; it must be >= 0",
                            calls_, seconds));
  ++calls_;
  signal_ = cpu_waited_on_gpu;
  if (opt_.scheme == AutotuneScheme::off)
    return current_;

  if (trial_) {
    trial_times_[static_cast<std::size_t>(trial_count_++)] = seconds;
    if (trial_count_ < opt_.window)
      return current_;
    if (!decide())
      return current_; // Alg. 1-4: after a revert the next call runs the old parameters
  } else {
    ring_[static_cast<std::size_t>(ring_head_)] = seconds;
    ring_head_ = (ring_head_ + 1) % opt_.window;
    ring_count_ = std::min(ring_count_ + 1, opt_.window);
    base_time_ += seconds;
    ++theta_wait_;
    ++levels_wait_;
  }
  if (ring_count_ < opt_.window)
    return current_;

  const bool theta_due = theta_wait_ >= opt_.theta_interval;
  const bool levels_any_due = levels_due(1) || levels_due(-1);
  // One move at a time; when both are due, the kind not tried last goes first.
  const char first = last_kind_ == 't' ? 'l' : 't';
  for (char kind : {first, first == 't' ? 'l' : 't'})
    if ((kind == 't' ? theta_due : levels_any_due) && start_move(kind))
      break;
  return current_;
}

std::string Autotuner::log_csv() const {
  std::string out =
      "call,kind,theta_from,levels_from,theta_to,levels_to,time_before,time_after,accepted\n";
  for (const auto &m : log_)
    out += fmt::format("{},{},{},{},{},{},{},{},{}\n", m.call, m.kind, m.from.theta, m.from.levels,
                       m.to.theta, m.to.levels, m.time_before, m.time_after, m.accepted ? 1 : 0);
  return out;
}

} // namespace ksum
