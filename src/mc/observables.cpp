// Observables of the polyelectrolyte simulation: the chains' end-to-end distance and radius of
// gyration (unwrapped along the chain in a periodic box), the counter-ions' radial distribution,
// the per-sample series and their block-averaged estimates.
#include "mc/simulation_impl.hpp"

#include <ksum/error.hpp>

#include "mc/chain_moves.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>

namespace ksum::mc {

Estimate block_average(const std::vector<double> &series) {
  Estimate e;
  e.samples = std::int64_t(series.size());
  if (series.empty())
    return e;
  double sum = 0;
  for (double v : series)
    sum += v;
  e.mean = sum / double(series.size());
  // Flyvbjerg & Petersen, J. Chem. Phys. 91, 461 (1989): the blocked series' naive error grows
  // with the block length until blocks are longer than the correlation time, then plateaus; the
  // largest estimate among levels with enough blocks to be trusted (≥ 16) is taken.
  constexpr std::size_t min_blocks = 16;
  std::vector<double> x = series;
  double best = 0;
  bool any = false;
  while (x.size() >= min_blocks || (!any && x.size() >= 2)) {
    const double m = double(x.size());
    double ss = 0;
    for (double v : x)
      ss += (v - e.mean) * (v - e.mean);
    best = std::max(best, std::sqrt(ss / (m * (m - 1))));
    any = true;
    std::vector<double> half(x.size() / 2);
    for (std::size_t i = 0; i < half.size(); ++i)
      half[i] = 0.5 * (x[2 * i] + x[2 * i + 1]);
    x = std::move(half);
  }
  e.error = best;
  return e;
}

double end_to_end(const Model &model, std::int64_t chain) {
  std::vector<Vec3> u;
  unwrapped_chain(model.system, model.cell, model.chain_particle(chain, 0), model.monomers, u);
  const Vec3 &a = u.front(), &b = u.back();
  return std::sqrt((b[0] - a[0]) * (b[0] - a[0]) + (b[1] - a[1]) * (b[1] - a[1]) +
                   (b[2] - a[2]) * (b[2] - a[2]));
}

double gyration_radius(const Model &model, std::int64_t chain) {
  std::vector<Vec3> u;
  unwrapped_chain(model.system, model.cell, model.chain_particle(chain, 0), model.monomers, u);
  Vec3 c = {0, 0, 0};
  for (const Vec3 &p : u)
    for (int a = 0; a < 3; ++a)
      c[a] += p[a];
  for (double &v : c)
    v /= double(u.size());
  double s = 0;
  for (const Vec3 &p : u)
    for (int a = 0; a < 3; ++a)
      s += (p[a] - c[a]) * (p[a] - c[a]);
  return std::sqrt(s / double(u.size()));
}

double default_radial_max(const Cell &cell) {
  if (cell.boundary == Boundary::sphere)
    return cell.radius;
  if (cell.boundary == Boundary::periodic)
    return 0.5 * std::min({cell.box[0], cell.box[1], cell.box[2]});
  return 0; // open: no natural range, no histogram unless radial_max is given
}

namespace {

bool is_counterion(const System &s, std::int64_t i) {
  return s.species[std::size_t(i)] == std::int32_t(Species::counterion);
}

std::int64_t counterion_count(const System &s) {
  std::int64_t n = 0;
  for (std::int64_t i = 0; i < std::int64_t(s.species.size()); ++i)
    n += is_counterion(s, i);
  return n;
}

} // namespace

void radial_histogram(const Model &model, double r_max, std::vector<double> &count) {
  const System &s = model.system;
  if (r_max <= 0 || s.species.empty() || count.empty())
    return;
  const double w = r_max / double(count.size());
  auto add = [&](double r) {
    const auto b = std::int64_t(r / w);
    if (b < std::int64_t(count.size()))
      count[std::size_t(b)] += 1;
  };
  const std::int64_t n = s.size();
  if (model.cell.boundary != Boundary::periodic) {
    // The density around the cell centre (the origin).
    for (std::int64_t i = 0; i < n; ++i)
      if (is_counterion(s, i))
        add(std::sqrt(s.x[i] * s.x[i] + s.y[i] * s.y[i] + s.z[i] * s.z[i]));
    return;
  }
  // g(r) of counter-ions around monomers, minimum image.
  const auto &L = model.cell.box;
  for (std::int64_t i = 0; i < model.monomer_count(); ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      if (!is_counterion(s, j))
        continue;
      double d[3] = {s.x[j] - s.x[i], s.y[j] - s.y[i], s.z[j] - s.z[i]};
      for (int a = 0; a < 3; ++a)
        d[a] -= L[a] * std::nearbyint(d[a] / L[a]);
      add(std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]));
    }
}

void Simulation::Impl::sample() {
  sync();
  Accumulators &a = acc;
  a.sweep.push_back(double(sweeps));
  a.energy.push_back(energy);
  if (model.chains > 0) {
    double ree = 0, rg = 0, ree2 = 0, rg2 = 0;
    for (std::int64_t c = 0; c < model.chains; ++c) {
      const double e = mc::end_to_end(model, c), g = mc::gyration_radius(model, c);
      ree += e;
      rg += g;
      ree2 += e * e;
      rg2 += g * g;
      if (c < a.chain_columns) {
        a.chain_ree.push_back(e);
        a.chain_rg.push_back(g);
      }
    }
    const double k = double(model.chains);
    a.ree.push_back(ree / k);
    a.rg.push_back(rg / k);
    a.ree2.push_back(ree2 / k);
    a.rg2.push_back(rg2 / k);
  }
  if (a.radial_max > 0) {
    radial_histogram(model, a.radial_max, a.radial_count);
    ++a.radial_samples;
  }
}

Table<double> Simulation::samples() const {
  const Accumulators &a = impl_->acc;
  const std::int64_t rows = std::int64_t(a.sweep.size());
  const bool chains = impl_->model.chains > 0;
  const std::int64_t cols = 2 + (chains ? 2 + 2 * a.chain_columns : 0);
  Table<double> t(rows, cols);
  t.names = {"sweep", "energy"};
  if (chains) {
    t.names.push_back("ree");
    t.names.push_back("rg");
    for (std::int64_t c = 0; c < a.chain_columns; ++c) {
      t.names.push_back(fmt::format("ree_{}", c));
      t.names.push_back(fmt::format("rg_{}", c));
    }
  }
  for (std::int64_t r = 0; r < rows; ++r) {
    t(r, 0) = a.sweep[std::size_t(r)];
    t(r, 1) = a.energy[std::size_t(r)];
    if (!chains)
      continue;
    t(r, 2) = a.ree[std::size_t(r)];
    t(r, 3) = a.rg[std::size_t(r)];
    for (std::int64_t c = 0; c < a.chain_columns; ++c) {
      t(r, 4 + 2 * c) = a.chain_ree[std::size_t(r * a.chain_columns + c)];
      t(r, 5 + 2 * c) = a.chain_rg[std::size_t(r * a.chain_columns + c)];
    }
  }
  return t;
}

Table<double> Simulation::radial() const {
  const Accumulators &a = impl_->acc;
  const Model &m = impl_->model;
  const auto bins = std::int64_t(a.radial_count.size());
  Table<double> t(bins, 3);
  t.names = {"r", m.cell.boundary == Boundary::periodic ? "g" : "density", "count"};
  const double w = bins > 0 ? a.radial_max / double(bins) : 0;
  const bool periodic = m.cell.boundary == Boundary::periodic;
  double pairs_per_volume = 0;
  if (periodic) {
    const double volume = m.cell.box[0] * m.cell.box[1] * m.cell.box[2];
    pairs_per_volume = double(m.monomer_count()) *
                       double(m.system.species.empty() ? 0 : counterion_count(m.system)) / volume;
  }
  for (std::int64_t b = 0; b < bins; ++b) {
    const double r0 = double(b) * w, r1 = r0 + w;
    const double shell = 4.0 / 3.0 * std::numbers::pi * (r1 * r1 * r1 - r0 * r0 * r0);
    const double count = a.radial_count[std::size_t(b)];
    double norm = double(a.radial_samples) * shell * (periodic ? pairs_per_volume : 1.0);
    t(b, 0) = r0 + 0.5 * w;
    t(b, 1) = norm > 0 ? count / norm : 0.0;
    t(b, 2) = count;
  }
  return t;
}

Summary Simulation::summary() const {
  const Impl &s = *impl_;
  Summary out;
  out.sweeps = s.sweeps;
  out.moves = std::int64_t(s.t);
  out.samples = std::int64_t(s.acc.sweep.size());
  out.energy = s.energy;
  out.energy_mean = block_average(s.acc.energy);
  out.ree = block_average(s.acc.ree);
  out.ree2 = block_average(s.acc.ree2);
  out.rg = block_average(s.acc.rg);
  out.rg2 = block_average(s.acc.rg2);
  out.acceptance = s.acceptance;
  out.recomputes = s.recomputes;
  out.max_drift = s.max_drift;
  out.last_drift = s.last_drift;
  return out;
}

namespace {
void check_chain(const Model &m, std::int64_t chain) {
  if (chain < 0 || chain >= m.chains)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("mc simulation: chain {} out of range (the model has {} chains)", chain,
                            m.chains));
}
} // namespace

double Simulation::end_to_end(std::int64_t chain) const {
  const Model &m = model();
  check_chain(m, chain);
  return mc::end_to_end(m, chain);
}

double Simulation::gyration_radius(std::int64_t chain) const {
  const Model &m = model();
  check_chain(m, chain);
  return mc::gyration_radius(m, chain);
}

} // namespace ksum::mc
