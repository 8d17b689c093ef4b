#pragma once
// Array crossings between Python and the C++ plans. The Python layer (ksum/_arrays.py) hands the
// extension arrays already in the plans' layout: a matrix of `rows` points and `cols` coordinates
// (or right-hand sides) stored column by column, i.e. a Fortran-ordered (rows, cols) array or the
// transpose of a C-ordered (cols, rows) one, such as fmm3dpy's (3, n) points. Those are viewed
// without a copy (Table::borrow); the extension never converts (noconvert), so a copy happens only
// where the Python layer made one and said so. Results are C++ tables handed to NumPy without a
// copy: the array owns the table through a capsule.
#include <ksum/table.hpp>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>

#include <complex>
#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

namespace ksum::py {

namespace nb = nanobind;

template <class T>
using HostMatrix = nb::ndarray<const T, nb::ndim<2>, nb::f_contig, nb::device::cpu>;
template <class T>
using HostVector = nb::ndarray<const T, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
template <class T> using DeviceMatrix = nb::ndarray<T, nb::ndim<2>, nb::c_contig, nb::device::cuda>;
template <class T> using NumpyMatrix = nb::ndarray<nb::numpy, T, nb::ndim<2>, nb::f_contig>;
template <class T> using NumpyVector = nb::ndarray<nb::numpy, T, nb::ndim<1>, nb::c_contig>;

template <class T> Table<T> view(const HostMatrix<T> &a) {
  return Table<T>::borrow(a.data(), static_cast<std::int64_t>(a.shape(0)),
                          static_cast<std::int64_t>(a.shape(1)));
}

template <class T> std::span<const T> view(const HostVector<T> &a) {
  return {a.data(), a.shape(0)};
}

// The table becomes the array's memory (no copy): a Fortran-ordered (rows, cols) array.
template <class T> NumpyMatrix<T> to_numpy(Table<T> &&t) {
  auto *owned = new Table<T>(std::move(t));
  if (owned->borrowed()) { // never hand out a view of someone else's memory as a new array
    auto *copy = new Table<T>(*owned);
    delete owned;
    owned = copy;
  }
  nb::capsule owner(owned, [](void *p) noexcept { delete static_cast<Table<T> *>(p); });
  const std::size_t rows = static_cast<std::size_t>(owned->rows());
  const std::size_t cols = static_cast<std::size_t>(owned->cols());
  const std::int64_t strides[2] = {1, static_cast<std::int64_t>(rows)};
  const std::size_t shape[2] = {rows, cols};
  return NumpyMatrix<T>(owned->data(), 2, shape, owner, strides);
}

template <class T> NumpyVector<T> to_numpy(std::vector<T> &&v) {
  auto *owned = new std::vector<T>(std::move(v));
  nb::capsule owner(owned, [](void *p) noexcept { delete static_cast<std::vector<T> *>(p); });
  const std::size_t shape[1] = {owned->size()};
  return NumpyVector<T>(owned->data(), 1, shape, owner);
}

} // namespace ksum::py

namespace ksum::py {

// The methods the plans share, bound once. Array: HostMatrix<T> (tables) or HostVector<C> (the
// 2D FMM's complex points); the computation runs with the GIL released.

// set_points(sources, targets=None)
template <class Array, class Plan> void def_set_points(nb::class_<Plan> &c) {
  c.def(
      "set_points",
      [](Plan &p, Array sources, std::optional<Array> targets) {
        const auto s = view(sources);
        nb::gil_scoped_release release;
        if (targets)
          p.set_points(s, view(*targets));
        else
          p.set_points(s);
      },
      nb::arg("sources").noconvert(), nb::arg("targets").noconvert().none());
}

// execute(weights) -> a new NumPy array
template <class Array, class Plan> void def_execute(nb::class_<Plan> &c) {
  c.def(
      "execute",
      [](Plan &p, Array weights) {
        const auto w = view(weights);
        decltype(p.execute(w)) out;
        {
          nb::gil_scoped_release release;
          out = p.execute(w);
        }
        return to_numpy(std::move(out));
      },
      nb::arg("weights").noconvert());
}

// The interpolants' set_data(points, values) and evaluate(points) (double precision).
template <class Plan> void def_interpolant(nb::class_<Plan> &c) {
  c.def(
       "set_data",
       [](Plan &p, HostMatrix<double> points, HostMatrix<double> values) {
         const Table<double> x = view(points), f = view(values);
         nb::gil_scoped_release release;
         p.set_data(x, f);
       },
       nb::arg("points").noconvert(), nb::arg("values").noconvert())
      .def(
          "evaluate",
          [](const Plan &p, HostMatrix<double> points) {
            const Table<double> x = view(points);
            Table<double> out;
            {
              nb::gil_scoped_release release;
              out = p.evaluate(x);
            }
            return to_numpy(std::move(out));
          },
          nb::arg("points").noconvert());
}

} // namespace ksum::py
