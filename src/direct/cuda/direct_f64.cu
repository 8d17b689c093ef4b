// Double-precision instantiation of the tiled direct-sum kernels.
#include "direct/direct_tiles.cuh"

namespace ksum::detail {
template <> void launch_direct_tiles<double>(Kernel k, const TileArgs<double> &a, void *stream) {
  launch_direct_tiles_impl<double>(k, a, stream);
}
} // namespace ksum::detail
