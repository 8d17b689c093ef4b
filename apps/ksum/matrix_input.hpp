#pragma once
// Dense matrices for `ksum bsm`: from .npy/.csv (the library's readers) or Matrix Market (.mtx),
// and the test matrices of tests/linalg/bsm_test.cpp generated from a seed.
#include <ksum/table.hpp>

#include <cstdint>
#include <filesystem>
#include <string>

namespace ksum::cli {

// A Matrix Market file (coordinate or array; real, double or integer; general, symmetric or
// skew-symmetric) as a dense matrix. Errors name the file and the line, and for a non-finite value
// its row and column (1-based, as in the file).
Table<double> read_matrix_market(const std::filesystem::path &path);

// .mtx through read_matrix_market, anything else through io::read_table (.npy, .csv, .txt).
Table<double> read_matrix(const std::filesystem::path &path);

// random: I + G / (2√n), G standard normal. dominant: off-diagonal uniform in [−1, 1], a_ii =
// ±(1 + Σ_j |a_ij|). graded: the dominant matrix scaled as D B D, D = diag(10^(−3 i/(n−1))).
Table<double> test_matrix(const std::string &kind, std::int64_t n, std::uint64_t seed);

} // namespace ksum::cli
