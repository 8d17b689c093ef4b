// ksum bsm: the inverse of a dense matrix by the block Sherman–Morrison algorithms of seed 004
// Paper III (include/ksum/bsm.hpp), or by LU; optionally a rank-m update A + X Yᵀ of that inverse
// through the Woodbury formula, timed against refactoring, and a solve with the result.
#include "common.hpp"
#include "matrix_input.hpp"

#include <ksum/bsm.hpp>
#include <ksum/error.hpp>
#include <ksum/io.hpp>

#include <Eigen/Dense>

#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <iostream>
#include <limits>
#include <optional>

namespace ksum::cli {
namespace {

struct BsmArgs {
  std::string input, method = "bsm", a0 = "diagonal", fallback = "lu", backend = "auto",
                     precision = "f64", kind = "random";
  std::string output, rhs, solution, summary;
  std::vector<std::string> update;
  std::int64_t block = 0, random = 0;
  std::uint64_t seed = 1;
  double pivot_threshold = 0;
  int threads = 0;
  bool force = false;
};

[[noreturn]] void bad(const std::string &message) {
  throw Error(ErrorCode::invalid_argument, message);
}

using Dense = Eigen::Map<const Eigen::MatrixXd>;

Dense map(const Table<double> &t) {
  return Dense(t.data(), t.rows(), t.cols());
}

// ‖M B − I‖_F / √n in double (B the computed inverse, rounded to double when it is float).
double inverse_residual(const Table<double> &M, const Table<double> &B) {
  const std::int64_t n = M.rows();
  Eigen::MatrixXd R = map(M) * map(B);
  R.diagonal().array() -= 1.0;
  return R.norm() / std::sqrt(double(n));
}

std::string size_text(const Table<double> &t) {
  return fmt::format("{} × {}", t.rows(), t.cols());
}

// A matrix argument read, or refused with its file named, when it is not n × (any) or square.
Table<double> read_checked(const std::string &file, const char *what, std::int64_t rows) {
  Table<double> t = read_matrix(file);
  if (rows < 0 && t.rows() != t.cols())
    throw Error(
        ErrorCode::shape_mismatch,
        fmt::format("{}: {} is {}; an inverse needs a square matrix", file, what, size_text(t)));
  if (rows >= 0 && t.rows() != rows)
    throw Error(
        ErrorCode::shape_mismatch,
        fmt::format("{}: {} has {} rows; the matrix A has n = {}", file, what, t.rows(), rows));
  return t;
}

std::string gflops(const BsmStats &st) {
  return st.seconds > 0 ? fmt::format("{:.3g} GFlop/s", st.flops / st.seconds / 1e9) : "-";
}

template <class T> io::WriteOptions write_options(bool force) {
  io::WriteOptions w;
  w.overwrite = force;
  w.npy_float32 = std::is_same_v<T, float>;
  w.significant_digits = std::is_same_v<T, float> ? 9 : 17;
  return w;
}

template <class T> void run_bsm(const BsmArgs &a, const CLI::App &cmd) {
  const auto given = [&](const char *name) { return cmd.count(name) > 0; };
  if (a.input.empty() == (a.random == 0))
    bad(a.input.empty()
            ? "give a matrix file (.npy, .csv or .mtx) or --random N (e.g. ksum bsm --random 1000)"
            : "give a matrix file or --random N, not both");
  if (a.random == 0 && (given("--seed") || given("--kind")))
    bad("--seed and --kind choose the matrix of --random N");
  if (!a.solution.empty() && a.rhs.empty())
    bad("--solution FILE needs --rhs FILE (the right-hand sides b of A x = b)");
  const std::string *x_file = a.update.empty() ? nullptr : &a.update[0];
  const std::string *y_file = a.update.empty() ? nullptr : &a.update[1];
  const std::string none;
  for (const auto *out : {&a.output, &a.solution, &a.summary})
    if (!out->empty())
      refuse_overwrite(*out, {&a.input, &a.rhs, x_file ? x_file : &none, y_file ? y_file : &none},
                       a.force);
  for (const auto *out : {&a.output, &a.solution})
    if (!out->empty())
      io::format_from_path(*out); // an unknown extension fails now, not after the work

  BsmOptions o;
  o.method = parse_bsm_method(a.method);
  o.block = a.block;
  o.a0 = parse_bsm_a0(a.a0);
  o.fallback = parse_bsm_fallback(a.fallback);
  o.pivot_threshold = a.pivot_threshold;
  o.backend = parse_backend(a.backend);
  o.threads = a.threads;
  if (o.block > 0 && (o.method == BsmMethod::svsm || o.method == BsmMethod::lu))
    bad(fmt::format("--block {} is the block size of bsm and rmbsm; --method {} has none", a.block,
                    a.method));

  const auto t_read = std::chrono::steady_clock::now();
  Table<double> A;
  std::string source;
  if (a.random > 0) {
    A = test_matrix(a.kind, a.random, a.seed);
    source = fmt::format("--random {} ({}, seed {})", a.random, a.kind, a.seed);
  } else {
    A = read_checked(a.input, "the matrix", -1);
    source = a.input;
  }
  const std::int64_t n = A.rows();
  std::optional<Table<double>> X, Y, b;
  if (x_file) {
    X = read_checked(*x_file, "X", n);
    Y = read_checked(*y_file, "Y", n);
    if (X->cols() != Y->cols())
      throw Error(ErrorCode::shape_mismatch,
                  fmt::format("--update: X ({}) is {} and Y ({}) is {}; both must be n × m",
                              *x_file, size_text(*X), *y_file, size_text(*Y)));
  }
  if (!a.rhs.empty())
    b = read_checked(a.rhs, "b", n);
  const double read_seconds = seconds_since(t_read);

  BsmStats st;
  const Table<T> At = A.template cast<T>();
  Table<T> inv = inverse(At, o, &st);
  Table<double> result = inv.template cast<double>();
  const double residual = inverse_residual(A, result);

  const double u = double(std::numeric_limits<T>::epsilon()) / 2;
  const double threshold = a.pivot_threshold == 0 ? 100 * u : a.pivot_threshold;
  std::string text;
  text += fmt::format("matrix       {}: {} × {}, {}\n", source, n, n,
                      std::is_same_v<T, float> ? "f32" : "f64");
  std::string method = fmt::format("{}", to_string(st.requested));
  if (st.requested == BsmMethod::bsm || st.requested == BsmMethod::rmbsm)
    method += fmt::format(", block {}{}", st.block, a.block == 0 ? " (automatic)" : "");
  if (st.requested != BsmMethod::lu)
    method += fmt::format(", A0 = {}", o.a0 == BsmA0::diagonal ? "diag(A)" : "I");
  text += fmt::format("method       {}, backend {}, threads {}\n", method, a.backend,
                      a.threads > 0 ? fmt::format("{}", a.threads) : "BLAS default");
  if (st.requested == BsmMethod::lu)
    text += fmt::format("condition    reciprocal 1-norm estimate {:.3g}\n", st.min_pivot);
  else
    text += fmt::format("pivots       min rho_k = {:.3g} (breakdown threshold {:.3g})\n",
                        st.min_pivot, threshold);
  if (st.requested != BsmMethod::lu)
    text += st.fallback ? fmt::format("fallback     lu: {} broke down at step {}\n",
                                      to_string(st.requested), st.fallback_step)
                        : fmt::format("fallback     not taken (--fallback {})\n", a.fallback);
  text += fmt::format("time         {:.4g} s, {} ({:.3g} flop counted), input {:.3g} s\n",
                      st.seconds, gflops(st), st.flops, read_seconds);
  text +=
      fmt::format("residual     ||A inv(A) - I||_F / sqrt(n) = {:.3g} (u = {:.2g})\n", residual, u);

  InverseUpdate<T> up(o);
  up.set_inverse(inv);
  Table<double> final_A = std::move(A);
  if (X) {
    up.update(X->template cast<T>(), Y->template cast<T>());
    const BsmStats &us = up.stats();
    Eigen::Map<Eigen::MatrixXd>(final_A.data(), n, n) += map(*X) * map(*Y).transpose();
    BsmOptions lu = o;
    lu.method = BsmMethod::lu;
    BsmStats rs;
    (void)inverse(final_A.template cast<T>(), lu, &rs);
    result = up.inverse().template cast<double>();
    text += fmt::format("update       rank {}: {:.4g} s ({}){}; refactoring (lu) {:.4g} s: "
                        "{:.3g}x {}\n",
                        X->cols(), us.seconds, gflops(us),
                        us.fallback ? ", capacitance matrix near singular: refactored" : "",
                        rs.seconds, us.seconds > 0 ? rs.seconds / us.seconds : 0.0,
                        us.seconds <= rs.seconds ? "faster" : "slower");
    text += fmt::format("residual     ||(A + X Y^T) B - I||_F / sqrt(n) = {:.3g}\n",
                        inverse_residual(final_A, result));
  }
  if (b) {
    const Table<double> x = up.solve(b->template cast<T>()).template cast<double>();
    const double res = (map(final_A) * map(x) - map(*b)).norm() / map(*b).norm();
    text += fmt::format("solve        {} right-hand side{}: ||A x - b||_F / ||b||_F = {:.3g}{}\n",
                        b->cols(), b->cols() == 1 ? "" : "s", res,
                        a.solution.empty() ? "" : " -> " + a.solution);
    if (!a.solution.empty())
      io::write_table(a.solution, x, write_options<T>(a.force));
  }
  if (!a.output.empty()) {
    io::write_table(a.output, result, write_options<T>(a.force));
    text += fmt::format("output       {} -> {}\n", X ? "(A + X Y^T)^-1" : "inv(A)", a.output);
  }
  std::cout << text << std::flush;
  if (!a.summary.empty())
    io::write_text(a.summary, text, a.force);
}

} // namespace

void register_bsm(CLI::App &app) {
  static BsmArgs a;
  auto *cmd = app.add_subcommand(
      "bsm", "Dense inverse by the block Sherman-Morrison algorithms (seed 004 Paper III) or LU; "
             "low-rank updates of an inverse by the Woodbury formula");
  cmd->footer(
      "Method: A = A0 + X Y^T with A0 = diag(A) (or I), X = A - A0, Y = I, and\n"
      "  inv(A) = inv(A0) - inv(A0) U inv(R) V^T inv(A0)\n"
      "built column by column (svsm, level-2 BLAS), in blocks of --block columns (bsm, level-3 "
      "BLAS) or accumulating H = U inv(R) V^T (rmbsm, less memory when m ~ n); lu is LAPACK "
      "getrf + getri. The recursion needs every R_k = I + Y_k^T inv(A_(k-1)) X_k nonsingular; "
      "a pivot measure rho_k at or below --pivot-threshold (default 100 u) is a breakdown: "
      "--fallback lu finishes with LU and says so, --fallback error stops naming the step.\n"
      "Input: a square matrix as .npy (float32/float64, C or Fortran order), CSV (one matrix "
      "row per line) or Matrix Market (.mtx: coordinate or array, real, general or symmetric), or "
      "a test matrix (--random N, --kind random|dominant|graded).\n"
      "Reports n, method, block, fallback, the smallest pivot measure, time, GFlop/s (flops "
      "counted from the algorithm) and ||A inv(A) - I||_F / sqrt(n). --update X Y applies "
      "A + X Y^T to the inverse in O(n^2 m) and times it against refactoring with LU. Existing "
      "files are kept unless -f.\n"
      "Examples:\n"
      "  ksum bsm --random 1000\n"
      "  ksum bsm A.mtx --method rmbsm --block 64 -o Ainv.npy\n"
      "  ksum bsm A.npy --update X.npy Y.npy --rhs b.npy --solution x.npy");
  cmd->add_option("input", a.input, "The matrix A (.npy, .csv or .mtx)");
  cmd->add_option("--random", a.random, "Invert a generated N × N test matrix instead")
      ->check(CLI::Range(std::int64_t(1), std::int64_t(1) << 20));
  cmd->add_option("--kind", a.kind,
                  "random: I + G/(2 sqrt n); dominant: diagonally dominant; graded: dominant "
                  "scaled by 10^(-3 (i+j)/(n-1))")
      ->check(CLI::IsMember({"random", "dominant", "graded"}))
      ->capture_default_str();
  cmd->add_option("--seed", a.seed, "Seed of --random")->capture_default_str();
  cmd->add_option("--method", a.method, "svsm, bsm, rmbsm or lu")
      ->check(CLI::IsMember({"svsm", "bsm", "rmbsm", "lu"}))
      ->capture_default_str();
  cmd->add_option("--block", a.block,
                  "Block size s of bsm/rmbsm (0: automatic, the library's choice)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--a0", a.a0, "The splitting's A0: diagonal (diag(A)) or identity")
      ->check(CLI::IsMember({"diagonal", "identity"}))
      ->capture_default_str();
  cmd->add_option("--fallback", a.fallback, "On a breakdown: lu (finish with LU) or error")
      ->check(CLI::IsMember({"error", "lu"}))
      ->capture_default_str();
  cmd->add_option("--pivot-threshold", a.pivot_threshold,
                  "Breakdown threshold on rho_k (0: 100 u; negative: only exact zeros)");
  cmd->add_option("--backend", a.backend,
                  "auto or cpu (the CPU), or gpu (cuBLAS/cuSOLVER: the inverse and, with --update, "
                  "the update with the inverse kept on the GPU)")
      ->check(CLI::IsMember({"auto", "cpu", "gpu", "cuda"}))
      ->capture_default_str();
  cmd->add_option("--precision", a.precision, "f32 or f64")
      ->check(CLI::IsMember({"f32", "f64"}))
      ->capture_default_str();
  cmd->add_option("--threads", a.threads, "BLAS threads (0: the BLAS library's default)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("-o,--output", a.output,
                  "Write the inverse (of A + X Y^T with --update) here (.npy or .csv)");
  cmd->add_option("--update", a.update, "X.npy Y.npy: apply the rank-m update A + X Y^T")
      ->expected(2);
  cmd->add_option("--rhs", a.rhs, "Right-hand sides b (n rows) to solve A x = b with the result");
  cmd->add_option("--solution", a.solution, "Write x here (.npy or .csv)");
  cmd->add_option("--summary", a.summary, "Write the report to this text file");
  cmd->add_flag("-f,--force", a.force, "Overwrite existing output files");
  cmd->callback([cmd] {
    if (a.precision == "f32")
      run_bsm<float>(a, *cmd);
    else
      run_bsm<double>(a, *cmd);
  });
}

} // namespace ksum::cli
