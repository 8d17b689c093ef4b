#include <ksum/error.hpp>
#include <ksum/reference.hpp>

#include <cmath>
#include <vector>

namespace ksum {

Table<double> reference_sum(Kernel k, double eps, const Table<double> &sources,
                            const Table<double> &targets, const Table<double> &weights,
                            bool gradient, bool self, std::span<const std::int64_t> rows) {
  const std::int64_t n = sources.rows(), d = sources.cols(), nrhs = weights.cols();
  if (targets.cols() != d || weights.rows() != n)
    throw Error(ErrorCode::shape_mismatch, "reference_sum: inconsistent shapes");
  const std::int64_t cpr = gradient ? 1 + d : 1;
  Table<double> out(static_cast<std::int64_t>(rows.size()), nrhs * cpr);
  std::vector<long double> acc(static_cast<std::size_t>(nrhs * cpr));
  std::vector<double> diff(static_cast<std::size_t>(d));
  for (std::size_t t = 0; t < rows.size(); ++t) {
    const std::int64_t i = rows[t];
    std::fill(acc.begin(), acc.end(), 0.0L);
    for (std::int64_t j = 0; j < n; ++j) {
      if (self && i == j)
        continue;
      double r2 = 0;
      for (std::int64_t c = 0; c < d; ++c) {
        diff[c] = targets(i, c) - sources(j, c);
        r2 += diff[c] * diff[c];
      }
      const double r = std::sqrt(r2);
      const double v = kernel_value(k, eps, r);
      // ∇ₓφ(ε|x−y|) = φ'(r) (x−y)/r; 0 where r = 0 (the convention of the fast paths).
      const double dr = (gradient && r > 0) ? kernel_derivative(k, eps, r) / r : 0.0;
      for (std::int64_t q = 0; q < nrhs; ++q) {
        const double wj = weights(j, q);
        acc[q * cpr] += static_cast<long double>(wj) * v;
        if (gradient)
          for (std::int64_t c = 0; c < d; ++c)
            acc[q * cpr + 1 + c] += static_cast<long double>(wj) * dr * diff[c];
      }
    }
    for (std::int64_t c = 0; c < nrhs * cpr; ++c)
      out(static_cast<std::int64_t>(t), c) = static_cast<double>(acc[c]);
  }
  return out;
}

} // namespace ksum
