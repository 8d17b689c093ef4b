// .msh without the Gmsh SDK: reading and writing are refused with the way to get them.
#include "io/io_detail.hpp"
#include "io/mesh_detail.hpp"

#include <ksum/error.hpp>
#include <ksum/mesh.hpp>

#include <fmt/format.h>

namespace ksum::io {
namespace {

[[noreturn]] void refuse(const std::filesystem::path &path) {
  throw Error(ErrorCode::unsupported,
              fmt::format("{}: this ksum was built without the Gmsh SDK, which reads and writes "
                          ".msh (install libgmsh-dev, e.g. scripts/setup.sh, and rebuild)",
                          detail::display(path)));
}

} // namespace

bool have_gmsh() noexcept {
  return false;
}

Mesh read_mesh(const std::filesystem::path &path, bool) {
  refuse(path);
}

namespace detail {
void write_msh(const std::filesystem::path &path, const Mesh &, const Table<double> &,
               const MeshWriteOptions &) {
  refuse(path);
}
} // namespace detail
} // namespace ksum::io
