// Large Table buffers (include/ksum/table.hpp): 2 MiB-aligned, transparent huge pages advised.
#include <ksum/table.hpp>

#include <cstdlib>
#include <new>
#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace ksum::detail {

void *allocate_large(std::size_t bytes) {
  constexpr std::size_t huge = std::size_t{2} << 20;
  const std::size_t size = (bytes + huge - 1) / huge * huge;
  void *p = std::aligned_alloc(huge, size);
  if (!p)
    throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  // Advice only: where the system refuses, plain pages serve. KSUM_HUGEPAGES=0 turns it off.
  static const bool advise = [] {
    const char *v = std::getenv("KSUM_HUGEPAGES");
    return !(v && v[0] == '0');
  }();
  if (advise)
    madvise(p, size, MADV_HUGEPAGE);
#endif
  return p;
}

void deallocate_large(void *p) noexcept {
  std::free(p);
}

} // namespace ksum::detail
