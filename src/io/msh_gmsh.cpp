// .msh through the Gmsh SDK: Gmsh parses every version of its format, and writing goes through
// Gmsh too, so entities, physical groups and tags survive the round trip with only the nodes moved.
#include "io/io_detail.hpp"
#include "io/mesh_detail.hpp"

#include <ksum/error.hpp>
#include <ksum/mesh.hpp>

#include <gmsh.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <fmt/format.h>
#include <mutex>
#include <omp.h>
#include <random>
#include <unordered_map>
#include <utility>

namespace ksum::io {
namespace {

namespace fs = std::filesystem;

// Gmsh is one global model per process: one session at a time, finalized on every exit.
std::mutex &gmsh_mutex() {
  static std::mutex m;
  return m;
}

// Runs a Gmsh call, turning its exceptions (a std::string in Gmsh 4.8, std::exception later)
// into Error(code) naming the file.
template <class F> void call(const fs::path &path, const char *what, ErrorCode code, F &&f) {
  std::string reason;
  try {
    f();
    return;
  } catch (const Error &) {
    throw; // ksum's own, from inside the callback
  } catch (const std::string &s) {
    reason = s;
  } catch (const std::exception &e) {
    reason = e.what();
  } catch (...) {
    std::string last;
    try {
      gmsh::logger::getLastError(last);
    } catch (...) {
    }
    reason = last.empty() ? "an unknown exception" : last;
  }
  throw Error(code, fmt::format("{}: Gmsh could not {}: {}", detail::display(path), what, reason));
}

// Gmsh sets OpenMP's thread count from its own option (General.NumThreads, default 1) and
// leaves it so: the caller's count is restored, or every later OpenMP loop would run on 1 thread.
class Session {
public:
  explicit Session(const fs::path &path) : lock_(gmsh_mutex()), threads_(omp_get_max_threads()) {
    call(path, "start", ErrorCode::internal, [] {
      gmsh::initialize(0, nullptr, false);
      gmsh::option::setNumber("General.Terminal", 0);
      gmsh::option::setNumber("General.Verbosity", 1);
    });
  }
  ~Session() {
    gmsh::finalize();
    omp_set_num_threads(threads_);
  }
  Session(const Session &) = delete;
  Session &operator=(const Session &) = delete;

private:
  std::lock_guard<std::mutex> lock_;
  int threads_;
};

bool shape_from_name(const std::string &name, ElementShape &shape) {
  static const std::pair<const char *, ElementShape> families[] = {
      {"Point", ElementShape::point},
      {"Line", ElementShape::line},
      {"Triangle", ElementShape::triangle},
      {"Quadrilateral", ElementShape::quadrangle},
      {"Tetrahedron", ElementShape::tetrahedron},
      {"Hexahedron", ElementShape::hexahedron},
      {"Prism", ElementShape::prism},
      {"Pyramid", ElementShape::pyramid}};
  for (const auto &[prefix, s] : families)
    if (name.rfind(prefix, 0) == 0) {
      shape = s;
      return true;
    }
  return false;
}

} // namespace

bool have_gmsh() noexcept {
  return true;
}

Mesh read_mesh(const fs::path &path, bool surface_3d) {
  { // a missing or unreadable file gets the system's reason (Gmsh only logs it)
    auto probe = detail::open_for_reading(path);
  }
  Mesh mesh;
  mesh.source = path;
  Session session(path);
  call(path, "read the file", ErrorCode::parse, [&] { gmsh::open(path.string()); });

  std::vector<std::size_t> tags;
  std::vector<double> xyz, param;
  call(path, "list the nodes", ErrorCode::parse,
       [&] { gmsh::model::mesh::getNodes(tags, xyz, param, -1, -1, false, false); });
  const auto n = static_cast<std::int64_t>(tags.size());
  if (n == 0)
    throw Error(ErrorCode::empty_input,
                fmt::format("{}: no mesh nodes (is it a mesh file? Gmsh read no $Nodes)",
                            detail::display(path)));
  mesh.nodes = Table<double>(n, 3);
  mesh.node_tags.resize(static_cast<std::size_t>(n));
  // Node tag → row: a vector when the tags are compact (the usual case), else a hash map.
  std::size_t max_tag = 0;
  for (const auto t : tags)
    max_tag = std::max(max_tag, t);
  const bool dense = max_tag <= 4 * tags.size() + 1024;
  std::vector<std::int64_t> dense_row(dense ? max_tag + 1 : 0, -1);
  std::unordered_map<std::size_t, std::int64_t> row_of;
  if (!dense)
    row_of.reserve(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    const auto t = tags[static_cast<std::size_t>(i)];
    mesh.node_tags[static_cast<std::size_t>(i)] = static_cast<std::int64_t>(t);
    for (int a = 0; a < 3; ++a) {
      const double v = xyz[static_cast<std::size_t>(3 * i + a)];
      if (!std::isfinite(v))
        throw Error(ErrorCode::non_finite, fmt::format("{}: node {} has a non-finite coordinate",
                                                       detail::display(path), t));
      mesh.nodes(i, a) = v;
    }
    if (dense ? std::exchange(dense_row[t], i) >= 0 : !row_of.emplace(t, i).second)
      throw Error(ErrorCode::parse,
                  fmt::format("{}: node tag {} appears twice", detail::display(path), t));
  }
  auto row = [&](std::size_t tag) {
    if (dense) {
      if (tag < dense_row.size() && dense_row[tag] >= 0)
        return dense_row[tag];
    } else if (const auto it = row_of.find(tag); it != row_of.end()) {
      return it->second;
    }
    throw Error(ErrorCode::parse,
                fmt::format("{}: an element refers to node {}, which has no coordinates",
                            detail::display(path), tag));
  };

  for (int dim = surface_3d ? 2 : 3; dim >= 2 && mesh.dim == 0; --dim) {
    std::vector<int> types;
    std::vector<std::vector<std::size_t>> etags, enodes;
    call(path, "list the elements", ErrorCode::parse,
         [&] { gmsh::model::mesh::getElements(types, etags, enodes, dim, -1); });
    for (std::size_t k = 0; k < types.size(); ++k) {
      if (etags[k].empty())
        continue;
      std::string name;
      int edim = 0, order = 0, nn = 0, primary = 0;
      std::vector<double> local;
      call(path, "describe an element type", ErrorCode::parse, [&] {
        gmsh::model::mesh::getElementProperties(types[k], name, edim, order, nn, local, primary);
      });
      ElementBlock b;
      if (!shape_from_name(name, b.shape) || shape_dimension(b.shape) != dim)
        throw Error(ErrorCode::unsupported,
                    fmt::format("{}: element type '{}' (Gmsh type {}) is not supported (2D: "
                                "triangles, quadrangles; 3D: tetrahedra, hexahedra, prisms, "
                                "pyramids)",
                                detail::display(path), name, types[k]));
      b.gmsh_type = types[k];
      b.nodes_per_element = nn;
      b.tags.assign(etags[k].begin(), etags[k].end());
      b.connectivity.resize(enodes[k].size());
      for (std::size_t j = 0; j < enodes[k].size(); ++j)
        b.connectivity[j] = row(enodes[k][j]);
      // One block per shape: Gmsh returns one vector per type already.
      mesh.blocks.push_back(std::move(b));
      mesh.dim = dim;
    }
  }
  if (mesh.dim == 0)
    throw Error(ErrorCode::empty_input,
                fmt::format("{}: no 2D or 3D elements (ksum deform moves surface or volume meshes)",
                            detail::display(path)));
  if (mesh.dim == 2 && !surface_3d) {
    const double z0 = mesh.nodes(0, 2);
    double extent = 0;
    for (std::int64_t i = 0; i < n; ++i)
      extent = std::max({extent, std::abs(mesh.nodes(i, 0)), std::abs(mesh.nodes(i, 1))});
    for (std::int64_t i = 0; i < n; ++i)
      if (std::abs(mesh.nodes(i, 2) - z0) > 1e-12 * std::max(extent, 1.0))
        throw Error(ErrorCode::unsupported,
                    fmt::format("{}: a 2D mesh must lie in a plane z = const; node {} has z = {} "
                                "and node {} z = {}",
                                detail::display(path), mesh.node_tags[0], z0,
                                mesh.node_tags[static_cast<std::size_t>(i)], mesh.nodes(i, 2)));
  }

  gmsh::vectorpair groups;
  call(path, "list the physical groups", ErrorCode::parse,
       [&] { gmsh::model::getPhysicalGroups(groups, -1); });
  for (const auto &[gdim, gtag] : groups) {
    PhysicalGroup g;
    g.dim = gdim;
    g.tag = gtag;
    std::vector<std::size_t> gnodes;
    std::vector<double> gxyz;
    call(path, "read a physical group", ErrorCode::parse, [&] {
      gmsh::model::getPhysicalName(gdim, gtag, g.name);
      gmsh::model::mesh::getNodesForPhysicalGroup(gdim, gtag, gnodes, gxyz);
    });
    g.nodes.reserve(gnodes.size());
    for (const auto t : gnodes)
      g.nodes.push_back(row(t));
    std::sort(g.nodes.begin(), g.nodes.end());
    g.nodes.erase(std::unique(g.nodes.begin(), g.nodes.end()), g.nodes.end());
    mesh.groups.push_back(std::move(g));
  }
  return mesh;
}

namespace detail {

void write_msh(const fs::path &path, const Mesh &mesh, const Table<double> &coords,
               const MeshWriteOptions &options) {
  std::error_code ec;
  if (!options.overwrite && fs::exists(path, ec))
    throw Error(ErrorCode::io,
                fmt::format("{}: exists; not overwritten (use --force)", display(path)));
  if (mesh.source.empty())
    throw Error(ErrorCode::invalid_argument,
                fmt::format("{}: writing .msh needs the mesh it was read from", display(path)));
  Session session(path);
  call(mesh.source, "re-read the file", ErrorCode::parse,
       [&] { gmsh::open(mesh.source.string()); });
  std::vector<std::size_t> tags;
  std::vector<double> xyz, param;
  call(mesh.source, "list the nodes", ErrorCode::parse,
       [&] { gmsh::model::mesh::getNodes(tags, xyz, param, -1, -1, false, false); });
  if (static_cast<std::int64_t>(tags.size()) != coords.rows())
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("{}: has {} nodes now but {} when it was read (changed since?)",
                            display(mesh.source), tags.size(), coords.rows()));
  std::unordered_map<std::int64_t, std::int64_t> row_of;
  row_of.reserve(mesh.node_tags.size());
  for (std::size_t i = 0; i < mesh.node_tags.size(); ++i)
    row_of.emplace(mesh.node_tags[i], static_cast<std::int64_t>(i));
  const std::vector<double> no_param;
  call(path, "move the nodes", ErrorCode::internal, [&] {
    std::vector<double> x(3);
    for (const auto t : tags) {
      const auto it = row_of.find(static_cast<std::int64_t>(t));
      if (it == row_of.end())
        throw Error(ErrorCode::shape_mismatch,
                    fmt::format("{}: node {} was not there when it was read (changed since?)",
                                display(mesh.source), t));
      for (int a = 0; a < 3; ++a)
        x[static_cast<std::size_t>(a)] = coords(it->second, a);
      gmsh::model::mesh::setNode(t, x, no_param);
    }
  });
  if (options.msh_version != 4.1 && options.msh_version != 2.2)
    throw Error(ErrorCode::invalid_argument, fmt::format("{}: MSH version {} (expected 4.1 or 2.2)",
                                                         display(path), options.msh_version));
  call(path, "set the output format", ErrorCode::internal, [&] {
    gmsh::option::setNumber("Mesh.MshFileVersion", options.msh_version);
    gmsh::option::setNumber("Mesh.Binary", options.binary ? 1 : 0);
    // Every element read, in a group or not; MSH 2.2 drops the groups with SaveAll, so there
    // only the elements of the physical groups are written (all of them in a typical mesh).
    gmsh::vectorpair groups;
    gmsh::model::getPhysicalGroups(groups, -1);
    gmsh::option::setNumber("Mesh.SaveAll", options.msh_version == 2.2 && !groups.empty() ? 0 : 1);
  });
  // Through a temporary file in the same folder (Gmsh picks the format from the extension).
  static std::atomic<unsigned> counter{0};
  fs::path temp = path;
  temp.replace_filename(fmt::format(".{}.tmp{:08x}{}.msh", path.filename().string(),
                                    std::random_device{}(), counter++));
  try {
    call(path, "write the mesh", ErrorCode::io, [&] { gmsh::write(temp.string()); });
    if (!fs::exists(temp, ec))
      throw Error(ErrorCode::io, fmt::format("{}: Gmsh wrote nothing (folder missing or not "
                                             "writable?)",
                                             display(path)));
    fs::rename(temp, path, ec);
    if (ec)
      throw Error(ErrorCode::io, fmt::format("{}: cannot move the written mesh into place: {}",
                                             display(path), ec.message()));
  } catch (...) {
    fs::remove(temp, ec);
    throw;
  }
}

} // namespace detail
} // namespace ksum::io
