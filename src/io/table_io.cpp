#include "io/io_detail.hpp"

#include <cerrno>
#include <cstdint>
#include <fmt/format.h>
#include <random>
#include <system_error>

#if __has_include(<unistd.h>)
#include <unistd.h>
#define KSUM_IO_HAVE_FSYNC 1
#endif

namespace fs = std::filesystem;

namespace ksum::io {
namespace detail {

std::string errno_message(int err) {
  return std::generic_category().message(err);
}

void throw_io(const fs::path &path, std::string_view what, int err) {
  throw Error(ErrorCode::io, fmt::format("{}: {}: {}", display(path), what, errno_message(err)));
}

File open_for_reading(const fs::path &path) {
  // fopen happily opens a directory on POSIX and only the first read fails; say so up front
  // instead.
  std::error_code ec;
  if (fs::is_directory(path, ec))
    throw_io(path, "cannot open for reading", EISDIR);
  errno = 0;
  std::FILE *f = std::fopen(path.string().c_str(), "rb");
  if (!f)
    throw_io(path, "cannot open for reading", errno);
  return File(f);
}

std::string read_rest(std::FILE *file, const fs::path &path) {
  std::string out;
  constexpr std::size_t chunk = std::size_t(1) << 16;
  for (;;) {
    const std::size_t old = out.size();
    out.resize(old + chunk);
    errno = 0;
    const std::size_t got = std::fread(out.data() + old, 1, chunk, file);
    out.resize(old + got);
    if (got < chunk) {
      if (std::ferror(file))
        throw_io(path, "cannot read", errno);
      return out;
    }
  }
}

void write_bytes(std::FILE *file, std::string_view bytes, const fs::path &path) {
  if (bytes.empty())
    return;
  errno = 0;
  if (std::fwrite(bytes.data(), 1, bytes.size(), file) != bytes.size())
    throw_io(path, "cannot write", errno);
}

} // namespace detail

Format format_from_path(const fs::path &path) {
  std::string ext = path.extension().string();
  std::string lower = ext;
  for (char &c : lower)
    if (c >= 'A' && c <= 'Z')
      c = static_cast<char>(c - 'A' + 'a');
  if (lower == ".csv" || lower == ".txt")
    return Format::csv;
  if (lower == ".npy")
    return Format::npy;
  if (ext.empty())
    throw Error(ErrorCode::invalid_argument,
                fmt::format("{}: unknown file type (no extension; use .csv or .npy)",
                            detail::display(path)));
  throw Error(
      ErrorCode::invalid_argument,
      fmt::format("{}: unknown file type '{}' (use .csv or .npy)", detail::display(path), ext));
}

Table<double> read_table(const fs::path &path, const ReadOptions &options) {
  if (options.expect_cols < -1)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("{}: expect_cols must be -1 (any) or a column count, got {}",
                            detail::display(path), options.expect_cols));
  Table<double> table = format_from_path(path) == Format::csv ? detail::read_csv(path, options)
                                                              : detail::read_npy(path, options);
  if (options.expect_cols >= 0 && table.cols() != options.expect_cols)
    throw Error(ErrorCode::shape_mismatch,
                fmt::format("{}: expected {} columns, found {}", detail::display(path),
                            options.expect_cols, table.cols()));
  return table;
}

namespace {

// Removes the temporary file on every exit except a successful rename.
struct TempFileGuard {
  fs::path path;
  bool armed = true;
  ~TempFileGuard() {
    if (armed) {
      std::error_code ec;
      fs::remove(path, ec);
    }
  }
};

std::uint64_t random_suffix() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  return rng();
}

} // namespace

void detail::write_atomically(const fs::path &path, bool overwrite,
                              const std::function<void(std::FILE *)> &write_body) {
  const std::string name = detail::display(path);

  // Checked here rather than at the rename so a refused write costs nothing. Another process could
  // still create OUT between this check and the rename; only a non-portable no-replace rename could
  // close that window.
  std::error_code ec;
  if (!overwrite && fs::exists(fs::symlink_status(path, ec)))
    throw Error(ErrorCode::io, fmt::format("{}: file exists (use --force to overwrite)", name));

  // Same folder as OUT so the final rename stays within one file system and is atomic.
  TempFileGuard guard;
  guard.armed = false;
  std::FILE *raw = nullptr;
  for (int attempt = 0; attempt < 100 && !raw; ++attempt) {
    fs::path temp = path;
    temp.replace_filename(fmt::format(".{}.tmp{:016x}", path.filename().string(), random_suffix()));
    errno = 0;
    // "x" (C11 exclusive create) refuses to reuse a name another writer picked at the same time.
    raw = std::fopen(temp.string().c_str(), "wbx");
    if (raw) {
      guard.path = temp;
      guard.armed = true;
    } else if (errno != EEXIST) {
      detail::throw_io(path, fmt::format("cannot create temporary file '{}'", temp.string()),
                       errno);
    }
  }
  if (!raw)
    detail::throw_io(path, "cannot create a temporary file", EEXIST);
  detail::File out(raw);

  write_body(out.get());

  errno = 0;
  if (std::fflush(out.get()) != 0)
    detail::throw_io(path, "cannot write", errno);
#ifdef KSUM_IO_HAVE_FSYNC
  // Without it a crash shortly after the rename can leave OUT empty on some file systems.
  if (::fsync(::fileno(out.get())) != 0)
    detail::throw_io(path, "cannot write", errno);
#endif
  errno = 0;
  if (out.close() != 0)
    detail::throw_io(path, "cannot write", errno);

  fs::rename(guard.path, path, ec);
  if (ec)
    throw Error(ErrorCode::io, fmt::format("{}: cannot move the temporary file into place: {}",
                                           name, ec.message()));
  guard.armed = false;
}

void write_table(const fs::path &path, const Table<double> &table, const WriteOptions &options) {
  const Format format = format_from_path(path);
  detail::write_atomically(path, options.overwrite, [&](std::FILE *out) {
    if (format == Format::csv)
      detail::write_csv(out, path, table, options);
    else
      detail::write_npy(out, path, table, options);
  });
}

void write_text(const std::filesystem::path &path, const std::string &text, bool overwrite) {
  detail::write_atomically(path, overwrite,
                           [&](std::FILE *out) { detail::write_bytes(out, text, path); });
}

} // namespace ksum::io
