#pragma once
// Contract tests: a call must throw ksum::Error with this code and a message containing `needle`.
#include <ksum/error.hpp>

#include <gtest/gtest.h>
#include <string>

namespace ksum::test {

template <class F> void expect_error(F &&f, ErrorCode code, const std::string &needle) {
  try {
    f();
    ADD_FAILURE() << "expected an error containing '" << needle << "'";
  } catch (const Error &e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

} // namespace ksum::test
