// Checkpoints of the polyelectrolyte simulation: the whole state in one binary file,
//
//   "KSUMMCCK" | version u32 | byte-order mark u32 | payload size u64 | payload |
//   FNV-1a-64(payload)
//
// the payload being the model, the options (all but execution and trajectories), the seed, the move
// counter, the running U, the acceptance counters and the accumulators, every double bit for bit,
// so that a run continued from it is the run that was saved (the draws depend only on (seed, t)).
#include "mc/simulation_impl.hpp"

#include <ksum/error.hpp>
#include <ksum/io.hpp>

#include <fmt/format.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <type_traits>

namespace ksum::mc {

namespace {

constexpr char magic[8] = {'K', 'S', 'U', 'M', 'M', 'C', 'C', 'K'};
constexpr std::uint32_t version = 1;
constexpr std::uint32_t byte_order = 0x01020304u;
constexpr std::size_t header_size = 8 + 4 + 4 + 8;

std::uint64_t fnv1a(const char *data, std::size_t n) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (std::size_t i = 0; i < n; ++i) {
    h ^= static_cast<unsigned char>(data[i]);
    h *= 0x100000001b3ull;
  }
  return h;
}

class Writer {
public:
  template <class T> void put(const T &v) {
    static_assert(std::is_trivially_copyable_v<T>);
    buf.append(reinterpret_cast<const char *>(&v), sizeof(T));
  }
  template <class T> void put(const std::vector<T> &v) {
    put(std::uint64_t(v.size()));
    buf.append(reinterpret_cast<const char *>(v.data()), v.size() * sizeof(T));
  }
  std::string buf;
};

class Reader {
public:
  Reader(const std::string &b, std::size_t pos, std::size_t end, const std::filesystem::path &p)
      : b_(b), pos_(pos), end_(end), path_(p) {}
  template <class T> T get() {
    static_assert(std::is_trivially_copyable_v<T>);
    need(sizeof(T));
    T v;
    std::memcpy(&v, b_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  template <class T> std::vector<T> vec() {
    const auto n = get<std::uint64_t>();
    if (n > (end_ - pos_) / sizeof(T))
      fail(fmt::format("an array of {} entries at byte {} runs past the payload", n, pos_));
    std::vector<T> v(static_cast<std::size_t>(n));
    std::memcpy(v.data(), b_.data() + pos_, std::size_t(n) * sizeof(T));
    pos_ += std::size_t(n) * sizeof(T);
    return v;
  }
  // An enum stored as i32, checked against its last value.
  template <class E> E enumeration(const char *name, int last) {
    const auto v = get<std::int32_t>();
    if (v < 0 || v > last)
      fail(fmt::format("{} = {} out of range", name, v));
    return static_cast<E>(v);
  }
  bool done() const { return pos_ == end_; }
  [[noreturn]] void fail(const std::string &what) const {
    throw Error(ErrorCode::parse, fmt::format("{}: corrupt checkpoint: {}", path_.string(), what));
  }

private:
  void need(std::size_t n) const {
    if (end_ - pos_ < n)
      fail(fmt::format("truncated payload at byte {}", pos_));
  }
  const std::string &b_;
  std::size_t pos_, end_;
  std::filesystem::path path_;
};

[[noreturn]] void parse_error(const std::filesystem::path &path, const std::string &what) {
  throw Error(ErrorCode::parse, fmt::format("{}: {}", path.string(), what));
}

} // namespace

void Simulation::save(const std::filesystem::path &checkpoint, bool overwrite) const {
  const Impl &s = *impl_;
  s.sync();
  const Model &m = s.model;
  const SimulationOptions &o = s.options;
  Writer w;
  w.put(m.chains);
  w.put(m.monomers);
  w.put(std::int32_t(m.cell.boundary));
  w.put(m.cell.radius);
  w.put(m.cell.box);
  w.put(m.system.x);
  w.put(m.system.y);
  w.put(m.system.z);
  w.put(m.system.charge);
  w.put(m.system.radius);
  w.put(m.system.species);
  w.put(m.system.bonds);
  const Potential &p = o.potential;
  w.put(std::int32_t(p.electrostatics));
  w.put(p.bjerrum);
  w.put(p.debye_length);
  w.put(std::int32_t(p.short_range));
  w.put(p.lj_epsilon);
  w.put(std::int32_t(p.bond));
  w.put(p.bond_k);
  w.put(p.bond_r0);
  w.put(p.bond_rmax);
  const MoveOptions &mv = o.moves;
  w.put(mv.monomer_step);
  w.put(mv.ion_step);
  w.put(mv.translations);
  w.put(mv.pivots);
  w.put(mv.crankshafts);
  w.put(mv.crankshaft_span);
  w.put(mv.pivot_max_angle);
  w.put(mv.crankshaft_max_angle);
  w.put(o.sample.every);
  w.put(o.sample.recompute_every);
  w.put(o.sample.radial_bins);
  w.put(o.sample.radial_max);
  w.put(o.seed);
  w.put(s.t);
  w.put(s.sweeps);
  w.put(s.energy);
  for (const Acceptance &a : s.acceptance) {
    w.put(a.attempted);
    w.put(a.accepted);
    w.put(a.rejected_overlap);
  }
  w.put(s.recomputes);
  w.put(s.max_drift);
  w.put(s.last_drift);
  const Accumulators &a = s.acc;
  for (const auto *v : {&a.sweep, &a.energy, &a.ree, &a.rg, &a.ree2, &a.rg2})
    w.put(*v);
  w.put(a.chain_columns);
  w.put(a.chain_ree);
  w.put(a.chain_rg);
  w.put(a.radial_count);
  w.put(a.radial_samples);
  w.put(a.radial_max);

  std::string file(magic, sizeof magic);
  Writer h;
  h.put(version);
  h.put(byte_order);
  h.put(std::uint64_t(w.buf.size()));
  file += h.buf;
  file += w.buf;
  Writer tail;
  tail.put(fnv1a(w.buf.data(), w.buf.size()));
  file += tail.buf;
  io::write_text(checkpoint, file, overwrite);
}

Simulation Simulation::load(const std::filesystem::path &path, const Execution &execution,
                            const TrajectoryOptions &trajectory) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error(ErrorCode::io, fmt::format("{}: cannot open the checkpoint", path.string()));
  const std::string b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad())
    throw Error(ErrorCode::io, fmt::format("{}: cannot read the checkpoint", path.string()));
  if (b.size() < header_size + 8)
    parse_error(path, fmt::format("not a ksum MC checkpoint (only {} bytes)", b.size()));
  if (std::memcmp(b.data(), magic, sizeof magic) != 0)
    parse_error(path, "not a ksum MC checkpoint (bad magic)");
  Reader head(b, sizeof magic, header_size, path);
  const auto v = head.get<std::uint32_t>();
  if (v != version)
    parse_error(path,
                fmt::format("checkpoint version {}; this build reads version {}", v, version));
  if (head.get<std::uint32_t>() != byte_order)
    parse_error(path, "checkpoint written with another byte order");
  const auto size = head.get<std::uint64_t>();
  if (size != b.size() - header_size - 8)
    parse_error(path, fmt::format("truncated or extended checkpoint: the header says {} payload "
                                  "bytes, the file holds {}",
                                  size, b.size() - header_size - 8));
  std::uint64_t stored;
  std::memcpy(&stored, b.data() + header_size + size, 8);
  if (stored != fnv1a(b.data() + header_size, std::size_t(size)))
    parse_error(path, "corrupt checkpoint (checksum mismatch)");

  Reader r(b, header_size, header_size + std::size_t(size), path);
  Model m;
  m.chains = r.get<std::int64_t>();
  m.monomers = r.get<std::int64_t>();
  m.cell.boundary = r.enumeration<Boundary>("boundary", int(Boundary::periodic));
  m.cell.radius = r.get<double>();
  m.cell.box = r.get<std::array<double, 3>>();
  m.system.x = r.vec<double>();
  m.system.y = r.vec<double>();
  m.system.z = r.vec<double>();
  m.system.charge = r.vec<double>();
  m.system.radius = r.vec<double>();
  m.system.species = r.vec<std::int32_t>();
  m.system.bonds = r.vec<std::array<std::int64_t, 2>>();
  SimulationOptions o;
  Potential &p = o.potential;
  p.electrostatics = r.enumeration<Electrostatics>("electrostatics", int(Electrostatics::none));
  p.bjerrum = r.get<double>();
  p.debye_length = r.get<double>();
  p.short_range = r.enumeration<ShortRange>("short_range", int(ShortRange::wca));
  p.lj_epsilon = r.get<double>();
  p.bond = r.enumeration<BondKind>("bond", int(BondKind::fene));
  p.bond_k = r.get<double>();
  p.bond_r0 = r.get<double>();
  p.bond_rmax = r.get<double>();
  MoveOptions &mv = o.moves;
  mv.monomer_step = r.get<double>();
  mv.ion_step = r.get<double>();
  mv.translations = r.get<std::int64_t>();
  mv.pivots = r.get<std::int64_t>();
  mv.crankshafts = r.get<std::int64_t>();
  mv.crankshaft_span = r.get<std::int64_t>();
  mv.pivot_max_angle = r.get<double>();
  mv.crankshaft_max_angle = r.get<double>();
  o.sample.every = r.get<std::int64_t>();
  o.sample.recompute_every = r.get<std::int64_t>();
  o.sample.radial_bins = r.get<std::int64_t>();
  o.sample.radial_max = r.get<double>();
  o.seed = r.get<std::uint64_t>();
  o.execution = execution;
  o.trajectory = trajectory;
  const auto t = r.get<std::uint64_t>();
  const auto sweeps = r.get<std::int64_t>();
  const auto energy = r.get<double>();
  std::array<Acceptance, move_kinds> acceptance{};
  for (Acceptance &a : acceptance) {
    a.attempted = r.get<std::int64_t>();
    a.accepted = r.get<std::int64_t>();
    a.rejected_overlap = r.get<std::int64_t>();
  }
  const auto recomputes = r.get<std::int64_t>();
  const auto max_drift = r.get<double>();
  const auto last_drift = r.get<double>();
  Accumulators a;
  for (auto *v : {&a.sweep, &a.energy, &a.ree, &a.rg, &a.ree2, &a.rg2})
    *v = r.vec<double>();
  a.chain_columns = r.get<std::int64_t>();
  a.chain_ree = r.vec<double>();
  a.chain_rg = r.vec<double>();
  a.radial_count = r.vec<double>();
  a.radial_samples = r.get<std::int64_t>();
  a.radial_max = r.get<double>();
  if (!r.done())
    r.fail("bytes left after the last field");
  if (std::int64_t(a.radial_count.size()) != o.sample.radial_bins)
    r.fail(fmt::format("{} radial bins stored for radial_bins = {}", a.radial_count.size(),
                       o.sample.radial_bins));

  auto impl = std::make_unique<Impl>(std::move(m), std::move(o), &energy);
  impl->t = t;
  impl->sweeps = sweeps;
  impl->acceptance = acceptance;
  impl->recomputes = recomputes;
  impl->max_drift = max_drift;
  impl->last_drift = last_drift;
  impl->acc = std::move(a);
  return Simulation(std::move(impl));
}

} // namespace ksum::mc
