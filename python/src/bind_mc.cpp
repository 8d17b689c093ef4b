// Monte Carlo electrostatics (seed 004 Paper I): the energy engine Engine<float|double> over
// particles given as arrays, and the polyelectrolyte Simulation with its option structs. The
// Python layer (ksum/mc.py) shapes the arrays and names the keywords.
#include "bindings.hpp"

#include <ksum/error.hpp>
#include <ksum/mc.hpp>
#include <ksum/mc_sim.hpp>

#include <nanobind/stl/array.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <fmt/format.h>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ksum::py {
namespace {

using Rows3 = nb::ndarray<const double, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
using Pairs = nb::ndarray<const std::int64_t, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
using Indices = nb::ndarray<const std::int64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using Species = nb::ndarray<const std::int32_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

mc::System make_system(Rows3 xyz, HostVector<double> charge, HostVector<double> radius, Pairs bonds,
                       std::optional<Species> species) {
  const auto n = xyz.shape(0);
  if (xyz.shape(1) != 3)
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("positions: expected shape (n, 3), got ({}, {})", n, xyz.shape(1)));
  if (charge.shape(0) != n || radius.shape(0) != n)
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("charges ({}) and radii ({}) need one value per particle ({})",
                            charge.shape(0), radius.shape(0), n));
  if (bonds.shape(1) != 2)
    throw Error(ErrorCode::shape_mismatch, fmt::format("bonds: expected shape (m, 2), got ({}, {})",
                                                       bonds.shape(0), bonds.shape(1)));
  mc::System s;
  s.x.resize(n);
  s.y.resize(n);
  s.z.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    s.x[i] = xyz.data()[3 * i];
    s.y[i] = xyz.data()[3 * i + 1];
    s.z[i] = xyz.data()[3 * i + 2];
  }
  s.charge.assign(charge.data(), charge.data() + n);
  s.radius.assign(radius.data(), radius.data() + n);
  for (std::size_t b = 0; b < bonds.shape(0); ++b)
    s.bonds.push_back({bonds.data()[2 * b], bonds.data()[2 * b + 1]});
  if (species)
    s.species.assign(species->data(), species->data() + species->shape(0));
  return s;
}

mc::Move make_move(Indices particles, Rows3 xyz, bool rigid) {
  if (xyz.shape(1) != 3 || xyz.shape(0) != particles.shape(0))
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("move: {} particles need new positions of shape ({}, 3), got ({}, {})",
                            particles.shape(0), particles.shape(0), xyz.shape(0), xyz.shape(1)));
  mc::Move m;
  m.particles.assign(particles.data(), particles.data() + particles.shape(0));
  m.xyz.assign(xyz.data(), xyz.data() + 3 * xyz.shape(0));
  m.rigid = rigid;
  return m;
}

// (n, 3) positions as a NumPy array.
NumpyMatrix<double> positions(const mc::System &s) {
  Table<double> t(s.size(), 3);
  for (std::int64_t i = 0; i < s.size(); ++i) {
    t(i, 0) = s.x[std::size_t(i)];
    t(i, 1) = s.y[std::size_t(i)];
    t(i, 2) = s.z[std::size_t(i)];
  }
  return to_numpy(std::move(t));
}

nb::tuple energy(const mc::Energy &e) {
  return nb::make_tuple(e.value, e.overlaps);
}

mc::Execution execution(const std::string &backend, const std::string &precision, int threads,
                        int device, int batch) {
  mc::Execution e;
  e.backend = parse_backend(backend);
  e.precision = mc::parse_precision(precision);
  e.threads = threads;
  e.device = device;
  e.batch = batch;
  return e;
}

template <class T> void bind_engine(nb::module_ &m, const char *name) {
  using E = mc::Engine<T>;
  nb::class_<E>(m, name)
      .def(
          "__init__",
          [](E *self, const mc::Potential &potential, const mc::Cell &cell,
             const std::string &backend, int threads, int device, int batch) {
            mc::EngineOptions o;
            o.potential = potential;
            o.cell = cell;
            o.backend = parse_backend(backend);
            o.threads = threads;
            o.device = device;
            o.batch = batch;
            new (self) E(std::move(o));
          },
          nb::arg("potential"), nb::arg("cell"), nb::arg("backend"), nb::arg("threads"),
          nb::arg("device"), nb::arg("batch"))
      .def(
          "set_system",
          [](E &e, Rows3 xyz, HostVector<double> charge, HostVector<double> radius, Pairs bonds,
             std::optional<Species> species) {
            const mc::System s = make_system(xyz, charge, radius, bonds, species);
            nb::gil_scoped_release release;
            e.set_system(s);
          },
          nb::arg("positions").noconvert(), nb::arg("charges").noconvert(),
          nb::arg("radii").noconvert(), nb::arg("bonds").noconvert(),
          nb::arg("species").noconvert().none())
      .def("positions", [](const E &e) { return positions(e.system()); })
      .def_prop_ro("size", &E::size)
      .def_prop_ro("backend", [](const E &e) { return std::string(to_string(e.backend())); })
      .def("total",
           [](const E &e) {
             mc::Energy u;
             {
               nb::gil_scoped_release release;
               u = e.total();
             }
             return energy(u);
           })
      .def("total_full_recompute",
           [](const E &e) {
             mc::Energy u;
             {
               nb::gil_scoped_release release;
               u = e.total_full_recompute(e.system());
             }
             return energy(u);
           })
      .def(
          "delta",
          [](const E &e, Indices particles, Rows3 xyz, bool rigid) {
            const mc::Move mv = make_move(particles, xyz, rigid);
            mc::Energy du;
            {
              nb::gil_scoped_release release;
              du = e.delta(mv);
            }
            return energy(du);
          },
          nb::arg("particles").noconvert(), nb::arg("xyz").noconvert(), nb::arg("rigid"))
      .def(
          "apply",
          [](E &e, Indices particles, Rows3 xyz, bool rigid) {
            const mc::Move mv = make_move(particles, xyz, rigid);
            nb::gil_scoped_release release;
            e.apply(mv);
          },
          nb::arg("particles").noconvert(), nb::arg("xyz").noconvert(), nb::arg("rigid"))
      .def(
          "translate",
          [](E &e, std::uint64_t seed, std::uint64_t first, std::int64_t count, double max_step,
             std::vector<std::int64_t> movable, std::vector<double> step) {
            mc::TranslateParams p;
            p.seed = seed;
            p.first = first;
            p.count = count;
            p.max_step = max_step;
            p.movable = std::move(movable);
            p.step = std::move(step);
            mc::TranslateResult r;
            {
              nb::gil_scoped_release release;
              r = e.translate(p);
            }
            nb::dict d;
            d["attempted"] = r.attempted;
            d["accepted"] = r.accepted;
            d["rejected_overlap"] = r.rejected_overlap;
            d["delta_u"] = r.delta_u;
            d["launches"] = r.launches;
            return d;
          },
          nb::arg("seed"), nb::arg("first"), nb::arg("count"), nb::arg("max_step"),
          nb::arg("movable"), nb::arg("step"));
}

// A table as (column names, (rows, cols) array).
nb::tuple table(Table<double> &&t) {
  std::vector<std::string> names = t.names;
  return nb::make_tuple(names, to_numpy(std::move(t)));
}

nb::dict estimate(const mc::Estimate &e) {
  nb::dict d;
  d["mean"] = e.mean;
  d["error"] = e.error;
  d["samples"] = e.samples;
  return d;
}

nb::dict summary(const mc::Summary &s) {
  nb::dict d;
  d["sweeps"] = s.sweeps;
  d["moves"] = s.moves;
  d["samples"] = s.samples;
  d["energy"] = s.energy;
  d["energy_mean"] = estimate(s.energy_mean);
  d["ree"] = estimate(s.ree);
  d["ree2"] = estimate(s.ree2);
  d["rg"] = estimate(s.rg);
  d["rg2"] = estimate(s.rg2);
  nb::dict acc;
  for (int k = 0; k < mc::move_kinds; ++k) {
    const auto &a = s.acceptance[std::size_t(k)];
    nb::dict ad;
    ad["attempted"] = a.attempted;
    ad["accepted"] = a.accepted;
    ad["rejected_overlap"] = a.rejected_overlap;
    ad["ratio"] = a.ratio();
    acc[std::string(mc::to_string(mc::MoveKind(k))).c_str()] = ad;
  }
  d["acceptance"] = acc;
  d["recomputes"] = s.recomputes;
  d["max_drift"] = s.max_drift;
  d["last_drift"] = s.last_drift;
  return d;
}

void bind_options(nb::module_ &m) {
  nb::class_<mc::Potential>(m, "McPotential")
      .def(nb::init<>())
      .def_prop_rw(
          "electrostatics",
          [](const mc::Potential &p) { return std::string(mc::to_string(p.electrostatics)); },
          [](mc::Potential &p, const std::string &s) {
            p.electrostatics = mc::parse_electrostatics(s);
          })
      .def_rw("bjerrum", &mc::Potential::bjerrum)
      .def_rw("debye_length", &mc::Potential::debye_length)
      .def_prop_rw(
          "short_range",
          [](const mc::Potential &p) { return std::string(mc::to_string(p.short_range)); },
          [](mc::Potential &p, const std::string &s) { p.short_range = mc::parse_short_range(s); })
      .def_rw("lj_epsilon", &mc::Potential::lj_epsilon)
      .def_prop_rw(
          "bond", [](const mc::Potential &p) { return std::string(mc::to_string(p.bond)); },
          [](mc::Potential &p, const std::string &s) { p.bond = mc::parse_bond(s); })
      .def_rw("bond_k", &mc::Potential::bond_k)
      .def_rw("bond_r0", &mc::Potential::bond_r0)
      .def_rw("bond_rmax", &mc::Potential::bond_rmax);

  nb::class_<mc::Cell>(m, "McCell")
      .def(
          "__init__",
          [](mc::Cell *self, const std::string &boundary, double radius,
             std::array<double, 3> box) {
            mc::Cell c;
            if (boundary == "open")
              c.boundary = mc::Boundary::open;
            else if (boundary == "sphere")
              c.boundary = mc::Boundary::sphere;
            else if (boundary == "periodic")
              c.boundary = mc::Boundary::periodic;
            else
              throw Error(ErrorCode::invalid_argument,
                          fmt::format("cell '{}': expected open, sphere or periodic", boundary));
            c.radius = radius;
            c.box = box;
            new (self) mc::Cell(c);
          },
          nb::arg("boundary"), nb::arg("radius"), nb::arg("box"));

  nb::class_<mc::ModelOptions>(m, "McModelOptions")
      .def(nb::init<>())
      .def_rw("chains", &mc::ModelOptions::chains)
      .def_rw("monomers", &mc::ModelOptions::monomers)
      .def_rw("monomer_radius", &mc::ModelOptions::monomer_radius)
      .def_rw("monomer_charge", &mc::ModelOptions::monomer_charge)
      .def_rw("charge_every", &mc::ModelOptions::charge_every)
      .def_rw("bond_length", &mc::ModelOptions::bond_length)
      .def_rw("counterion_valence", &mc::ModelOptions::counterion_valence)
      .def_rw("counterion_radius", &mc::ModelOptions::counterion_radius)
      .def_rw("salt_pairs", &mc::ModelOptions::salt_pairs)
      .def_rw("salt_radius", &mc::ModelOptions::salt_radius)
      .def_prop_rw(
          "boundary",
          [](const mc::ModelOptions &o) {
            return std::string(o.boundary == mc::Boundary::periodic ? "periodic" : "sphere");
          },
          [](mc::ModelOptions &o, const std::string &s) {
            if (s != "sphere" && s != "periodic")
              throw Error(ErrorCode::invalid_argument,
                          fmt::format("boundary '{}': expected sphere or periodic", s));
            o.boundary = s == "periodic" ? mc::Boundary::periodic : mc::Boundary::sphere;
          })
      .def_rw("cell_radius", &mc::ModelOptions::cell_radius)
      .def_rw("box", &mc::ModelOptions::box)
      .def_rw("monomer_density", &mc::ModelOptions::monomer_density)
      .def_rw("max_volume_fraction", &mc::ModelOptions::max_volume_fraction)
      .def_rw("seed", &mc::ModelOptions::seed);

  nb::class_<mc::MoveOptions>(m, "McMoveOptions")
      .def(nb::init<>())
      .def_rw("monomer_step", &mc::MoveOptions::monomer_step)
      .def_rw("ion_step", &mc::MoveOptions::ion_step)
      .def_rw("translations", &mc::MoveOptions::translations)
      .def_rw("pivots", &mc::MoveOptions::pivots)
      .def_rw("crankshafts", &mc::MoveOptions::crankshafts)
      .def_rw("crankshaft_span", &mc::MoveOptions::crankshaft_span)
      .def_rw("pivot_max_angle", &mc::MoveOptions::pivot_max_angle)
      .def_rw("crankshaft_max_angle", &mc::MoveOptions::crankshaft_max_angle);

  nb::class_<mc::SampleOptions>(m, "McSampleOptions")
      .def(nb::init<>())
      .def_rw("every", &mc::SampleOptions::every)
      .def_rw("recompute_every", &mc::SampleOptions::recompute_every)
      .def_rw("radial_bins", &mc::SampleOptions::radial_bins)
      .def_rw("radial_max", &mc::SampleOptions::radial_max);

  nb::class_<mc::SimulationOptions>(m, "McSimulationOptions")
      .def(nb::init<>())
      .def_rw("potential", &mc::SimulationOptions::potential)
      .def_rw("seed", &mc::SimulationOptions::seed)
      .def_rw("moves", &mc::SimulationOptions::moves)
      .def_rw("sample", &mc::SimulationOptions::sample);
}

void bind_simulation(nb::module_ &m) {
  nb::class_<mc::Simulation>(m, "McSimulation")
      .def(
          "__init__",
          [](mc::Simulation *self, const mc::ModelOptions &model, mc::SimulationOptions options,
             const std::string &backend, const std::string &precision, int threads, int device,
             int batch) {
            options.execution = execution(backend, precision, threads, device, batch);
            nb::gil_scoped_release release;
            new (self) mc::Simulation(mc::build_polyelectrolyte(model), std::move(options));
          },
          nb::arg("model"), nb::arg("options"), nb::arg("backend"), nb::arg("precision"),
          nb::arg("threads"), nb::arg("device"), nb::arg("batch"))
      .def_static(
          "load",
          [](const std::string &path, const std::string &backend, const std::string &precision,
             int threads, int device, int batch) {
            const mc::Execution e = execution(backend, precision, threads, device, batch);
            nb::gil_scoped_release release;
            return mc::Simulation::load(path, e);
          },
          nb::arg("path"), nb::arg("backend"), nb::arg("precision"), nb::arg("threads"),
          nb::arg("device"), nb::arg("batch"))
      .def(
          "run",
          [](mc::Simulation &s, std::int64_t sweeps, nb::object progress,
             std::int64_t progress_every) {
            // Between sweeps: Ctrl-C (the pending signal raises) and the caller's progress.
            const mc::ProgressCallback each = [&progress](const mc::Progress &p) {
              nb::gil_scoped_acquire gil;
              if (PyErr_CheckSignals() != 0)
                throw nb::python_error();
              if (progress.is_none())
                return true;
              nb::dict acc;
              for (int k = 0; k < mc::move_kinds; ++k)
                acc[std::string(mc::to_string(mc::MoveKind(k))).c_str()] =
                    p.acceptance[std::size_t(k)].ratio();
              nb::object r = progress(p.sweep, p.energy, acc);
              return r.is_none() || nb::cast<bool>(r);
            };
            nb::gil_scoped_release release;
            return s.run(sweeps, each, progress_every);
          },
          nb::arg("sweeps"), nb::arg("progress").none(), nb::arg("progress_every"))
      .def(
          "save",
          [](const mc::Simulation &s, const std::string &path, bool overwrite) {
            nb::gil_scoped_release release;
            s.save(path, overwrite);
          },
          nb::arg("path"), nb::arg("overwrite"))
      .def("samples", [](const mc::Simulation &s) { return table(s.samples()); })
      .def("radial", [](const mc::Simulation &s) { return table(s.radial()); })
      .def("summary", [](const mc::Simulation &s) { return summary(s.summary()); })
      .def("recompute",
           [](mc::Simulation &s) {
             mc::Energy e;
             {
               nb::gil_scoped_release release;
               e = s.recompute();
             }
             return energy(e);
           })
      .def("positions", [](const mc::Simulation &s) { return positions(s.model().system); })
      .def("charges",
           [](const mc::Simulation &s) {
             return to_numpy(std::vector<double>(s.model().system.charge));
           })
      .def("radii",
           [](const mc::Simulation &s) {
             return to_numpy(std::vector<double>(s.model().system.radius));
           })
      .def("species",
           [](const mc::Simulation &s) {
             return to_numpy(std::vector<std::int32_t>(s.model().system.species));
           })
      .def("cell",
           [](const mc::Simulation &s) {
             const auto &c = s.model().cell;
             return nb::make_tuple(c.boundary == mc::Boundary::periodic ? "periodic" : "sphere",
                                   c.radius, c.box);
           })
      .def("end_to_end", &mc::Simulation::end_to_end, nb::arg("chain"))
      .def("gyration_radius", &mc::Simulation::gyration_radius, nb::arg("chain"))
      .def_prop_ro("chains", [](const mc::Simulation &s) { return s.model().chains; })
      .def_prop_ro("monomers", [](const mc::Simulation &s) { return s.model().monomers; })
      .def_prop_ro("energy", &mc::Simulation::energy)
      .def_prop_ro("sweeps", &mc::Simulation::sweeps)
      .def_prop_ro("move_counter", &mc::Simulation::move_counter)
      .def_prop_ro("seed", [](const mc::Simulation &s) { return s.options().seed; })
      .def_prop_ro("potential", [](const mc::Simulation &s) { return s.options().potential; })
      .def_prop_ro("backend",
                   [](const mc::Simulation &s) { return std::string(to_string(s.backend())); });
}

} // namespace

void bind_mc(nb::module_ &m) {
  bind_options(m);
  bind_engine<float>(m, "McEngineF32");
  bind_engine<double>(m, "McEngineF64");
  bind_simulation(m);
  m.def("mc_bjerrum_length", &mc::bjerrum_length, nb::arg("relative_permittivity"),
        nb::arg("temperature"));
}

} // namespace ksum::py
