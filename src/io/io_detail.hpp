#pragma once
// Internal pieces shared by the CSV and NPY readers/writers and the extension dispatch in
// table_io.cpp.
#include <ksum/error.hpp>
#include <ksum/io.hpp>
#include <ksum/table.hpp>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

namespace ksum::io::detail {

// How a path appears in messages: as the user spelled it, so it can be pasted back into a shell.
inline std::string display(const std::filesystem::path &path) {
  return path.string();
}

// The message text for an errno value (thread-safe, unlike std::strerror).
std::string errno_message(int err);

// Throws Error(io) naming the path and the system's reason.
[[noreturn]] void throw_io(const std::filesystem::path &path, std::string_view what, int err);

// Owns a FILE* so that every early exit (exceptions included) closes it.
class File {
public:
  File() = default;
  explicit File(std::FILE *f) : f_(f) {}
  File(const File &) = delete;
  File &operator=(const File &) = delete;
  ~File() {
    if (f_)
      std::fclose(f_);
  }
  std::FILE *get() const noexcept { return f_; }
  // Closes now and reports failure, for writers that must know their data reached the disk.
  int close() noexcept {
    int rc = std::fclose(f_);
    f_ = nullptr;
    return rc;
  }

private:
  std::FILE *f_ = nullptr;
};

// Opens a file for binary reading or throws Error(io) with the reason.
File open_for_reading(const std::filesystem::path &path);

// Reads everything left in `file`; read errors are Error(io) naming `path`.
std::string read_rest(std::FILE *file, const std::filesystem::path &path);

// Writes `bytes` or throws Error(io) naming `path` (e.g. disk full).
void write_bytes(std::FILE *file, std::string_view bytes, const std::filesystem::path &path);

// Readers: `path` is opened here; every error names it. They check finiteness and emptiness, while
// the expect_cols check is left to read_table so that both formats report it identically.
Table<double> read_csv(const std::filesystem::path &path, const ReadOptions &options);
Table<double> read_npy(const std::filesystem::path &path, const ReadOptions &options);

// Writers: validate the table and options (throwing before any byte is written), then stream the
// file to `out`. `path` is the final destination, used only in messages.
void write_csv(std::FILE *out, const std::filesystem::path &path, const Table<double> &table,
               const WriteOptions &options);
void write_npy(std::FILE *out, const std::filesystem::path &path, const Table<double> &table,
               const WriteOptions &options);

// Writes a file through a temporary in the same folder renamed into place, so OUT is never left
// half-written; with overwrite = false an existing OUT is Error(io) and is left untouched.
void write_atomically(const std::filesystem::path &path, bool overwrite,
                      const std::function<void(std::FILE *)> &write_body);

} // namespace ksum::io::detail
