#pragma once
// The .msh half of mesh I/O: msh_gmsh.cpp with the Gmsh SDK, msh_nogmsh.cpp without.
#include <ksum/mesh.hpp>

#include <filesystem>

namespace ksum::io::detail {

// Re-reads mesh.source with Gmsh, moves every node to `coords` and writes the model to `path`.
void write_msh(const std::filesystem::path &path, const Mesh &mesh, const Table<double> &coords,
               const MeshWriteOptions &options);

} // namespace ksum::io::detail
