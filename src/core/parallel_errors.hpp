#pragma once
// Exceptions must not leave an OpenMP region (that calls std::terminate). Loops wrap their body in
// try { … } catch (...) { errors.capture(); }, skip work once failed(), and call rethrow() after
// the region: the first exception reaches the caller unchanged.
#include <atomic>
#include <exception>
#include <mutex>

namespace ksum::detail {

class ParallelErrors {
public:
  void capture() noexcept {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!first_)
      first_ = std::current_exception();
    failed_.store(true, std::memory_order_relaxed);
  }
  bool failed() const noexcept { return failed_.load(std::memory_order_relaxed); }
  void rethrow() const {
    if (first_)
      std::rethrow_exception(first_);
  }

private:
  std::mutex mutex_;
  std::exception_ptr first_;
  std::atomic<bool> failed_{false};
};

} // namespace ksum::detail
