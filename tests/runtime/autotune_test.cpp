// The dynamic autotuner (seed 004 Paper IV §4) on synthetic runtime models with a known optimum:
// no real code is timed, every run is deterministic.
#include "support/expect_error.hpp"

#include <ksum/autotune.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace ksum {
namespace {

using test::expect_error;

// Deterministic pseudo-noise in [0, 1) for call k (splitmix64).
double unit_noise(std::int64_t k) {
  std::uint64_t z = static_cast<std::uint64_t>(k) + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

// seed 004 Paper IV eqs. (4.3)-(4.5): a far-field part ∝ 4^(L−1) and a near-field part
// ∝ 4^(2(1−L)), times a smooth bowl in θ, 30 % slower 0.15 off the optimum (§4.1). With these
// constants the optimum is L = 5; L = 4 and 6 are 4.9 and 2.4 times slower.
struct Bowl {
  double theta_opt = 0.55, curvature = 13, a = 1e-4, b = 838.8608, q = 0.005;
  double operator()(AutotuneParams p) const {
    const double x = std::pow(4.0, p.levels - 1);
    const double d = p.theta - theta_opt;
    return (a * x + b / (x * x) + q) * (1 + curvature * d * d);
  }
};

// The hybrid code of eq. (4.1): max(CPU far field, GPU near field) + Q; the CPU waits on the GPU
// when its part is the shorter one. Balance and optimum lie between L = 4 and 5; L = 5 is fastest.
struct Hybrid {
  double c = 1e-4, g = 838.8608, q = 1e-6, theta_opt = 0.5, curvature = 20;
  double cpu(AutotuneParams p) const { return c * std::pow(4.0, p.levels - 1); }
  double gpu(AutotuneParams p) const { return g * std::pow(16.0, 1 - p.levels); }
  bool cpu_waits(AutotuneParams p) const { return cpu(p) < gpu(p); }
  double operator()(AutotuneParams p) const {
    const double d = p.theta - theta_opt;
    return (std::max(cpu(p), gpu(p)) + q * std::pow(4.0, p.levels - 1)) * (1 + curvature * d * d);
  }
};

struct Trace {
  std::vector<AutotuneParams> params; // per call
  std::vector<double> times;          // per call, as fed
  std::vector<std::optional<bool>> signals;
  double total = 0;
};

using Model = std::function<double(AutotuneParams, std::int64_t)>;
using Signal = std::function<std::optional<bool>(AutotuneParams)>;

// Runs `calls` calls: runtime = model(current) × (1 + noise × u_k).
void drive(Autotuner &tuner, Trace &trace, const Model &model, int calls, double noise = 0,
           const Signal &signal = {}) {
  for (int i = 0; i < calls; ++i) {
    const AutotuneParams p = tuner.current();
    const auto k = static_cast<std::int64_t>(trace.times.size());
    const double t = model(p, k) * (1 + noise * unit_noise(k));
    const std::optional<bool> s = signal ? signal(p) : std::nullopt;
    trace.params.push_back(p);
    trace.times.push_back(t);
    trace.signals.push_back(s);
    trace.total += t;
    tuner.record(t, s);
  }
}

template <class M> Model fixed(M m) {
  return [m](AutotuneParams p, std::int64_t) { return m(p); };
}

int best_levels(const std::function<double(AutotuneParams)> &m, double theta) {
  int best = 1;
  for (int l = 1; l <= 12; ++l)
    if (m({theta, l}) < m({theta, best}))
      best = l;
  return best;
}

AutotuneOptions with_scheme(AutotuneScheme s) {
  AutotuneOptions o;
  o.scheme = s;
  return o;
}

TEST(Autotune, SchemeNames) {
  for (auto s : {AutotuneScheme::off, AutotuneScheme::at1, AutotuneScheme::at2,
                 AutotuneScheme::at3a, AutotuneScheme::at3b})
    EXPECT_EQ(parse_autotune_scheme(to_string(s)), s);
  EXPECT_EQ(to_string(AutotuneScheme::at3b), "at3b");
  expect_error([] { parse_autotune_scheme("at4"); }, ErrorCode::invalid_argument, "'at4'");
  expect_error([] { parse_autotune_scheme("AT2"); }, ErrorCode::invalid_argument,
               "off, at1, at2, at3a, at3b");
}

TEST(Autotune, BadOptionsNameFieldAndValue) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto check = [](std::function<void(AutotuneOptions &, AutotuneParams &)> edit,
                  const std::string &needle) {
    SCOPED_TRACE(needle);
    AutotuneOptions o;
    AutotuneParams p{0.5, 4};
    edit(o, p);
    expect_error([&] { Autotuner(o, p); }, ErrorCode::invalid_argument, needle);
  };
  check([](auto &o, auto &) { o.theta_step = 0; }, "theta_step = 0 ");
  check([](auto &o, auto &) { o.theta_step = -0.01; }, "theta_step = -0.01");
  check([&](auto &o, auto &) { o.theta_step = nan; }, "theta_step = nan");
  check([](auto &o, auto &) { o.window = 0; }, "window = 0");
  check([](auto &o, auto &) { o.theta_interval = 0; }, "theta_interval = 0");
  check([](auto &o, auto &) { o.levels_interval = -3; }, "levels_interval = -3");
  check([](auto &o, auto &) { o.cap = -0.1; }, "cap = -0.1");
  check([&](auto &o, auto &) { o.cap = nan; }, "cap = nan");
  check([](auto &o, auto &) { o.theta_min = 0; }, "theta_min = 0 ");
  check([&](auto &o, auto &) { o.theta_min = nan; }, "theta_min = nan");
  check([](auto &o, auto &p) { o.theta_min = o.theta_max = p.theta = 0.5; },
        "theta_max = 0.5 is invalid; it must be finite and > theta_min = 0.5");
  check([](auto &o, auto &) { o.theta_min = 0.8, o.theta_max = 0.3; }, "theta_max = 0.3");
  check([&](auto &o, auto &) { o.theta_max = nan; }, "theta_max = nan");
  check([](auto &o, auto &) { o.levels_min = 0; }, "levels_min = 0");
  check([](auto &o, auto &) { o.levels_max = 3, o.levels_min = 4; }, "levels_max = 3");
  check([](auto &, auto &p) { p.theta = 0.9; }, "initial theta = 0.9");
  check([&](auto &, auto &p) { p.theta = nan; }, "initial theta = nan");
  check([](auto &, auto &p) { p.levels = 13; }, "initial levels = 13");
  // Boundary values are valid.
  AutotuneOptions o;
  o.window = 1, o.cap = 0, o.theta_interval = o.levels_interval = 1;
  o.levels_min = o.levels_max = 1;
  EXPECT_NO_THROW(Autotuner(o, {o.theta_max, 1}));
}

TEST(Autotune, RecordRejectsBadTimesAndStaysUnchanged) {
  Autotuner t({}, {0.5, 4});
  t.record(1.0);
  expect_error([&] { t.record(std::numeric_limits<double>::quiet_NaN()); }, ErrorCode::non_finite,
               "runtime of call 1 is nan");
  expect_error([&] { t.record(std::numeric_limits<double>::infinity()); }, ErrorCode::non_finite,
               "inf");
  expect_error([&] { t.record(-0.5); }, ErrorCode::invalid_argument, "call 1 is -0.5");
  EXPECT_EQ(t.calls(), 1);
  EXPECT_NO_THROW(t.record(0.0));
  EXPECT_EQ(t.calls(), 2);
}

TEST(Autotune, OffNeverMoves) {
  Autotuner t(with_scheme(AutotuneScheme::off), {0.4, 3});
  Trace tr;
  drive(t, tr, fixed(Bowl{}), 500);
  for (const auto &p : tr.params)
    EXPECT_EQ(p, (AutotuneParams{0.4, 3}));
  EXPECT_TRUE(t.log().empty());
}

struct Start {
  AutotuneScheme scheme;
  AutotuneParams start;
};

class Converges : public testing::TestWithParam<Start> {};

// Every scheme, default options, from a poor start (θ 15-20 steps off, Nlevels 2 off), with
// pseudo-noise: the settled point ends at the optimum and the run is far cheaper than no tuning.
TEST_P(Converges, FromPoorStartToOptimum) {
  const Bowl bowl;
  const int lopt = best_levels(bowl, bowl.theta_opt);
  ASSERT_EQ(lopt, 5);
  const AutotuneOptions o = with_scheme(GetParam().scheme);
  const AutotuneParams start = GetParam().start;
  Autotuner t(o, start);
  Trace tr;
  const int calls = 2000;
  drive(t, tr, fixed(bowl), calls, 1e-3);
  EXPECT_EQ(t.settled().levels, lopt);
  EXPECT_NEAR(t.settled().theta, bowl.theta_opt, 3 * o.theta_step + 1e-9);
  EXPECT_LT(tr.total, 0.2 * calls * bowl(start));
  // Converged, the tuner still tries moves, and here every levels move is 2.4 or 4.9 times slower:
  // at1-at3a try one every levels_interval calls, at3b within its 10 % cap (seed 004 §5.1).
  double tail = 0;
  for (int k = calls / 2; k < calls; ++k)
    tail += tr.times[static_cast<std::size_t>(k)];
  const double bound = GetParam().scheme == AutotuneScheme::at3b ? 1.2 : 1.5;
  EXPECT_LT(tail / (calls / 2), bound * bowl({bowl.theta_opt, lopt}));
}

INSTANTIATE_TEST_SUITE_P(
    Autotune, Converges,
    testing::Values(Start{AutotuneScheme::at1, {0.40, 3}}, Start{AutotuneScheme::at1, {0.75, 7}},
                    Start{AutotuneScheme::at2, {0.40, 3}}, Start{AutotuneScheme::at2, {0.75, 7}},
                    Start{AutotuneScheme::at3a, {0.40, 3}}, Start{AutotuneScheme::at3a, {0.75, 7}},
                    Start{AutotuneScheme::at3b, {0.40, 3}}, Start{AutotuneScheme::at3b, {0.75, 7}}),
    [](const auto &run) {
      return std::string(to_string(run.param.scheme)) + "_theta" +
             std::to_string(static_cast<int>(std::lround(run.param.start.theta * 100))) + "_L" +
             std::to_string(run.param.start.levels);
    });

// seed 004 Paper IV Alg. 1: at1's moves are single steps, in directions from the seed.
TEST(Autotune, At1SingleStepsReproducibleBySeed) {
  auto run = [](std::uint64_t seed) {
    AutotuneOptions o = with_scheme(AutotuneScheme::at1);
    o.seed = seed;
    Autotuner t(o, {0.5, 5});
    Trace tr;
    drive(t, tr, fixed(Bowl{}), 600, 1e-3);
    return t.log();
  };
  const auto a = run(7), b = run(7), c = run(8);
  ASSERT_GT(a.size(), 50u);
  ASSERT_EQ(a.size(), b.size());
  int ups = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].to, b[i].to);
    if (a[i].kind == 't') {
      EXPECT_NEAR(std::abs(a[i].to.theta - a[i].from.theta), 0.01, 1e-12);
      ups += a[i].to.theta > a[i].from.theta;
    } else {
      EXPECT_EQ(std::abs(a[i].to.levels - a[i].from.levels), 1);
    }
  }
  EXPECT_GT(ups, 5); // both directions occur
  bool differ = a.size() != c.size();
  for (std::size_t i = 0; !differ && i < a.size(); ++i)
    differ = !(a[i].to == c[i].to);
  EXPECT_TRUE(differ);
}

// The pseudocode of seed 004 Paper IV Alg. 2, transcribed: the θ step (in units) of each move under
// repeated failure, with the cycle's restart at fib(0) (Fig. 4.3) and, when `span` is given, the
// cycle's length frozen once its largest step reaches the θ range.
std::vector<std::int64_t> wcycle_reference(int moves, std::int64_t span) {
  auto fib = [](std::int64_t k) {
    std::int64_t a = 1, b = 1;
    for (std::int64_t i = 0; i < k; ++i)
      b = std::exchange(a, b) + b;
    return a;
  };
  std::vector<std::int64_t> steps;
  std::int64_t thetastep = 1, fibcount = 0, fiblength = 1;
  for (int i = 0; i < moves; ++i) {
    steps.push_back(thetastep);
    if (fibcount < fiblength) {
      thetastep = fib(fibcount++);
    } else {
      thetastep = 1;
      if (fib(fiblength - 1) < span)
        ++fiblength;
      fibcount = 0;
    }
  }
  return steps;
}

// θ moves under repeated failure (a V-shaped runtime in θ, levels fixed): step sizes follow the
// W-cycle exactly and directions alternate.
TEST(Autotune, FibonacciWCycleUnderRepeatedFailure) {
  for (auto scheme : {AutotuneScheme::at2, AutotuneScheme::at3a, AutotuneScheme::at3b}) {
    SCOPED_TRACE(to_string(scheme));
    AutotuneOptions o = with_scheme(scheme);
    o.theta_step = 1e-4, o.theta_interval = 1; // no step reaches a bound
    o.levels_min = o.levels_max = 4;
    Autotuner t(o, {0.5, 4});
    Trace tr;
    std::vector<std::int64_t> announced;
    for (int i = 0; i < 600; ++i) {
      if (!t.in_trial())
        announced.push_back(t.theta_step_units());
      drive(t, tr, fixed([](AutotuneParams p) { return 1 + 10 * std::abs(p.theta - 0.5); }), 1);
    }
    std::vector<std::int64_t> steps;
    for (std::size_t i = 0; i < t.log().size(); ++i) {
      const auto &m = t.log()[i];
      ASSERT_EQ(m.kind, 't');
      EXPECT_FALSE(m.accepted);
      EXPECT_EQ(m.from, (AutotuneParams{0.5, 4}));
      EXPECT_EQ(m.to.theta > m.from.theta, i % 2 == 0) << "move " << i; // up first, then turn
      steps.push_back(std::llround(std::abs(m.to.theta - m.from.theta) / o.theta_step));
    }
    ASSERT_GT(steps.size(), 100u);
    const std::vector<std::int64_t> prefix{1, 1, 1, 1, 1, 1, 1, 1, 2, 1, 1,
                                           1, 2, 3, 1, 1, 1, 2, 3, 5, 1};
    EXPECT_TRUE(std::equal(prefix.begin(), prefix.end(), steps.begin()));
    EXPECT_EQ(steps, wcycle_reference(static_cast<int>(steps.size()), 5500));
    EXPECT_GE(*std::max_element(steps.begin(), steps.end()), 89); // the cycle keeps growing
  }
}

// On a narrow θ range the cycle stops growing at its first step that spans the range (13 ≥ 10
// units), and steps larger than the room left clamp to exactly the bound.
TEST(Autotune, WCycleBoundedByThetaRange) {
  AutotuneOptions o = with_scheme(AutotuneScheme::at2);
  o.theta_min = 0.45, o.theta_max = 0.55, o.levels_min = o.levels_max = 2, o.theta_interval = 1;
  Autotuner t(o, {0.5, 2});
  Trace tr;
  drive(t, tr, fixed([](AutotuneParams p) { return 1 + std::abs(p.theta - 0.5); }), 4000);
  const auto &log = t.log();
  const auto ref = wcycle_reference(static_cast<int>(log.size()), 10);
  ASSERT_GT(log.size(), 400u);
  EXPECT_EQ(*std::max_element(ref.begin(), ref.end()), 13);
  for (std::size_t i = 0; i < log.size(); ++i) {
    const double want = std::clamp(
        0.5 + (i % 2 == 0 ? 1.0 : -1.0) * 0.01 * static_cast<double>(ref[i]), 0.45, 0.55);
    EXPECT_DOUBLE_EQ(log[i].to.theta, want) << "move " << i;
  }
  EXPECT_LE(t.theta_step_units(), 13);
}

// Parameters never leave the bounds; at the upper corner (the model wants more of both) the
// tuner stays there and its moves all go inwards.
TEST(Autotune, ClampsToBounds) {
  auto beyond = [](AutotuneParams p) { return (2 - p.theta) * (1 + 1.0 / p.levels); };
  for (auto scheme :
       {AutotuneScheme::at1, AutotuneScheme::at2, AutotuneScheme::at3a, AutotuneScheme::at3b}) {
    SCOPED_TRACE(to_string(scheme));
    AutotuneOptions o = with_scheme(scheme);
    o.theta_interval = o.levels_interval = 1;
    o.cap = 1;
    Autotuner t(o, {o.theta_max, o.levels_max});
    Trace tr;
    drive(t, tr, fixed(beyond), 600, 1e-4);
    for (const auto &p : tr.params) {
      ASSERT_GE(p.theta, o.theta_min);
      ASSERT_LE(p.theta, o.theta_max);
      ASSERT_GE(p.levels, o.levels_min);
      ASSERT_LE(p.levels, o.levels_max);
    }
    ASSERT_GT(t.log().size(), 20u);
    for (const auto &m : t.log()) {
      EXPECT_FALSE(m.accepted);
      EXPECT_TRUE(m.to.theta < o.theta_max || m.to.levels < o.levels_max);
    }
    EXPECT_EQ(t.settled(), (AutotuneParams{o.theta_max, o.levels_max}));
  }
  // From the lower corner the directed walk climbs to the upper one, clamping its last θ step.
  AutotuneOptions o = with_scheme(AutotuneScheme::at2);
  o.theta_step = 0.07, o.theta_interval = o.levels_interval = 1;
  Autotuner t(o, {o.theta_min, o.levels_min});
  Trace tr;
  drive(t, tr, fixed(beyond), 400);
  EXPECT_EQ(t.settled(), (AutotuneParams{o.theta_max, o.levels_max}));
}

// The log against the trace: each trial ran `to` for exactly `window` calls, time_after is their
// minimum, time_before the minimum of the last `window` calls at `from`, accepted iff not slower,
// and outside trials every call ran the settled parameters.
TEST(Autotune, LogMatchesTheCalls) {
  for (auto scheme :
       {AutotuneScheme::at1, AutotuneScheme::at2, AutotuneScheme::at3a, AutotuneScheme::at3b}) {
    for (int window : {1, 3, 5}) {
      SCOPED_TRACE(std::string(to_string(scheme)) + " window " + std::to_string(window));
      AutotuneOptions o = with_scheme(scheme);
      o.window = window;
      o.theta_interval = 2, o.levels_interval = 3;
      Autotuner t(o, {0.45, 3});
      Trace tr;
      const Hybrid h;
      drive(t, tr, fixed(h), 800, 0.05, [&](AutotuneParams p) { return h.cpu_waits(p); });
      const auto &log = t.log();
      ASSERT_GT(log.size(), 30u);
      AutotuneParams settled{0.45, 3};
      std::int64_t k = 0;
      for (const auto &m : log) {
        for (; k < m.call; ++k)
          ASSERT_EQ(tr.params[static_cast<std::size_t>(k)], settled) << "call " << k;
        EXPECT_EQ(m.from, settled);
        EXPECT_TRUE(m.kind == 't' ? m.to.levels == m.from.levels && m.to.theta != m.from.theta
                                  : m.to.theta == m.from.theta && m.to.levels != m.from.levels);
        double after = std::numeric_limits<double>::infinity();
        for (; k < m.call + window; ++k) {
          ASSERT_EQ(tr.params[static_cast<std::size_t>(k)], m.to) << "call " << k;
          after = std::min(after, tr.times[static_cast<std::size_t>(k)]);
        }
        EXPECT_EQ(m.time_after, after);
        double before = std::numeric_limits<double>::infinity();
        int seen = 0;
        for (auto j = m.call - 1; j >= 0 && seen < window; --j)
          if (tr.params[static_cast<std::size_t>(j)] == m.from) {
            before = std::min(before, tr.times[static_cast<std::size_t>(j)]);
            ++seen;
          }
        EXPECT_EQ(seen, window);
        EXPECT_EQ(m.time_before, before);
        EXPECT_EQ(m.accepted, m.time_after <= m.time_before);
        if (m.accepted) {
          settled = m.to;
        } else if (k < static_cast<std::int64_t>(tr.params.size())) {
          EXPECT_EQ(tr.params[static_cast<std::size_t>(k)], m.from); // reverted at once
        }
      }
      EXPECT_EQ(t.settled(), settled);
      EXPECT_GT(std::count_if(log.begin(), log.end(), [](auto &m) { return m.accepted; }), 3);
      EXPECT_GT(std::count_if(log.begin(), log.end(), [](auto &m) { return !m.accepted; }), 3);
    }
  }
}

TEST(Autotune, CsvHasOneRowPerMove) {
  AutotuneOptions o = with_scheme(AutotuneScheme::at2);
  Autotuner t(o, {0.4, 4});
  Trace tr;
  drive(t, tr, fixed(Bowl{}), 200);
  const std::string csv = t.log_csv();
  std::istringstream in(csv);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line,
            "call,kind,theta_from,levels_from,theta_to,levels_to,time_before,time_after,accepted");
  std::size_t rows = 0;
  while (std::getline(in, line)) {
    const auto &m = t.log()[rows++];
    std::istringstream row(line);
    std::string f[9];
    for (auto &s : f)
      std::getline(row, s, ',');
    EXPECT_EQ(std::stoll(f[0]), m.call);
    EXPECT_EQ(f[1], std::string(1, m.kind));
    EXPECT_EQ(std::stod(f[4]), m.to.theta); // shortest round-trip form
    EXPECT_EQ(std::stoi(f[5]), m.to.levels);
    EXPECT_EQ(std::stod(f[7]), m.time_after);
    EXPECT_EQ(f[8], m.accepted ? "1" : "0");
  }
  EXPECT_EQ(rows, t.log().size());
  EXPECT_GT(rows, 10u);
}

// seed 004 Paper IV Alg. 3: levels moves go the way the load-balance signal of the call before
// says, and settle at the fastest level next to the balance point, from either side.
TEST(Autotune, At3aMovesLevelsTowardsLoadBalance) {
  const Hybrid h;
  ASSERT_EQ(best_levels(h, h.theta_opt), 5);
  ASSERT_TRUE(h.cpu_waits({0.5, 4}));
  ASSERT_FALSE(h.cpu_waits({0.5, 5}));
  for (int start : {1, 2, 8, 12}) {
    SCOPED_TRACE(start);
    AutotuneOptions o = with_scheme(AutotuneScheme::at3a);
    o.theta_interval = 1, o.levels_interval = 2;
    Autotuner t(o, {0.45, start});
    Trace tr;
    drive(t, tr, fixed(h), 600, 1e-3, [&](AutotuneParams p) { return h.cpu_waits(p); });
    int levels_moves = 0;
    for (const auto &m : t.log()) {
      if (m.kind != 'l')
        continue;
      ++levels_moves;
      const auto &s = tr.signals[static_cast<std::size_t>(m.call - 1)];
      ASSERT_TRUE(s.has_value());
      EXPECT_EQ(m.to.levels - m.from.levels, *s ? 1 : -1) << "call " << m.call;
    }
    EXPECT_GE(levels_moves, std::abs(start - 5));
    EXPECT_EQ(t.settled().levels, 5);
  }
}

// seed 004 Paper IV §4.3.3: "for CPU-only runs, this method is equivalent to AT2".
TEST(Autotune, At3aWithoutSignalEqualsAt2) {
  auto run = [](AutotuneScheme s) {
    Autotuner t(with_scheme(s), {0.7, 8});
    Trace tr;
    drive(t, tr, fixed(Bowl{}), 1000, 1e-3);
    return tr.params;
  };
  EXPECT_EQ(run(AutotuneScheme::at3a), run(AutotuneScheme::at2));
}

// The cost of failed levels moves, measured on the noise-free model: each call of the trial cost
// T(to) − T(from) more than staying would have.
template <class M> double failed_levels_cost(const Autotuner &t, const M &model) {
  double cost = 0;
  for (const auto &m : t.log())
    if (m.kind == 'l' && !m.accepted)
      cost += t.options().window * (model(m.to) - model(m.from));
  return cost;
}

// seed 004 Paper IV §5.3.1: "setting cap = 0, no tuning of Nlevels is done" (θ still tunes).
TEST(Autotune, At3bCapZeroNeverMovesLevels) {
  AutotuneOptions o = with_scheme(AutotuneScheme::at3b);
  o.cap = 0;
  Autotuner t(o, {0.40, 4});
  Trace tr;
  const Bowl bowl;
  drive(t, tr, fixed(bowl), 1500, 1e-3);
  for (const auto &p : tr.params)
    ASSERT_EQ(p.levels, 4);
  EXPECT_FALSE(t.log().empty());
  EXPECT_NEAR(t.settled().theta, bowl.theta_opt, 0.03 + 1e-9);
}

// With the cap at 5 %, failed levels moves at the optimum cost at most ~5 % of the run, and the
// tuner keeps trying (it spends a good part of its allowance). A larger cap tries more often.
TEST(Autotune, At3bSpendsAtMostCapOnLevelsMoves) {
  const Bowl bowl;
  auto run = [&](double cap, int calls) {
    AutotuneOptions o = with_scheme(AutotuneScheme::at3b);
    o.cap = cap;
    Autotuner t(o, {bowl.theta_opt, 5});
    Trace tr;
    drive(t, tr, fixed(bowl), calls, 1e-3);
    while (t.in_trial()) // the base time counts a trial's calls once it is decided
      drive(t, tr, fixed(bowl), 1, 1e-3);
    const auto tries =
        std::count_if(t.log().begin(), t.log().end(), [](const auto &m) { return m.kind == 'l'; });
    EXPECT_EQ(t.settled().levels, 5);
    // The base time is the whole run less the failed levels trials.
    double failed = 0;
    for (const auto &m : t.log())
      if (m.kind == 'l' && !m.accepted)
        for (auto k = m.call; k < m.call + o.window; ++k)
          failed += tr.times[static_cast<std::size_t>(k)];
    EXPECT_NEAR(t.base_time(), tr.total - failed, 1e-9 * tr.total);
    return std::tuple{failed_levels_cost(t, bowl) / tr.total, tries, t};
  };
  for (int calls : {1000, 5000, 20000}) {
    SCOPED_TRACE(calls);
    const auto [share, tries, t] = run(0.05, calls);
    EXPECT_LE(share, 0.05 * 1.05);
    EXPECT_GE(share, 0.05 * 0.5);
    EXPECT_GE(tries, 4);
    EXPECT_LE(t.levels_cost(1), 0.5 * 0.05 * t.base_time() * 1.05);
    EXPECT_LE(t.levels_cost(-1), 0.5 * 0.05 * t.base_time() * 1.05);
    const auto [share2, tries2, t2] = run(0.2, calls);
    EXPECT_LE(share2, 0.2 * 1.05);
    EXPECT_GT(tries2, 2 * tries);
  }
}

// A huge cap tries a levels move at every chance: every other trial (θ and levels alternate).
TEST(Autotune, At3bLargeCapMovesLevelsAtEveryChance) {
  AutotuneOptions o = with_scheme(AutotuneScheme::at3b);
  o.cap = 1e12, o.window = 1, o.theta_interval = 1;
  Autotuner t(o, {0.55, 5});
  Trace tr;
  drive(t, tr, fixed(Bowl{}), 2000);
  const auto &log = t.log();
  const auto levels = std::count_if(log.begin(), log.end(), [](auto &m) { return m.kind == 'l'; });
  EXPECT_GE(levels, static_cast<long>(log.size() / 2) - 1);
  EXPECT_GE(levels, 400); // of 2000 calls: a trial, the call back, a trial, ...
}

// seed 004 Paper IV §4.3.4: the cost schedule still catches a switch of the optimal level
// (the near field grows 64-fold, as when N grows 8-fold, and the optimum moves from 5 to 6).
TEST(Autotune, At3bFollowsASwitchInTheOptimalLevel) {
  Bowl before, after;
  after.b *= 64;
  ASSERT_EQ(best_levels(after, after.theta_opt), 6);
  const int switch_at = 3000;
  AutotuneOptions o = with_scheme(AutotuneScheme::at3b);
  Autotuner t(o, {0.55, 5});
  Trace tr;
  drive(
      t, tr, [&](AutotuneParams p, std::int64_t k) { return k < switch_at ? before(p) : after(p); },
      6000, 1e-3);
  EXPECT_EQ(t.settled().levels, 6);
  std::int64_t switched = -1;
  for (const auto &m : t.log())
    if (m.kind == 'l' && m.accepted && m.to.levels == 6 && m.call >= switch_at) {
      switched = m.call;
      break;
    }
  ASSERT_GE(switched, switch_at);
  EXPECT_LT(switched, switch_at + 1500);
}

} // namespace
} // namespace ksum
