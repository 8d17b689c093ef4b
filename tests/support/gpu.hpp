#pragma once
// GPU tests (CTest label `gpu`) skip cleanly where no CUDA GPU is visible.
#include <ksum/device.hpp>

#include <gtest/gtest.h>

#define KSUM_REQUIRE_GPU()                                                                         \
  if (ksum::gpus().empty())                                                                        \
  GTEST_SKIP() << "no CUDA GPU visible"
