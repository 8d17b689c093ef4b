// Single-precision instantiation of the tiled direct-sum kernels (one file per precision so the two
// compile in parallel).
#include "direct/direct_tiles.cuh"

namespace ksum::detail {
template <> void launch_direct_tiles<float>(Kernel k, const TileArgs<float> &a, void *stream) {
  launch_direct_tiles_impl<float>(k, a, stream);
}
} // namespace ksum::detail
