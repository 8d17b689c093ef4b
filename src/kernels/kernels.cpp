#include <ksum/error.hpp>
#include <ksum/kernels.hpp>

#include <array>
#include <cmath>
#include <fmt/format.h>

namespace ksum {
namespace {

constexpr std::array<KernelInfo, 17> catalogue{{
    {Kernel::gaussian, "gaussian", "exp(-s^2)", -1, Support::global, false},
    {Kernel::multiquadric, "multiquadric", "sqrt(1+s^2)", 0, Support::global, false},
    {Kernel::inverse_multiquadric, "inverse-multiquadric", "1/sqrt(1+s^2)", -1, Support::global,
     false},
    {Kernel::inverse_quadratic, "inverse-quadratic", "1/(1+s^2)", -1, Support::global, false},
    {Kernel::matern0, "matern0", "exp(-s)", -1, Support::global, false},
    {Kernel::matern2, "matern2", "exp(-s)(s+1)", -1, Support::global, false},
    {Kernel::matern4, "matern4", "exp(-s)(s^2+3s+3)", -1, Support::global, false},
    {Kernel::matern6, "matern6", "exp(-s)(s^3+6s^2+15s+15)", -1, Support::global, false},
    {Kernel::wendland2, "wendland2", "(1-s)_+^4 (4s+1)", -1, Support::compact, false},
    {Kernel::wendland4, "wendland4", "(1-s)_+^6 (35s^2+18s+3)", -1, Support::compact, false},
    {Kernel::wendland6, "wendland6", "(1-s)_+^8 (32s^3+25s^2+8s+1)", -1, Support::compact, false},
    {Kernel::tps, "tps", "s^2 log s", 1, Support::global, false},
    {Kernel::cubic, "cubic", "s^3", 1, Support::global, false},
    {Kernel::linear, "linear", "s", 0, Support::global, false},
    {Kernel::quintic, "quintic", "s^5", 2, Support::global, false},
    {Kernel::laplace, "laplace", "1/s (3D)", -1, Support::global, true},
    {Kernel::log, "log", "-log s (2D)", 0, Support::global, true},
}};

} // namespace

const char *to_string(ErrorCode code) noexcept {
  switch (code) {
  case ErrorCode::invalid_argument:
    return "invalid argument";
  case ErrorCode::io:
    return "i/o error";
  case ErrorCode::parse:
    return "parse error";
  case ErrorCode::non_finite:
    return "non-finite value";
  case ErrorCode::empty_input:
    return "empty input";
  case ErrorCode::shape_mismatch:
    return "shape mismatch";
  case ErrorCode::unsupported:
    return "unsupported";
  case ErrorCode::device:
    return "device error";
  case ErrorCode::internal:
    return "internal error";
  case ErrorCode::not_converged:
    return "not converged";
  }
  return "error";
}

std::span<const KernelInfo> all_kernels() {
  return catalogue;
}

const KernelInfo &kernel_info(Kernel k) {
  for (const auto &info : catalogue)
    if (info.kind == k)
      return info;
  throw Error(ErrorCode::internal, "kernel_info: unknown kernel enumerator");
}

std::string kernel_names(std::string_view separator) {
  std::string s;
  for (const auto &info : catalogue) {
    if (!s.empty())
      s += separator;
    s += info.name;
  }
  return s;
}

Kernel parse_kernel(std::string_view name) {
  for (const auto &info : catalogue)
    if (info.name == name)
      return info.kind;
  throw Error(ErrorCode::invalid_argument,
              fmt::format("unknown kernel '{}'; valid kernels: {}", name, kernel_names()));
}

double kernel_value(Kernel k, double eps, double r) {
  const double s = eps * r;
  switch (k) {
  case Kernel::gaussian:
    return std::exp(-s * s);
  case Kernel::multiquadric:
    return std::sqrt(1.0 + s * s);
  case Kernel::inverse_multiquadric:
    return 1.0 / std::sqrt(1.0 + s * s);
  case Kernel::inverse_quadratic:
    return 1.0 / (1.0 + s * s);
  case Kernel::matern0:
    return std::exp(-s);
  case Kernel::matern2:
    return std::exp(-s) * (s + 1.0);
  case Kernel::matern4:
    return std::exp(-s) * (s * s + 3.0 * s + 3.0);
  case Kernel::matern6:
    return std::exp(-s) * (s * s * s + 6.0 * s * s + 15.0 * s + 15.0);
  case Kernel::wendland2:
    return s < 1 ? std::pow(1 - s, 4) * (4 * s + 1) : 0.0;
  case Kernel::wendland4:
    return s < 1 ? std::pow(1 - s, 6) * (35 * s * s + 18 * s + 3) : 0.0;
  case Kernel::wendland6:
    return s < 1 ? std::pow(1 - s, 8) * (32 * s * s * s + 25 * s * s + 8 * s + 1) : 0.0;
  case Kernel::tps:
    return s > 0 ? s * s * std::log(s) : 0.0;
  case Kernel::cubic:
    return s * s * s;
  case Kernel::linear:
    return s;
  case Kernel::quintic:
    return std::pow(s, 5);
  case Kernel::laplace:
    return s > 0 ? 1.0 / s : 0.0;
  case Kernel::log:
    return s > 0 ? -std::log(s) : 0.0;
  }
  throw Error(ErrorCode::internal, "kernel_value: unknown kernel enumerator");
}

double kernel_derivative(Kernel k, double eps, double r) {
  const double s = eps * r;
  double dphi = 0; // dφ/ds
  switch (k) {
  case Kernel::gaussian:
    dphi = -2 * s * std::exp(-s * s);
    break;
  case Kernel::multiquadric:
    dphi = s / std::sqrt(1 + s * s);
    break;
  case Kernel::inverse_multiquadric:
    dphi = -s / std::pow(1 + s * s, 1.5);
    break;
  case Kernel::inverse_quadratic:
    dphi = -2 * s / ((1 + s * s) * (1 + s * s));
    break;
  case Kernel::matern0:
    dphi = s > 0 ? -std::exp(-s) : 0.0;
    break;
  case Kernel::matern2:
    dphi = -s * std::exp(-s);
    break;
  case Kernel::matern4:
    dphi = -s * (s + 1) * std::exp(-s);
    break;
  case Kernel::matern6:
    dphi = -s * (s * s + 3 * s + 3) * std::exp(-s);
    break;
  case Kernel::wendland2:
    dphi = s < 1 ? -20 * s * std::pow(1 - s, 3) : 0.0;
    break;
  case Kernel::wendland4:
    dphi = s < 1 ? -56 * s * (5 * s + 1) * std::pow(1 - s, 5) : 0.0;
    break;
  case Kernel::wendland6:
    dphi = s < 1 ? -22 * s * (16 * s * s + 7 * s + 1) * std::pow(1 - s, 7) : 0.0;
    break;
  case Kernel::tps:
    dphi = s > 0 ? 2 * s * std::log(s) + s : 0.0;
    break;
  case Kernel::cubic:
    dphi = 3 * s * s;
    break;
  case Kernel::linear:
    dphi = s > 0 ? 1.0 : 0.0;
    break;
  case Kernel::quintic:
    dphi = 5 * std::pow(s, 4);
    break;
  case Kernel::laplace:
    dphi = s > 0 ? -1 / (s * s) : 0.0;
    break;
  case Kernel::log:
    dphi = s > 0 ? -1 / s : 0.0;
    break;
  }
  return eps * dphi;
}

} // namespace ksum
