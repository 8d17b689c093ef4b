// .msh through the Gmsh SDK: Gmsh parses every version of its format, and writing goes through
// Gmsh too, so entities, physical groups and tags survive the round trip with only the nodes moved.
// The library is opened (dlopen, its C API) the first time a .msh file is read or written, not
// linked: linked, its ~90 dependencies (OpenCASCADE, FLTK, X11, …) cost every ksum process 0.1 to
// 0.25 s before main() (issue 26), and a machine without it could not run ksum at all.
#include "io/io_detail.hpp"
#include "io/mesh_detail.hpp"

#include <ksum/error.hpp>
#include <ksum/mesh.hpp>

#include <gmshc.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <dlfcn.h>
#include <fmt/format.h>
#include <mutex>
#include <omp.h>
#include <random>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>

namespace ksum::io {
namespace {

namespace fs = std::filesystem;

// The C API functions used, with the types of the header ksum was built against.
struct GmshApi {
  decltype(&gmshFree) free = nullptr;
  decltype(&gmshInitialize) initialize = nullptr;
  decltype(&gmshFinalize) finalize = nullptr;
  decltype(&gmshOpen) open = nullptr;
  decltype(&gmshWrite) write = nullptr;
  decltype(&gmshOptionSetNumber) set_number = nullptr;
  decltype(&gmshLoggerGetLastError) last_error = nullptr;
  decltype(&gmshModelGetPhysicalGroups) physical_groups = nullptr;
  decltype(&gmshModelGetPhysicalName) physical_name = nullptr;
  decltype(&gmshModelMeshGetNodes) get_nodes = nullptr;
  decltype(&gmshModelMeshGetNodesForPhysicalGroup) group_nodes = nullptr;
  decltype(&gmshModelMeshGetElements) get_elements = nullptr;
  decltype(&gmshModelMeshGetElementProperties) element_properties = nullptr;
  decltype(&gmshModelMeshSetNode) set_node = nullptr;
  std::string failure; // why the library could not be used ("" once it is loaded)
};

// Loaded once per process: the library found when ksum was configured, then the same version by
// its usual name.
const GmshApi &load_gmsh() {
  static GmshApi api;
  static std::once_flag once;
  std::call_once(once, [] {
    const std::string candidates[] = {
#ifdef KSUM_GMSH_LIBRARY
        KSUM_GMSH_LIBRARY,
#endif
        fmt::format("libgmsh.so.{}.{}", GMSH_API_VERSION_MAJOR, GMSH_API_VERSION_MINOR),
        "libgmsh.so"};
    void *handle = nullptr;
    std::string tried;
    for (const auto &name : candidates) {
      handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle)
        break;
      const char *why = dlerror();
      tried += fmt::format("{}{} ({})", tried.empty() ? "" : "; ", name, why ? why : "not found");
    }
    if (!handle) {
      api.failure = fmt::format("the Gmsh library (API {}) could not be opened: {}",
                                GMSH_API_VERSION, tried);
      return;
    }
    std::string missing;
    auto bind = [&](auto &fn, const char *symbol) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(handle, symbol));
      if (!fn)
        missing += fmt::format("{}{}", missing.empty() ? "" : ", ", symbol);
    };
    bind(api.free, "gmshFree");
    bind(api.initialize, "gmshInitialize");
    bind(api.finalize, "gmshFinalize");
    bind(api.open, "gmshOpen");
    bind(api.write, "gmshWrite");
    bind(api.set_number, "gmshOptionSetNumber");
    bind(api.last_error, "gmshLoggerGetLastError");
    bind(api.physical_groups, "gmshModelGetPhysicalGroups");
    bind(api.physical_name, "gmshModelGetPhysicalName");
    bind(api.get_nodes, "gmshModelMeshGetNodes");
    bind(api.group_nodes, "gmshModelMeshGetNodesForPhysicalGroup");
    bind(api.get_elements, "gmshModelMeshGetElements");
    bind(api.element_properties, "gmshModelMeshGetElementProperties");
    bind(api.set_node, "gmshModelMeshSetNode");
    if (!missing.empty())
      api.failure = fmt::format("the Gmsh library lacks {} (built against API {})", missing,
                                GMSH_API_VERSION);
  });
  return api;
}

const GmshApi &gmsh_api(const fs::path &path) {
  const GmshApi &api = load_gmsh();
  if (!api.failure.empty())
    throw Error(ErrorCode::unsupported,
                fmt::format("{}: .msh files are read and written through Gmsh, but {}",
                            detail::display(path), api.failure));
  return api;
}

// Gmsh is one global model per process: one session at a time, finalized on every exit.
std::mutex &gmsh_mutex() {
  static std::mutex m;
  return m;
}

// Gmsh's own arrays (gmshMalloc), released with gmshFree.
template <class V> struct Owned {
  const GmshApi &api;
  V *p = nullptr;
  std::size_t n = 0;
  explicit Owned(const GmshApi &a) : api(a) {}
  ~Owned() { api.free(p); }
  Owned(const Owned &) = delete;
  Owned &operator=(const Owned &) = delete;
  std::vector<V> vec() const { return std::vector<V>(p, p + n); }
};
std::string take_string(const GmshApi &api, char *s) {
  std::string out = s ? s : "";
  api.free(s);
  return out;
}

// Runs a Gmsh C call f(&ierr); a non-zero ierr becomes Error(code) naming the file and Gmsh's
// last logged error.
template <class F>
void call(const GmshApi &api, const fs::path &path, const char *what, ErrorCode code, F &&f) {
  int ierr = 0;
  f(&ierr);
  if (ierr == 0)
    return;
  char *last = nullptr;
  int ierr2 = 0;
  api.last_error(&last, &ierr2);
  std::string reason = ierr2 == 0 ? take_string(api, last) : std::string{};
  if (reason.empty())
    reason = fmt::format("error code {}", ierr);
  throw Error(code, fmt::format("{}: Gmsh could not {}: {}", detail::display(path), what, reason));
}

// gmshInitialize(argc, argv, readConfigFiles, [run,] ierr): Gmsh 4.9 added `run`.
template <class Fn> void initialize(Fn fn, int *ierr) {
  if constexpr (std::is_invocable_v<Fn, int, char **, int, int, int *>)
    fn(0, nullptr, 0, 0, ierr);
  else
    fn(0, nullptr, 0, ierr);
}

// Gmsh sets OpenMP's thread count from its own option (General.NumThreads, default 1) and
// leaves it so: the caller's count is restored, or every later OpenMP loop would run on 1 thread.
class Session {
public:
  explicit Session(const fs::path &path)
      : api_(gmsh_api(path)), lock_(gmsh_mutex()), threads_(omp_get_max_threads()) {
    call(api_, path, "start", ErrorCode::internal, [&](int *e) {
      initialize(api_.initialize, e);
      if (*e == 0)
        api_.set_number("General.Terminal", 0, e);
      if (*e == 0)
        api_.set_number("General.Verbosity", 1, e);
    });
  }
  ~Session() {
    int ierr = 0;
    api_.finalize(&ierr);
    omp_set_num_threads(threads_);
  }
  Session(const Session &) = delete;
  Session &operator=(const Session &) = delete;
  const GmshApi &api() const { return api_; }

private:
  const GmshApi &api_;
  std::lock_guard<std::mutex> lock_;
  int threads_;
};

// Every node of the model: tags and coordinates.
void all_nodes(const GmshApi &api, const fs::path &path, std::vector<std::size_t> &tags,
               std::vector<double> &xyz) {
  Owned<std::size_t> t(api);
  Owned<double> c(api), par(api);
  call(api, path, "list the nodes", ErrorCode::parse, [&](int *e) {
    api.get_nodes(&t.p, &t.n, &c.p, &c.n, &par.p, &par.n, -1, -1, 0, 0, e);
  });
  tags = t.vec();
  xyz = c.vec();
}

std::vector<std::pair<int, int>> physical_groups(const GmshApi &api, const fs::path &path) {
  Owned<int> dt(api);
  call(api, path, "list the physical groups", ErrorCode::parse,
       [&](int *e) { api.physical_groups(&dt.p, &dt.n, -1, e); });
  std::vector<std::pair<int, int>> out;
  for (std::size_t i = 0; i + 1 < dt.n; i += 2)
    out.emplace_back(dt.p[i], dt.p[i + 1]);
  return out;
}

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
  try {
    return load_gmsh().failure.empty();
  } catch (...) {
    return false;
  }
}

Mesh read_mesh(const fs::path &path, bool surface_3d) {
  { // a missing or unreadable file gets the system's reason (Gmsh only logs it)
    auto probe = detail::open_for_reading(path);
  }
  Mesh mesh;
  mesh.source = path;
  Session session(path);
  const GmshApi &api = session.api();
  call(api, path, "read the file", ErrorCode::parse,
       [&](int *e) { api.open(path.string().c_str(), e); });

  std::vector<std::size_t> tags;
  std::vector<double> xyz;
  all_nodes(api, path, tags, xyz);
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
    {
      Owned<int> ty(api);
      std::size_t **et = nullptr, **en = nullptr, *et_n = nullptr, *en_n = nullptr, et_nn = 0,
                  en_nn = 0;
      int ierr = 0;
      api.get_elements(&ty.p, &ty.n, &et, &et_n, &et_nn, &en, &en_n, &en_nn, dim, -1, &ierr);
      // Gmsh's arrays into vectors, then freed (also when the call failed part-way).
      for (std::size_t k = 0; k < et_nn; ++k) {
        if (ierr == 0)
          etags.emplace_back(et[k], et[k] + et_n[k]);
        api.free(et[k]);
      }
      for (std::size_t k = 0; k < en_nn; ++k) {
        if (ierr == 0)
          enodes.emplace_back(en[k], en[k] + en_n[k]);
        api.free(en[k]);
      }
      api.free(et);
      api.free(et_n);
      api.free(en);
      api.free(en_n);
      call(api, path, "list the elements", ErrorCode::parse, [&](int *e) { *e = ierr; });
      types = ty.vec();
      if (etags.size() != types.size() || enodes.size() != types.size())
        throw Error(ErrorCode::parse, fmt::format("{}: Gmsh listed {} element types but {} and {} "
                                                  "tag lists",
                                                  detail::display(path), types.size(),
                                                  etags.size(), enodes.size()));
    }
    for (std::size_t k = 0; k < types.size(); ++k) {
      if (etags[k].empty())
        continue;
      std::string name;
      int edim = 0, order = 0, nn = 0, primary = 0;
      call(api, path, "describe an element type", ErrorCode::parse, [&](int *e) {
        char *cname = nullptr;
        Owned<double> local(api);
        api.element_properties(types[k], &cname, &edim, &order, &nn, &local.p, &local.n, &primary,
                               e);
        name = take_string(api, cname);
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

  for (const auto &[gdim, gtag] : physical_groups(api, path)) {
    PhysicalGroup g;
    g.dim = gdim;
    g.tag = gtag;
    std::vector<std::size_t> gnodes;
    call(api, path, "read a physical group", ErrorCode::parse, [&](int *e) {
      char *cname = nullptr;
      api.physical_name(gdim, gtag, &cname, e);
      g.name = take_string(api, cname);
      if (*e != 0)
        return;
      Owned<std::size_t> t(api);
      Owned<double> c(api);
      api.group_nodes(gdim, gtag, &t.p, &t.n, &c.p, &c.n, e);
      gnodes = t.vec();
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
  const GmshApi &api = session.api();
  call(api, mesh.source, "re-read the file", ErrorCode::parse,
       [&](int *e) { api.open(mesh.source.string().c_str(), e); });
  std::vector<std::size_t> tags;
  std::vector<double> xyz;
  all_nodes(api, mesh.source, tags, xyz);
  if (static_cast<std::int64_t>(tags.size()) != coords.rows())
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("{}: has {} nodes now but {} when it was read (changed since?)",
                            display(mesh.source), tags.size(), coords.rows()));
  std::unordered_map<std::int64_t, std::int64_t> row_of;
  row_of.reserve(mesh.node_tags.size());
  for (std::size_t i = 0; i < mesh.node_tags.size(); ++i)
    row_of.emplace(mesh.node_tags[i], static_cast<std::int64_t>(i));
  call(api, path, "move the nodes", ErrorCode::internal, [&](int *e) {
    double x[3];
    for (const auto t : tags) {
      const auto it = row_of.find(static_cast<std::int64_t>(t));
      if (it == row_of.end())
        throw Error(ErrorCode::shape_mismatch,
                    fmt::format("{}: node {} was not there when it was read (changed since?)",
                                display(mesh.source), t));
      for (int a = 0; a < 3; ++a)
        x[a] = coords(it->second, a);
      api.set_node(t, x, 3, nullptr, 0, e);
      if (*e != 0)
        return;
    }
  });
  if (options.msh_version != 4.1 && options.msh_version != 2.2)
    throw Error(ErrorCode::invalid_argument, fmt::format("{}: MSH version {} (expected 4.1 or 2.2)",
                                                         display(path), options.msh_version));
  // Every element read, in a group or not; MSH 2.2 drops the groups with SaveAll, so there only
  // the elements of the physical groups are written (all of them in a typical mesh).
  const bool any_group = !physical_groups(api, path).empty();
  call(api, path, "set the output format", ErrorCode::internal, [&](int *e) {
    api.set_number("Mesh.MshFileVersion", options.msh_version, e);
    if (*e == 0)
      api.set_number("Mesh.Binary", options.binary ? 1 : 0, e);
    if (*e == 0)
      api.set_number("Mesh.SaveAll", options.msh_version == 2.2 && any_group ? 0 : 1, e);
  });
  // Through a temporary file in the same folder (Gmsh picks the format from the extension).
  static std::atomic<unsigned> counter{0};
  fs::path temp = path;
  temp.replace_filename(fmt::format(".{}.tmp{:08x}{}.msh", path.filename().string(),
                                    std::random_device{}(), counter++));
  try {
    call(api, path, "write the mesh", ErrorCode::io,
         [&](int *e) { api.write(temp.string().c_str(), e); });
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
