// The cost of a large buffer's first touch and release (the page faults behind a fresh 10^8-value
// result), with 4 KiB pages and with transparent huge pages advised (include/ksum/table.hpp's
// allocate_large): g++ -O3 -fopenmp bench/page_fault_probe.cpp -o probe && ./probe [values]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <sys/mman.h>

int main(int argc, char **argv) {
  using Clock = std::chrono::steady_clock;
  const long n = argc > 1 ? std::atol(argv[1]) : 100000000;
  const std::size_t huge = std::size_t{2} << 20;
  const std::size_t size = (n * sizeof(double) + huge - 1) / huge * huge;
  for (const bool advise : {false, true})
    for (int rep = 0; rep < 3; ++rep) {
      auto t = Clock::now();
      auto *a = static_cast<double *>(std::aligned_alloc(huge, size));
      if (advise)
        madvise(a, size, MADV_HUGEPAGE);
#pragma omp parallel for schedule(static)
      for (long k = 0; k < n; ++k)
        a[k] = 0;
      const double fill = std::chrono::duration<double>(Clock::now() - t).count();
      t = Clock::now();
      std::free(a);
      const double release = std::chrono::duration<double>(Clock::now() - t).count();
      std::printf("%s pages, round %d: first touch of %ld doubles %.3f s, release %.3f s\n",
                  advise ? "huge" : "4 KiB", rep, n, fill, release);
    }
}
