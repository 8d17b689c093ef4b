// The libraries behind runtime/cuda_lazy.hpp's forwarders, opened on first use.
#include "runtime/cuda_lazy.hpp"

#include <cublas_api.h>
#include <cusolver_common.h>
#include <dlfcn.h>
#include <fmt/format.h>

#ifndef KSUM_CUDA_LIBRARY_DIR
#define KSUM_CUDA_LIBRARY_DIR "/usr/local/cuda/lib64"
#endif

namespace ksum::detail {

LazyLibrary::LazyLibrary(std::string soname, std::string fallback)
    : soname_(std::move(soname)), fallback_(std::move(fallback)) {}

void LazyLibrary::open() {
  handle_ = ::dlopen(soname_.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle_)
    return;
  const char *why_soname = ::dlerror(); // the message of the failed dlopen just above
  const std::string reason = why_soname ? why_soname : "not found";
  handle_ = ::dlopen(fallback_.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle_)
    return;
  const char *why_fallback = ::dlerror();
  error_ = fmt::format("{} could not be loaded (it is needed by the GPU's dense linear algebra: "
                       "the 3D FMM, the dense RBF solver, the block Sherman-Morrison): {}; {}",
                       soname_, reason, why_fallback ? why_fallback : fallback_ + ": not found");
}

void *LazyLibrary::symbol(const char *name) {
  std::call_once(once_, [this] { open(); });
  return handle_ ? ::dlsym(handle_, name) : nullptr;
}

const char *LazyLibrary::error_message() {
  std::call_once(once_, [this] { open(); });
  return error_.c_str();
}

LazyLibrary &cublas_library() {
  static LazyLibrary lib(
      fmt::format("libcublas.so.{}", CUBLAS_VER_MAJOR),
      fmt::format("{}/libcublas.so.{}", KSUM_CUDA_LIBRARY_DIR, CUBLAS_VER_MAJOR));
  return lib;
}

LazyLibrary &cusolver_library() {
  static LazyLibrary lib(
      fmt::format("libcusolver.so.{}", CUSOLVER_VER_MAJOR),
      fmt::format("{}/libcusolver.so.{}", KSUM_CUDA_LIBRARY_DIR, CUSOLVER_VER_MAJOR));
  return lib;
}

} // namespace ksum::detail
