#pragma once
// ksum::Error: the one exception type of the library. The code says what kind of failure it was;
// the message names the offending input (file, line, column, index, value) so a user can fix it.
#include <stdexcept>
#include <string>

namespace ksum {

enum class ErrorCode {
  invalid_argument, // an option or parameter out of its domain
  io,               // a file could not be opened, read or written
  parse,            // a file's content is malformed (bad number, ragged row, bad header)
  non_finite,       // NaN or Inf in the input
  empty_input,      // no rows or no columns where some are needed
  shape_mismatch,   // arrays whose sizes do not agree
  unsupported,      // a valid request this build or device cannot serve
  device,           // a CUDA runtime failure
  internal,         // a broken invariant: a bug in ksum
  not_converged     // an iterative solver stopped at its iteration limit above its tolerance
};

const char *to_string(ErrorCode code) noexcept;

class Error : public std::runtime_error {
public:
  Error(ErrorCode code, const std::string &message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const noexcept { return code_; }

private:
  ErrorCode code_;
};

} // namespace ksum
