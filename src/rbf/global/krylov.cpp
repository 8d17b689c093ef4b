// Restarted GMRES (Saad & Schultz), right-preconditioned by the L-set operator τ, on the system
// with the polynomial projected out:
//   Q Φ τ(y) = Q f,  λ = τ(y),  Q = I − Q_Π Q_Πᵀ (Q_Π: orthonormal basis of range Π).
// τ(y) satisfies Πᵀλ = 0 by construction (each ζ_l annihilates the polynomials), so λ and the
// least-squares polynomial c = argmin ‖f − Φλ − Πc‖ solve (4) once Q(f − Φλ) = 0. The value
// columns run in lockstep: one batched matvec per Krylov step serves all of them.
#include "rbf/global/solvers.hpp"

#include <ksum/error.hpp>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <omp.h>

namespace ksum::rbf {

namespace {

struct Column {
  std::vector<std::vector<double>> V; // Arnoldi basis
  Eigen::MatrixXd H;                  // Hessenberg, after the Givens rotations: upper triangular
  std::vector<double> cs, sn, g;
  std::vector<double> y; // the accumulated solution in the preconditioned variable
  double fnorm = 0;
  int j = 0; // Arnoldi steps done in the current cycle
  bool in_cycle = false, converged = false;
};

} // namespace

SolveResult solve_gmres(KernelMatVec &A, const TauOperator &tau, const Table<double> &P,
                        const Table<double> &f, const IterSettings &it) {
  const std::int64_t n = f.rows(), nc = f.cols(), m = P.cols();
  const int nt = it.threads > 0 ? it.threads : omp_get_max_threads();
  const int restart = std::max(1, it.restart);
  const Rows &rows = it.rows;
  SolveResult res;
  // x·y over all rows (all ranks).
  const auto gdot = [&](const double *a, const double *b) { return rows.sum(dot(a, b, n, nt)); };
  // Q_Πᵀ v over all rows.
  const auto qt = [&](const Eigen::MatrixXd &Q, const double *v) {
    Eigen::VectorXd c = Q.transpose() * Eigen::Map<const Eigen::VectorXd>(v, n);
    rows.sum(c.data(), c.size());
    return c;
  };

  // Q_Π and R: in one process from a Householder QR of Π; over ranks (rows spread) by CholeskyQR2
  // (R from the Cholesky factor of the summed ΠᵀΠ, twice, which brings Q_Π to orthonormality at
  // rounding level when Π is not very ill-conditioned: Π is scaled to [−1, 1]^d, polynomial.hpp).
  Eigen::MatrixXd QP, RP;
  if (m > 0) {
    const Eigen::Map<const Eigen::MatrixXd> Pm(P.data(), n, m);
    if (rows.comm == nullptr) {
      const Eigen::HouseholderQR<Eigen::MatrixXd> qr(Pm);
      QP = qr.householderQ() * Eigen::MatrixXd::Identity(n, m);
      RP = qr.matrixQR().topLeftCorner(m, m).triangularView<Eigen::Upper>();
    } else {
      QP = Pm;
      RP = Eigen::MatrixXd::Identity(m, m);
      for (int pass = 0; pass < 2; ++pass) {
        Eigen::MatrixXd G = QP.transpose() * QP;
        rows.sum(G.data(), G.size());
        const Eigen::LLT<Eigen::MatrixXd> llt(G);
        if (llt.info() != Eigen::Success)
          throw Error(ErrorCode::invalid_argument,
                      "the data points are not unisolvent for the polynomial (ΠᵀΠ is singular "
                      "over the ranks' rows)");
        const Eigen::MatrixXd R = llt.matrixU();
        QP = R.triangularView<Eigen::Upper>().solve<Eigen::OnTheRight>(QP);
        RP = (R * RP).eval();
      }
    }
  }
  auto project = [&](double *v) {
    if (m == 0)
      return;
    Eigen::Map<Eigen::VectorXd> vm(v, n);
    const Eigen::VectorXd coef = qt(QP, v);
    vm.noalias() -= QP * coef;
  };

  std::vector<Column> cols(nc);
  for (std::int64_t c = 0; c < nc; ++c) {
    cols[c].fnorm = std::sqrt(gdot(f.col(c).data(), f.col(c).data()));
    cols[c].y.assign(n, 0.0);
  }
  // Φ τ(·) for a batch of columns.
  Table<double> T, PhiT;
  auto apply_phi_tau = [&](const std::vector<const double *> &in) {
    const std::int64_t b = static_cast<std::int64_t>(in.size());
    T = Table<double>(n, b, Uninitialized{});
    for (std::int64_t k = 0; k < b; ++k)
      tau(in[k], T.col(k).data());
    PhiT = Table<double>(n, b, Uninitialized{});
    A.apply(T, PhiT);
    ++res.matvecs;
  };

  bool first = true;
  while (true) {
    // A cycle starts from the true residual Q(f − Φτ(y)) (for y = 0 simply Qf).
    std::vector<std::int64_t> act;
    for (std::int64_t c = 0; c < nc; ++c)
      if (!cols[c].converged)
        act.push_back(c);
    if (act.empty())
      break;
    std::vector<std::vector<double>> r0(act.size(), std::vector<double>(n));
    if (first) {
      for (std::size_t a = 0; a < act.size(); ++a)
        std::copy(f.col(act[a]).begin(), f.col(act[a]).end(), r0[a].begin());
    } else {
      std::vector<const double *> in;
      for (const auto c : act)
        in.push_back(cols[c].y.data());
      apply_phi_tau(in);
      for (std::size_t a = 0; a < act.size(); ++a)
        for (std::int64_t i = 0; i < n; ++i)
          r0[a][i] = f(i, act[a]) - PhiT(i, a);
    }
    first = false;
    double worst = 0;
    for (std::size_t a = 0; a < act.size(); ++a) {
      Column &C = cols[act[a]];
      project(r0[a].data());
      const double beta = std::sqrt(gdot(r0[a].data(), r0[a].data()));
      const double rel = C.fnorm > 0 ? beta / C.fnorm : 0.0;
      worst = std::max(worst, rel);
      if (beta <= it.tolerance * C.fnorm) {
        C.converged = true;
        continue;
      }
      C.V.assign(1, std::move(r0[a]));
      for (auto &v : C.V[0])
        v /= beta;
      C.H = Eigen::MatrixXd::Zero(restart + 1, restart);
      C.cs.assign(restart, 0.0);
      C.sn.assign(restart, 0.0);
      C.g.assign(restart + 1, 0.0);
      C.g[0] = beta;
      C.j = 0;
      C.in_cycle = true;
    }
    if (std::all_of(cols.begin(), cols.end(), [](const Column &C) { return C.converged; }))
      break;
    if (res.iterations >= it.max_iterations) {
      res.converged = false;
      break;
    }
    // Arnoldi steps, all columns of the cycle together.
    while (true) {
      std::vector<std::int64_t> in_cycle;
      for (const auto c : act)
        if (cols[c].in_cycle)
          in_cycle.push_back(c);
      if (in_cycle.empty())
        break;
      std::vector<const double *> in;
      for (const auto c : in_cycle)
        in.push_back(cols[c].V[cols[c].j].data());
      apply_phi_tau(in);
      ++res.iterations;
      double worst_est = 0;
      for (std::size_t a = 0; a < in_cycle.size(); ++a) {
        Column &C = cols[in_cycle[a]];
        const int j = C.j;
        std::vector<double> w(PhiT.col(a).begin(), PhiT.col(a).end());
        project(w.data());
        // Modified Gram–Schmidt.
        for (int i = 0; i <= j; ++i) {
          const double h = gdot(w.data(), C.V[i].data());
          C.H(i, j) = h;
          const double *vi = C.V[i].data();
#pragma omp parallel for num_threads(nt) schedule(static)
          for (std::int64_t k = 0; k < n; ++k)
            w[k] -= h * vi[k];
        }
        const double hn = std::sqrt(gdot(w.data(), w.data()));
        C.H(j + 1, j) = hn;
        // The previous rotations, then a new one that zeroes H(j + 1, j).
        for (int i = 0; i < j; ++i) {
          const double t = C.cs[i] * C.H(i, j) + C.sn[i] * C.H(i + 1, j);
          C.H(i + 1, j) = -C.sn[i] * C.H(i, j) + C.cs[i] * C.H(i + 1, j);
          C.H(i, j) = t;
        }
        const double hyp = std::hypot(C.H(j, j), C.H(j + 1, j));
        C.cs[j] = hyp > 0 ? C.H(j, j) / hyp : 1.0;
        C.sn[j] = hyp > 0 ? C.H(j + 1, j) / hyp : 0.0;
        C.H(j, j) = hyp;
        C.H(j + 1, j) = 0.0;
        C.g[j + 1] = -C.sn[j] * C.g[j];
        C.g[j] *= C.cs[j];
        const double est = std::abs(C.g[j + 1]);
        worst_est = std::max(worst_est, C.fnorm > 0 ? est / C.fnorm : 0.0);
        C.j = j + 1;
        // Breakdown: the Krylov space is invariant (hn = 0) or the operator maps V_j to 0.
        const bool breakdown = !(hn > 1e-300) || !(hyp > 0);
        if (!breakdown) {
          for (auto &v : w)
            v /= hn;
          C.V.push_back(std::move(w));
        }
        if (est <= it.tolerance * C.fnorm || C.j == restart || breakdown ||
            res.iterations >= it.max_iterations) {
          // End of the cycle: y += V_k H_k⁻¹ g_k.
          // A zero diagonal (the operator mapped V_j to 0) leaves that step out.
          const int kk = C.H(C.j - 1, C.j - 1) != 0.0 ? C.j : C.j - 1;
          Eigen::VectorXd g(kk);
          for (int i = 0; i < kk; ++i)
            g(i) = C.g[i];
          const Eigen::VectorXd z =
              C.H.topLeftCorner(kk, kk).triangularView<Eigen::Upper>().solve(g);
          for (int i = 0; i < kk; ++i) {
            const double *vi = C.V[i].data();
            const double zi = z(i);
#pragma omp parallel for num_threads(nt) schedule(static)
            for (std::int64_t k = 0; k < n; ++k)
              C.y[k] += zi * vi[k];
          }
          C.V.clear();
          C.in_cycle = false;
        }
      }
      res.history.push_back(worst_est);
      if (it.progress)
        it.progress(res.iterations, worst_est);
    }
  }

  // λ = τ(y); the polynomial by least squares on f − Φλ.
  res.lambda = Table<double>(n, nc, Uninitialized{});
  for (std::int64_t c = 0; c < nc; ++c)
    tau(cols[c].y.data(), res.lambda.col(c).data());
  res.poly = Table<double>(m, nc);
  if (m > 0) {
    Table<double> s(n, nc);
    A.apply(res.lambda, s);
    ++res.matvecs;
    for (std::int64_t c = 0; c < nc; ++c) {
      Eigen::VectorXd rc(n);
      for (std::int64_t i = 0; i < n; ++i)
        rc(i) = f(i, c) - s(i, c);
      const Eigen::VectorXd coef = RP.triangularView<Eigen::Upper>().solve(qt(QP, rc.data()));
      for (std::int64_t t = 0; t < m; ++t)
        res.poly(t, c) = coef(t);
    }
  }
  return res;
}

} // namespace ksum::rbf
