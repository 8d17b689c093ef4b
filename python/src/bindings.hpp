#pragma once
// One registration function per module of the library (python/src/bind_*.cpp).
#include "arrays.hpp"

#include <ksum/distributed.hpp>

#include <nanobind/nanobind.h>

#include <string>

namespace ksum::py {
void bind_direct(nanobind::module_ &m);
void bind_fmm2d(nanobind::module_ &m);
void bind_fgt(nanobind::module_ &m);
void bind_rbf(nanobind::module_ &m);
void bind_apps(nanobind::module_ &m);
void bind_tdbem(nanobind::module_ &m);
void bind_mc(nanobind::module_ &m);
void bind_bsm(nanobind::module_ &m);
void bind_tasksize(nanobind::module_ &m);
void bind_distributed(nanobind::module_ &m);
// A communicator from ksum/distributed.py's (kind, handle): "world", "self" or "handle".
Communicator make_comm(const std::string &which, int handle);
} // namespace ksum::py
