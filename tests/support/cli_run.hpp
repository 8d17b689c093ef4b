#pragma once
// Runs the ksum command (KSUM_CLI_PATH) in a shell and captures its exit code and output.
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <string>
#include <sys/wait.h>

namespace {

struct Run {
  int code;
  std::string output; // stdout and stderr together
};

Run ksum(const std::string &args) {
  const std::string cmd = std::string(KSUM_CLI_PATH) + " " + args + " 2>&1";
  FILE *pipe = popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf{};
  while (pipe && fgets(buf.data(), buf.size(), pipe))
    out += buf.data();
  const int status = pipe ? pclose(pipe) : -1;
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// Runs ksum with `args` and expects exit code `code` and `needle` in its output.
void expect_failure(const std::string &args, int code, const std::string &needle) {
  const auto r = ksum(args);
  EXPECT_EQ(r.code, code) << args << "\n" << r.output;
  EXPECT_NE(r.output.find(needle), std::string::npos) << args << "\n" << r.output;
}

// A fresh temporary folder per test.
class Cli : public ::testing::Test {
protected:
  void SetUp() override {
    dir = std::filesystem::temp_directory_path() /
          ("ksum_cli_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  }
  void TearDown() override { std::filesystem::remove_all(dir); }
  std::string path(const std::string &name) const { return (dir / name).string(); }
  void write(const std::string &name, const std::string &text) const {
    std::ofstream(dir / name) << text;
  }
  std::filesystem::path dir;
};

} // namespace
