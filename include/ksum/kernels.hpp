#pragma once
// The kernel catalogue. Every radial kernel is used as K(x, y) = φ(ε |x − y|) (seed 001's
// convention).
#include <span>
#include <string>
#include <string_view>

namespace ksum {

enum class Kernel {
  gaussian,
  multiquadric,
  inverse_multiquadric,
  inverse_quadratic,
  matern0,
  matern2,
  matern4,
  matern6,
  wendland2,
  wendland4,
  wendland6,
  tps,
  cubic,
  linear,
  quintic,
  laplace,
  log
};

enum class Support { global, compact };

struct KernelInfo {
  Kernel kind;
  std::string_view name;    // the name used on the command line and in files
  std::string_view formula; // φ(s) with s = ε r
  int min_degree;           // minimum polynomial degree for a unique interpolant; −1: none needed
  Support support;          // compact kernels vanish for ε r ≥ 1
  bool singular;            // infinite at r = 0; coincident pairs are then defined to contribute 0
};

std::span<const KernelInfo> all_kernels();
const KernelInfo &kernel_info(Kernel k);
// Accepts the catalogue names ("inverse-multiquadric", "tps", …); throws Error(invalid_argument)
// naming the value and listing the valid names.
Kernel parse_kernel(std::string_view name);
std::string kernel_names(std::string_view separator = ", ");

// φ(ε r) and dφ/dr evaluated in double precision by the straightforward formula (libm). This is the
// reference that tests and `ksum` compare the fast paths against; it is not the fast path.
double kernel_value(Kernel k, double eps, double r);
double kernel_derivative(Kernel k, double eps, double r);

} // namespace ksum
