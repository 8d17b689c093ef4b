#pragma once
// Elementary functions for kernel evaluation, written so that host loops vectorise (no libm calls,
// no branches: selects only) and device code uses the GPU's special-function unit where that is
// accurate. Accuracy: a few ulp in the working precision (tests/kernels/kmath_test.cpp checks it
// against libm).
#include "kernels/hd.hpp"

#include <bit>
#include <cstdint>
#include <type_traits>

namespace ksum::kmath {

template <class T> struct Bits;
template <> struct Bits<float> {
  using U = std::uint32_t;
  static constexpr int mantissa = 23;
  static constexpr int bias = 127;
};
template <> struct Bits<double> {
  using U = std::uint64_t;
  static constexpr int mantissa = 52;
  static constexpr int bias = 1023;
};

template <class T> KSUM_HD typename Bits<T>::U to_bits(T x) {
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<T, float>)
    return static_cast<std::uint32_t>(__float_as_uint(x));
  else
    return static_cast<std::uint64_t>(__double_as_longlong(x));
#else
  return std::bit_cast<typename Bits<T>::U>(x);
#endif
}
template <class T> KSUM_HD T from_bits(typename Bits<T>::U u) {
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<T, float>)
    return __uint_as_float(u);
  else
    return __longlong_as_double(static_cast<long long>(u));
#else
  return std::bit_cast<T>(u);
#endif
}

// The smallest normal number. Squared distances below it count as coincident points: the device's
// ftz instructions flush them to 0 and the host's bit-level seeds are not valid there.
template <class T> constexpr T min_normal() {
  return std::is_same_v<T, float> ? T(1.17549435e-38f) : T(2.2250738585072014e-308);
}

// 1/sqrt(a) for a > 0 (a normal). Host: bit-level seed (3.4 % error) refined by Newton steps, each
// squaring the error, so that the loop vectorises with FMAs only; device: the SFU's approximation.
template <class T> KSUM_HD T rsqrt(T a) {
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<T, float>) {
    float y; // the SFU's approximation (2 ulp); ftz skips rsqrtf's denormal scaling instructions
    asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(a));
    return y;
  } else {
    double y;
    asm("rsqrt.approx.ftz.f64 %0, %1;" : "=d"(y) : "d"(a));
    const double h = 0.5 * a;
    y = y * (1.5 - h * y * y);
    y = y * (1.5 - h * y * y);
    return y;
  }
#else
  using U = typename Bits<T>::U;
  constexpr U magic = std::is_same_v<T, float> ? U(0x5f375a86u) : U(0x5fe6eb50c7b537a9ull);
  T y = from_bits<T>(magic - (to_bits(a) >> 1));
  const T h = T(0.5) * a;
  constexpr int steps =
      std::is_same_v<T, float> ? 3 : 4; // 3.4e-2 -> 1.8e-3 -> 4.6e-6 -> 3e-11 -> 1e-21
  for (int s = 0; s < steps; ++s)
    y = y * (T(1.5) - h * y * y);
  return y;
#endif
}

template <class T> KSUM_HD T sqrt(T a) {
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<T, float>) {
    float y; // one SFU instruction instead of a correctly rounded sqrtf sequence
    asm("sqrt.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(a));
    return y;
  } else {
    return ::sqrt(a);
  }
#else
  return __builtin_sqrt(a); // one vsqrtpd/vsqrtps when built with -fno-math-errno
#endif
}

// sqrt(a) for a > 0 normal, on the fast unit of each side: host a·rsqrt(a) (FMAs only, vectorises),
// device single precision one SFU instruction, device double a·rsqrt(a).
template <class T> KSUM_HD T sqrt_pos(T a) {
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<T, float>)
    return kmath::sqrt(a);
#endif
  return a * kmath::rsqrt(a);
}

// 2^x for x <= 0; returns 0 when the result would be subnormal or underflow.
// Split x = n + f with n integral and |f| <= 1/2, evaluate 2^f by a Chebyshev-fitted polynomial
// (degree 10 in double: 3.7e-16 relative; degree 6 in float: 7.6e-8) and add n to the exponent
// bits.
template <class T> KSUM_HD T exp2_nonpos(T x) {
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<T, float>) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
  }
#endif
  using U = typename Bits<T>::U;
  constexpr T lowest = -T(Bits<T>::bias - 1); // 2^lowest is the smallest normal number
  const bool underflow = x < lowest;
  x = x < lowest ? lowest : x;
  constexpr T shifter =
      std::is_same_v<T, float> ? T(12582912.0f) : T(6755399441055744.0); // 1.5*2^m
  const T m = x + shifter; // rounds x to the nearest integer in the low mantissa bits of m
  const T n = m - shifter;
  const T f = x - n;
  T p;
  if constexpr (std::is_same_v<T, double>) {
    p = 7.072585949269223e-09;
    p = p * f + 1.0208690299958306e-07;
    p = p * f + 1.321544258792169e-06;
    p = p * f + 1.5252657260200837e-05;
    p = p * f + 0.0001540353044173605;
    p = p * f + 0.0013333558230164974;
    p = p * f + 0.009618129107606888;
    p = p * f + 0.05550410866444772;
    p = p * f + 0.24022650695910097;
    p = p * f + 0.69314718055995;
    p = p * f + 1.0;
  } else {
    p = 0.00015461444854736328f;
    p = p * f + 0.0013400427997112274f;
    p = p * f + 0.009618056938052177f;
    p = p * f + 0.05550327152013779f;
    p = p * f + 0.24022650718688965f;
    p = p * f + 0.6931471824645996f;
    p = p * f + 1.0f;
  }
  // n is in [lowest, 0]: its two's complement sits in the low bits of m's mantissa.
  const U ni = to_bits(m) - to_bits(shifter);
  const T r = from_bits<T>(to_bits(p) + (ni << Bits<T>::mantissa));
  return underflow ? T(0) : r;
}

// exp(x) for x <= 0.
template <class T> KSUM_HD T exp_nonpos(T x) {
  return exp2_nonpos<T>(x * T(1.4426950408889634074));
}

// Natural logarithm for x > 0 (normal). Host: x = 2^e m with m in [sqrt(1/2), sqrt(2)),
// log m = 2 atanh(u), u = (m-1)/(m+1), |u| <= 0.1716, by its odd series; device: libdevice.
template <class T> KSUM_HD T log(T x) {
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<T, float>)
    return logf(x);
  else
    return ::log(x);
#else
  using U = typename Bits<T>::U;
  constexpr int mb = Bits<T>::mantissa;
  constexpr U mant_mask = (U(1) << mb) - 1;
  // Offset by sqrt(1/2) so the mantissa lands in [sqrt(1/2), sqrt(2)).
  constexpr U offset = std::is_same_v<T, float> ? U(0x3f3504f3u) : U(0x3fe6a09e667f3bcdull);
  const U ux = to_bits(x) - offset;
  const auto e = static_cast<std::make_signed_t<U>>(ux) >> mb; // unbiased exponent
  const T m = from_bits<T>((ux & mant_mask) + offset);
  const T u = (m - T(1)) / (m + T(1));
  const T s = u * u;
  T p;
  if constexpr (std::is_same_v<T, double>) {
    p = T(1) / 21;
    p = p * s + T(1) / 19;
    p = p * s + T(1) / 17;
    p = p * s + T(1) / 15;
    p = p * s + T(1) / 13;
    p = p * s + T(1) / 11;
    p = p * s + T(1) / 9;
    p = p * s + T(1) / 7;
    p = p * s + T(1) / 5;
    p = p * s + T(1) / 3;
    p = p * s + T(1);
  } else {
    p = T(1) / 9;
    p = p * s + T(1) / 7;
    p = p * s + T(1) / 5;
    p = p * s + T(1) / 3;
    p = p * s + T(1);
  }
  return T(e) * T(0.69314718055994530942) + T(2) * u * p;
#endif
}

// log(x) for x >= 0 that stays finite at 0: log(x + smallest normal). The shift changes no x above
// 2^-969 (float: 2^-102); the kernels use it only where x below that is a coincident pair (tps
// multiplies the log by x, log multiplies it by 0). Written as an add because any select or max
// feeding the bit-level log stops GCC 12 from vectorising the loop.
template <class T> KSUM_HD T log_nonneg(T x) {
  return kmath::log(x + min_normal<T>());
}

} // namespace ksum::kmath
