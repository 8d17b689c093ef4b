// The block Sherman–Morrison inverse (seed 004 Paper III): inverse() in float and double with
// its statistics, and InverseUpdate<T> for rank-m updates. The Python layer (ksum/bsm.py) checks
// the arrays' layout and names the keywords.
#include "bindings.hpp"

#include <ksum/bsm.hpp>
#include <ksum/device.hpp>

#include <nanobind/stl/string.h>

#include <string>

namespace ksum::py {
namespace {

BsmOptions options(const std::string &method, std::int64_t block, const std::string &a0,
                   const std::string &fallback, double pivot_threshold, const std::string &backend,
                   int threads) {
  BsmOptions o;
  o.method = parse_bsm_method(method);
  o.block = block;
  o.a0 = parse_bsm_a0(a0);
  o.fallback = parse_bsm_fallback(fallback);
  o.pivot_threshold = pivot_threshold;
  o.backend = parse_backend(backend);
  o.threads = threads;
  return o;
}

nb::dict stats_dict(const BsmStats &s) {
  nb::dict d;
  d["method"] = std::string(to_string(s.method));
  d["requested"] = std::string(to_string(s.requested));
  d["block"] = s.block;
  d["fallback"] = s.fallback;
  d["fallback_step"] = s.fallback_step;
  d["min_pivot"] = s.min_pivot;
  d["seconds"] = s.seconds;
  d["flops"] = s.flops;
  return d;
}

template <class T>
void bind_precision(nb::module_ &m, const char *inverse_name, const char *update_name) {
  m.def(
      inverse_name,
      [](HostMatrix<T> A, const std::string &method, std::int64_t block, const std::string &a0,
         const std::string &fallback, double pivot_threshold, const std::string &backend,
         int threads) {
        const Table<T> a = view(A);
        const BsmOptions o =
            options(method, block, a0, fallback, pivot_threshold, backend, threads);
        BsmStats st;
        Table<T> out;
        {
          nb::gil_scoped_release release;
          out = inverse(a, o, &st);
        }
        return nb::make_tuple(to_numpy(std::move(out)), stats_dict(st));
      },
      nb::arg("A").noconvert(), nb::arg("method"), nb::arg("block"), nb::arg("a0"),
      nb::arg("fallback"), nb::arg("pivot_threshold"), nb::arg("backend"), nb::arg("threads"));

  using U = InverseUpdate<T>;
  nb::class_<U>(m, update_name)
      .def(
          "__init__",
          [](U *self, const std::string &fallback, double pivot_threshold,
             const std::string &backend, int threads) {
            new (self) U(options("lu", 0, "diagonal", fallback, pivot_threshold, backend, threads));
          },
          nb::arg("fallback"), nb::arg("pivot_threshold"), nb::arg("backend"), nb::arg("threads"))
      .def(
          "set_matrix",
          [](U &u, HostMatrix<T> A) {
            const Table<T> a = view(A);
            nb::gil_scoped_release release;
            u.set_matrix(a);
          },
          nb::arg("A").noconvert())
      .def(
          "set_inverse",
          [](U &u, HostMatrix<T> Ainv) {
            const Table<T> a = view(Ainv);
            nb::gil_scoped_release release;
            u.set_inverse(a);
          },
          nb::arg("A_inverse").noconvert())
      .def(
          "update",
          [](U &u, HostMatrix<T> X, HostMatrix<T> Y) {
            const Table<T> x = view(X), y = view(Y);
            nb::gil_scoped_release release;
            u.update(x, y);
          },
          nb::arg("X").noconvert(), nb::arg("Y").noconvert())
      .def(
          "solve",
          [](const U &u, HostMatrix<T> b) {
            const Table<T> rhs = view(b);
            Table<T> x;
            {
              nb::gil_scoped_release release;
              x = u.solve(rhs);
            }
            return to_numpy(std::move(x));
          },
          nb::arg("b").noconvert())
      .def("inverse", [](const U &u) { return to_numpy(Table<T>(u.inverse())); })
      .def_prop_ro("size", &U::size)
      .def("stats", [](const U &u) { return stats_dict(u.stats()); });
}

} // namespace

void bind_bsm(nb::module_ &m) {
  bind_precision<float>(m, "bsm_inverse_f32", "BsmInverseUpdate32");
  bind_precision<double>(m, "bsm_inverse_f64", "BsmInverseUpdate64");
}

} // namespace ksum::py
