#pragma once
// Kernel functors shared by the CPU and GPU direct sums (and later the FMM near field).
// Each is evaluated on q = (c r)², the squared distance between coordinates pre-scaled by
// c = coord_scale(ε), so the inner loop never multiplies by ε: c = ε, except for the Gaussian,
// where c = ε·sqrt(log2 e) makes K = 2^(−q). value(q) gives K; value(q, dk) also gives dk = dK/dq,
// from which ∇ₓK = 2 c² dK/dq (x − y) = 2 c · dK/dq · (x' − y') in scaled coordinates x' = c x.
// Singular kernels (laplace, log) and kernels with a singular gradient define the value at q = 0 as
// 0.
#include "kernels/kmath.hpp"

#include <ksum/error.hpp>
#include <ksum/kernels.hpp>

namespace ksum::kdef {

using kmath::exp2_nonpos;
using kmath::exp_nonpos;
using kmath::rsqrt;
using kmath::sqrt;

template <class T> struct Gaussian {
  static constexpr Kernel kind = Kernel::gaussian;
  static constexpr double coord_scale(double eps) {
    return eps * 1.2011224087864498;
  } // sqrt(log2 e)
  KSUM_HD T value(T q) const { return exp2_nonpos(-q); }
  KSUM_HD T value(T q, T &dk) const {
    const T v = exp2_nonpos(-q);
    dk = T(-0.69314718055994531) * v;
    return v;
  }
};

template <class T> struct Multiquadric {
  static constexpr Kernel kind = Kernel::multiquadric;
  static constexpr double p0 = 1; // p = 1 + q
  static constexpr double coord_scale(double eps) { return eps; }
  KSUM_HD T value(T p) const { return kmath::sqrt_pos(p); }
  KSUM_HD T value(T p, T &dk) const {
    const T y = rsqrt(p);
    dk = T(0.5) * y;
    return p * y;
  }
};

template <class T> struct InverseMultiquadric {
  static constexpr Kernel kind = Kernel::inverse_multiquadric;
  static constexpr double p0 = 1; // p = 1 + q
  static constexpr double coord_scale(double eps) { return eps; }
  KSUM_HD T value(T p) const { return rsqrt(p); }
  KSUM_HD T value(T p, T &dk) const {
    const T y = rsqrt(p);
    dk = T(-0.5) * y * y * y;
    return y;
  }
};

template <class T> struct InverseQuadratic {
  static constexpr Kernel kind = Kernel::inverse_quadratic;
  static constexpr double p0 = 1; // p = 1 + q
  static constexpr double coord_scale(double eps) { return eps; }
  KSUM_HD T value(T p) const { return T(1) / p; }
  KSUM_HD T value(T p, T &dk) const {
    const T v = T(1) / p;
    dk = -v * v;
    return v;
  }
};

// Matérn family: e^{−s} P(s), s = sqrt(q) (seed 001 table 1: M2, M4, M6; M0 is e^{−s}).
template <class T> struct Matern0 {
  static constexpr Kernel kind = Kernel::matern0;
  static constexpr double coord_scale(double eps) { return eps; }
  KSUM_HD T value(T q) const { return exp_nonpos(-sqrt(q)); }
  KSUM_HD T value(T q, T &dk) const {
    const T s = sqrt(q), e = exp_nonpos(-s);
    dk = q >= kmath::min_normal<T>() ? T(-0.5) * e / s : T(0); // the cusp at 0: gradient 0
    return e;
  }
};

template <class T> struct Matern2 {
  static constexpr Kernel kind = Kernel::matern2;
  static constexpr double coord_scale(double eps) { return eps; }
  KSUM_HD T value(T q) const {
    const T s = sqrt(q);
    return exp_nonpos(-s) * (s + T(1));
  }
  KSUM_HD T value(T q, T &dk) const {
    const T s = sqrt(q), e = exp_nonpos(-s);
    dk = T(-0.5) * e;
    return e * (s + T(1));
  }
};

template <class T> struct Matern4 {
  static constexpr Kernel kind = Kernel::matern4;
  static constexpr double coord_scale(double eps) { return eps; }
  KSUM_HD T value(T q) const {
    const T s = sqrt(q);
    return exp_nonpos(-s) * (q + T(3) * s + T(3));
  }
  KSUM_HD T value(T q, T &dk) const {
    const T s = sqrt(q), e = exp_nonpos(-s);
    dk = T(-0.5) * (s + T(1)) * e;
    return e * (q + T(3) * s + T(3));
  }
};

template <class T> struct Matern6 {
  static constexpr Kernel kind = Kernel::matern6;
  static constexpr double coord_scale(double eps) { return eps; }
  KSUM_HD T value(T q) const {
    const T s = sqrt(q);
    return exp_nonpos(-s) * (((s + T(6)) * s + T(15)) * s + T(15));
  }
  KSUM_HD T value(T q, T &dk) const {
    const T s = sqrt(q), e = exp_nonpos(-s);
    dk = T(-0.5) * ((s + T(3)) * s + T(3)) * e;
    return e * (((s + T(6)) * s + T(15)) * s + T(15));
  }
};

// Wendland functions (1 − s)_+^k P(s), compactly supported on s < 1 (seed 001 table 1: W2, W4, W6).
template <class T> struct Wendland2 {
  static constexpr Kernel kind = Kernel::wendland2;
  static constexpr double coord_scale(double eps) { return eps; }
  KSUM_HD T value(T q) const {
    const T s = sqrt(q), t = s < T(1) ? T(1) - s : T(0), t2 = t * t;
    return t2 * t2 * (T(4) * s + T(1));
  }
  KSUM_HD T value(T q, T &dk) const {
    const T s = sqrt(q), t = s < T(1) ? T(1) - s : T(0), t3 = t * t * t;
    dk = T(-10) * t3;
    return t3 * t * (T(4) * s + T(1));
  }
};

template <class T> struct Wendland4 {
  static constexpr Kernel kind = Kernel::wendland4;
  static constexpr double coord_scale(double eps) { return eps; }
  KSUM_HD T value(T q) const {
    const T s = sqrt(q), t = s < T(1) ? T(1) - s : T(0), t2 = t * t;
    return t2 * t2 * t2 * (T(35) * q + T(18) * s + T(3));
  }
  KSUM_HD T value(T q, T &dk) const {
    const T s = sqrt(q), t = s < T(1) ? T(1) - s : T(0), t2 = t * t, t5 = t2 * t2 * t;
    dk = T(-28) * t5 * (T(5) * s + T(1));
    return t5 * t * (T(35) * q + T(18) * s + T(3));
  }
};

template <class T> struct Wendland6 {
  static constexpr Kernel kind = Kernel::wendland6;
  static constexpr double coord_scale(double eps) { return eps; }
  KSUM_HD T value(T q) const {
    const T s = sqrt(q), t = s < T(1) ? T(1) - s : T(0), t2 = t * t, t4 = t2 * t2;
    return t4 * t4 * (((T(32) * s + T(25)) * s + T(8)) * s + T(1));
  }
  KSUM_HD T value(T q, T &dk) const {
    const T s = sqrt(q), t = s < T(1) ? T(1) - s : T(0), t2 = t * t, t7 = t2 * t2 * t2 * t;
    dk = T(-11) * t7 * ((T(16) * s + T(7)) * s + T(1));
    return t7 * t * (((T(32) * s + T(25)) * s + T(8)) * s + T(1));
  }
};

// Thin-plate spline s² log s = q log(q) / 2; q = 0 gives 0 · log_nonneg(0) = 0, with no branch.
template <class T> struct Tps {
  static constexpr Kernel kind = Kernel::tps;
  static constexpr double coord_scale(double eps) { return eps; }
  KSUM_HD T value(T q) const { return T(0.5) * q * kmath::log_nonneg(q); }
  KSUM_HD T value(T q, T &dk) const {
    const T l = kmath::log_nonneg(q);
    dk = q >= kmath::min_normal<T>() ? T(0.5) * (l + T(1)) : T(0);
    return T(0.5) * q * l;
  }
};

template <class T> struct Cubic {
  static constexpr Kernel kind = Kernel::cubic;
  static constexpr double coord_scale(double eps) { return eps; }
  KSUM_HD T value(T q) const { return q * sqrt(q); }
  KSUM_HD T value(T q, T &dk) const {
    const T s = sqrt(q);
    dk = T(1.5) * s;
    return q * s;
  }
};

template <class T> struct Linear {
  static constexpr Kernel kind = Kernel::linear;
  static constexpr double coord_scale(double eps) { return eps; }
  KSUM_HD T value(T q) const { return sqrt(q); }
  KSUM_HD T value(T q, T &dk) const {
    const T s = sqrt(q);
    dk = q >= kmath::min_normal<T>() ? T(0.5) / s : T(0);
    return s;
  }
};

template <class T> struct Quintic {
  static constexpr Kernel kind = Kernel::quintic;
  static constexpr double coord_scale(double eps) { return eps; }
  KSUM_HD T value(T q) const { return q * q * sqrt(q); }
  KSUM_HD T value(T q, T &dk) const {
    const T s = sqrt(q);
    dk = T(2.5) * q * s;
    return q * q * s;
  }
};

// 1/r in 3D (no 1/4π): the electrostatic all-pairs kernel of seed 004 Paper I.
template <class T> struct Laplace {
  static constexpr Kernel kind = Kernel::laplace;
  static constexpr double coord_scale(double eps) { return eps; }
  KSUM_HD T value(T q) const { return q >= kmath::min_normal<T>() ? rsqrt(q) : T(0); }
  KSUM_HD T value_fast(T q) const { return rsqrt(q); } // +inf at q = 0
  KSUM_HD T value(T q, T &dk) const {
    const T y = q >= kmath::min_normal<T>() ? rsqrt(q) : T(0);
    dk = T(-0.5) * y * y * y;
    return y;
  }
};

// −log r, the 2D free-space kernel: −log(q)/2, defined as 0 at q = 0 by a 0/1 factor (a select on
// the result would keep GCC 12 from vectorising the loop).
template <class T> struct Log {
  static constexpr Kernel kind = Kernel::log;
  static constexpr double coord_scale(double eps) { return eps; }
  KSUM_HD T value(T q) const {
    return T(-0.5) * kmath::log_nonneg(q) * (q >= kmath::min_normal<T>() ? T(1) : T(0));
  }
  KSUM_HD T value_fast(T q) const { return T(-0.5) * kmath::log(q); } // not finite at q = 0
  KSUM_HD T value(T q, T &dk) const {
    dk = q >= kmath::min_normal<T>() ? T(-0.5) / q : T(0);
    return value(q);
  }
};

// The offset p0 of a functor (0 when it declares none).
template <class K> constexpr double p_offset() {
  if constexpr (requires { K::p0; })
    return K::p0;
  else
    return 0.0;
}

// The same kernel in float (every functor is a template on its value type): the FMM's mixed
// precision evaluates a double plan's near pairs with it.
template <class K> struct in_float_t;
template <template <class> class KT> struct in_float_t<KT<double>> { using type = KT<float>; };
template <class K> using in_float = typename in_float_t<K>::type;

// Whether a functor has the unchecked value_fast (described at the top of this file).
template <class K, class T>
concept HasFastValue = requires(const K &k, T p) {
  k.value_fast(p);
};

// Calls f(functor) for the runtime kernel kind: one switch, used by every backend.
template <class T, class F> decltype(auto) visit(Kernel k, F &&f) {
  switch (k) {
  case Kernel::gaussian:
    return f(Gaussian<T>{});
  case Kernel::multiquadric:
    return f(Multiquadric<T>{});
  case Kernel::inverse_multiquadric:
    return f(InverseMultiquadric<T>{});
  case Kernel::inverse_quadratic:
    return f(InverseQuadratic<T>{});
  case Kernel::matern0:
    return f(Matern0<T>{});
  case Kernel::matern2:
    return f(Matern2<T>{});
  case Kernel::matern4:
    return f(Matern4<T>{});
  case Kernel::matern6:
    return f(Matern6<T>{});
  case Kernel::wendland2:
    return f(Wendland2<T>{});
  case Kernel::wendland4:
    return f(Wendland4<T>{});
  case Kernel::wendland6:
    return f(Wendland6<T>{});
  case Kernel::tps:
    return f(Tps<T>{});
  case Kernel::cubic:
    return f(Cubic<T>{});
  case Kernel::linear:
    return f(Linear<T>{});
  case Kernel::quintic:
    return f(Quintic<T>{});
  case Kernel::laplace:
    return f(Laplace<T>{});
  case Kernel::log:
    return f(Log<T>{});
  }
  return f(Laplace<T>{}); // unreachable: every enumerator is handled above
}

// The strictly positive definite kernels: those that serve local RBF interpolants without a
// polynomial.
constexpr bool strictly_positive_definite(Kernel k) {
  return k == Kernel::gaussian || k == Kernel::inverse_multiquadric ||
         k == Kernel::inverse_quadratic || k == Kernel::matern0 || k == Kernel::matern2 ||
         k == Kernel::matern4 || k == Kernel::matern6 || k == Kernel::wendland2 ||
         k == Kernel::wendland4 || k == Kernel::wendland6;
}

// visit() restricted to the strictly positive definite kernels: f is instantiated for those only.
template <class T, class F> decltype(auto) visit_pd(Kernel k, F &&f) {
  return visit<T>(k, [&](auto kf) -> decltype(f(Gaussian<T>{})) {
    if constexpr (strictly_positive_definite(decltype(kf)::kind))
      return f(kf);
    else
      throw Error(ErrorCode::invalid_argument,
                  "this operation needs a strictly positive definite kernel");
  });
}

// The scale applied to coordinates for kernel k.
inline double coord_scale(Kernel k, double eps) {
  return visit<double>(k, [eps](auto kf) { return decltype(kf)::coord_scale(eps); });
}

} // namespace ksum::kdef
