// The shared JSON cache file (json_cache.hpp).
#include "runtime/json_cache.hpp"

#include <ksum/error.hpp>

#include <fmt/format.h>
#include <fstream>
#include <random>
#include <sstream>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace ksum::detail {
namespace {

// An advisory lock on `path`.lock for the read-modify-write; released by the destructor.
class CacheLock {
public:
  explicit CacheLock(const std::filesystem::path &path) {
    const std::string name = path.string() + ".lock";
    fd_ = ::open(name.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ >= 0 && ::flock(fd_, LOCK_EX) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~CacheLock() {
    if (fd_ >= 0) {
      ::flock(fd_, LOCK_UN);
      ::close(fd_);
    }
  }
  CacheLock(const CacheLock &) = delete;
  CacheLock &operator=(const CacheLock &) = delete;

private:
  int fd_ = -1;
};

} // namespace

bool read_json_object(const std::filesystem::path &path, nlohmann::json &out, std::string *why) {
  std::ifstream in(path);
  if (!in) {
    if (why)
      *why = fmt::format("{}: no cache file", path.string());
    return false;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  out = nlohmann::json::parse(ss.str(), nullptr, false);
  if (out.is_discarded() || !out.is_object()) {
    if (why)
      *why = fmt::format("{}: not a JSON object (corrupt cache)", path.string());
    return false;
  }
  return true;
}

void write_json_key(const std::filesystem::path &path, const std::string &key,
                    const nlohmann::json &value, const char *what) {
  std::error_code ec;
  if (path.has_parent_path())
    std::filesystem::create_directories(path.parent_path(), ec);
  const CacheLock lock(path);
  nlohmann::json j;
  if (!read_json_object(path, j, nullptr))
    j = nlohmann::json::object();
  j[key] = value;
  // A neighbour of a name no other process uses, renamed over the file.
  std::random_device rd;
  const std::filesystem::path tmp =
      fmt::format("{}.{}.{:08x}.tmp", path.string(), ::getpid(), rd());
  {
    std::ofstream out(tmp);
    if (!out)
      throw Error(ErrorCode::io, fmt::format("{}: cannot write the {}{}", tmp.string(), what,
                                             ec ? ": " + ec.message() : ""));
    out << j.dump(1) << "\n";
    out.flush();
    if (!out) {
      std::error_code ignored;
      std::filesystem::remove(tmp, ignored);
      throw Error(ErrorCode::io, fmt::format("{}: write failed", tmp.string()));
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    throw Error(ErrorCode::io,
                fmt::format("{}: cannot replace the {}: {}", path.string(), what, ec.message()));
  }
}

} // namespace ksum::detail
