#include "io/io_detail.hpp"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fmt/format.h>
#include <limits>
#include <map>
#include <vector>

namespace ksum::io::detail {
namespace {

constexpr std::string_view magic = "\x93NUMPY";
constexpr std::string_view supported = "only little-endian float32 '<f4' or float64 '<f8'";

// The subset of Python literals that .npy headers use. Lists appear only in structured dtypes,
// which are refused anyway, so they are kept as source text.
struct PyValue {
  enum class Kind { string, boolean, tuple, list } kind = Kind::string;
  std::string text;
  bool flag = false;
  std::vector<std::int64_t> ints;
};

class HeaderParser {
public:
  HeaderParser(std::string_view text, const std::string &name) : text_(text), name_(name) {}

  std::map<std::string, PyValue> parse_dict() {
    std::map<std::string, PyValue> dict;
    skip_ws();
    expect('{');
    for (;;) {
      skip_ws();
      if (eat('}'))
        break;
      if (peek() != '\'' && peek() != '"')
        fail("expected a quoted key or '}'");
      std::string key = parse_string();
      skip_ws();
      expect(':');
      skip_ws();
      PyValue value = parse_value();
      if (!dict.emplace(key, std::move(value)).second)
        fail(fmt::format("duplicate key '{}'", key));
      skip_ws();
      if (eat('}'))
        break;
      expect(',');
    }
    skip_ws();
    if (pos_ != text_.size())
      fail("unexpected text after the dictionary");
    return dict;
  }

private:
  [[noreturn]] void fail(std::string_view what) const {
    std::string shown(text_.substr(0, 200));
    for (char &c : shown)
      if (static_cast<unsigned char>(c) < 0x20)
        c = ' ';
    throw Error(ErrorCode::parse,
                fmt::format("{}: malformed .npy header: {} at offset {} in \"{}\"", name_, what,
                            pos_, shown));
  }
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool eat(char c) {
    if (peek() != c || pos_ >= text_.size())
      return false;
    ++pos_;
    return true;
  }
  void expect(char c) {
    if (!eat(c))
      fail(fmt::format("expected '{}'", c));
  }
  void skip_ws() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }

  std::string parse_string() {
    const char quote = text_[pos_++];
    const auto end = text_.find(quote, pos_);
    if (end == std::string_view::npos)
      fail("unterminated string");
    std::string_view body = text_.substr(pos_, end - pos_);
    // numpy never escapes anything in the keys and dtypes it accepts here.
    if (body.find('\\') != std::string_view::npos)
      fail("escape sequences are not supported");
    pos_ = end + 1;
    return std::string(body);
  }

  std::int64_t parse_int() {
    if (peek() == '-')
      fail("negative dimension");
    std::int64_t v = 0;
    const char *first = text_.data() + pos_;
    const auto [ptr, ec] = std::from_chars(first, text_.data() + text_.size(), v);
    if (ec == std::errc::result_out_of_range)
      fail("dimension too large");
    if (ec != std::errc{})
      fail("expected a dimension");
    pos_ += static_cast<std::size_t>(ptr - first);
    // Python 2 wrote longs as 3L; numpy still reads such files.
    if (peek() == 'L' || peek() == 'l')
      ++pos_;
    return v;
  }

  PyValue parse_value() {
    PyValue v;
    const char c = peek();
    if (c == '\'' || c == '"') {
      v.kind = PyValue::Kind::string;
      v.text = parse_string();
    } else if (text_.substr(pos_).starts_with("True") || text_.substr(pos_).starts_with("False")) {
      v.kind = PyValue::Kind::boolean;
      v.flag = c == 'T';
      pos_ += v.flag ? 4 : 5;
    } else if (c == '(') {
      v.kind = PyValue::Kind::tuple;
      ++pos_;
      skip_ws();
      bool comma_after_last = false;
      while (!eat(')')) {
        v.ints.push_back(parse_int());
        skip_ws();
        comma_after_last = eat(',');
        skip_ws();
        if (!comma_after_last && peek() != ')')
          fail("expected ',' or ')' in a tuple");
      }
      // "(3)" is the integer 3 in Python, not a one-element tuple.
      if (v.ints.size() == 1 && !comma_after_last)
        fail("a one-element shape needs a trailing comma");
    } else if (c == '[') {
      v.kind = PyValue::Kind::list;
      const std::size_t start = pos_;
      int depth = 0;
      do {
        const char d = peek();
        if (d == '\0' && pos_ >= text_.size())
          fail("unterminated list");
        if (d == '\'' || d == '"') {
          parse_string();
          continue;
        }
        depth += d == '[' || d == '(' ? 1 : d == ']' || d == ')' ? -1 : 0;
        ++pos_;
      } while (depth > 0);
      v.text = std::string(text_.substr(start, pos_ - start));
    } else {
      fail("expected a string, True, False or a tuple");
    }
    return v;
  }

  std::string_view text_;
  const std::string &name_;
  std::size_t pos_ = 0;
};

std::string shape_text(const std::vector<std::int64_t> &shape) {
  if (shape.size() == 1)
    return fmt::format("({},)", shape[0]);
  std::string out = "(";
  for (std::size_t k = 0; k < shape.size(); ++k)
    out += fmt::format("{}{}", k ? ", " : "", shape[k]);
  return out + ")";
}

// Explicit little-endian decoding keeps the reader correct on any host; compilers turn the loop
// into a single load where the host is little-endian.
template <class U> U load_le(const unsigned char *p) {
  U u = 0;
  for (std::size_t b = sizeof(U); b-- > 0;)
    u = static_cast<U>((u << 8) | p[b]);
  return u;
}

template <class U> void store_le(std::string &out, U u) {
  for (std::size_t b = 0; b < sizeof(U); ++b)
    out.push_back(static_cast<char>((u >> (8 * b)) & 0xff));
}

struct Header {
  int itemsize = 8;
  bool fortran = false;
  std::vector<std::int64_t> shape;
};

Header interpret(const std::map<std::string, PyValue> &dict, const std::string &name) {
  for (const char *key : {"descr", "fortran_order", "shape"})
    if (!dict.contains(key))
      throw Error(ErrorCode::parse, fmt::format("{}: .npy header lacks '{}'", name, key));
  if (dict.size() != 3)
    for (const auto &[key, value] : dict)
      if (key != "descr" && key != "fortran_order" && key != "shape")
        throw Error(ErrorCode::parse,
                    fmt::format("{}: .npy header has unexpected key '{}'", name, key));

  Header h;
  const PyValue &descr = dict.at("descr");
  if (descr.kind == PyValue::Kind::list)
    throw Error(ErrorCode::unsupported, fmt::format("{}: structured dtype {} is not supported ({})",
                                                    name, descr.text, supported));
  if (descr.kind != PyValue::Kind::string)
    throw Error(ErrorCode::parse, fmt::format("{}: .npy header 'descr' is not a string", name));
  if (descr.text == "<f8")
    h.itemsize = 8;
  else if (descr.text == "<f4")
    h.itemsize = 4;
  else if (descr.text.starts_with('>') && descr.text.size() > 1 && descr.text[1] == 'f')
    throw Error(ErrorCode::unsupported,
                fmt::format("{}: big-endian dtype '{}' is not supported ({})", name, descr.text,
                            supported));
  else
    throw Error(ErrorCode::unsupported,
                fmt::format("{}: dtype '{}' is not supported ({})", name, descr.text, supported));

  const PyValue &order = dict.at("fortran_order");
  if (order.kind != PyValue::Kind::boolean)
    throw Error(ErrorCode::parse,
                fmt::format("{}: .npy header 'fortran_order' is not True or False", name));
  h.fortran = order.flag;

  const PyValue &shape = dict.at("shape");
  if (shape.kind != PyValue::Kind::tuple)
    throw Error(ErrorCode::parse, fmt::format("{}: .npy header 'shape' is not a tuple", name));
  h.shape = shape.ints;
  if (h.shape.empty() || h.shape.size() > 2)
    throw Error(
        ErrorCode::unsupported,
        fmt::format("{}: {}-dimensional array of shape {} is not supported (need 1-D or 2-D)", name,
                    h.shape.size(), shape_text(h.shape)));
  return h;
}

// Reads exactly n bytes unless the file ends first; read errors (not the end) are Error(io).
std::size_t read_some(std::FILE *f, void *dst, std::size_t n, const std::filesystem::path &path) {
  errno = 0;
  const std::size_t got = std::fread(dst, 1, n, f);
  if (got < n && std::ferror(f))
    throw_io(path, "cannot read", errno);
  return got;
}

} // namespace

Table<double> read_npy(const std::filesystem::path &path, const ReadOptions &options) {
  const std::string name = display(path);
  File file = open_for_reading(path);
  std::FILE *f = file.get();

  unsigned char pre[12];
  if (read_some(f, pre, 8, path) < 8 || std::memcmp(pre, magic.data(), magic.size()) != 0)
    throw Error(ErrorCode::parse, fmt::format("{}: not a .npy file (no \\x93NUMPY magic)", name));
  const int major = pre[6], minor = pre[7];
  // Version 1 has a 2-byte header length; 2 and 3 have 4 bytes (3 only adds UTF-8 headers, which
  // the strict ASCII parser below rejects anyway when they matter).
  const std::size_t len_bytes = major == 1 ? 2 : (major == 2 || major == 3) ? 4 : 0;
  if (len_bytes == 0)
    throw Error(ErrorCode::unsupported,
                fmt::format("{}: .npy format version {}.{} is not supported", name, major, minor));
  if (read_some(f, pre + 8, len_bytes, path) < len_bytes)
    throw Error(ErrorCode::parse, fmt::format("{}: truncated .npy header", name));
  const std::size_t header_len =
      len_bytes == 2 ? load_le<std::uint16_t>(pre + 8) : load_le<std::uint32_t>(pre + 8);
  // numpy's own reader caps headers at 10000 bytes; a far larger claim is corruption, not data.
  constexpr std::size_t max_header = std::size_t(1) << 20;
  if (header_len > max_header)
    throw Error(ErrorCode::parse,
                fmt::format("{}: .npy header length {} is implausibly large", name, header_len));
  std::string header_text(header_len, '\0');
  if (const std::size_t got = read_some(f, header_text.data(), header_len, path); got < header_len)
    throw Error(ErrorCode::parse,
                fmt::format("{}: truncated .npy header: expected {} bytes, found {}", name,
                            header_len, got));
  const Header h = interpret(HeaderParser(header_text, name).parse_dict(), name);

  const std::int64_t rows = h.shape[0];
  const std::int64_t cols = h.shape.size() == 2 ? h.shape[1] : 1;
  constexpr std::int64_t max_bytes = std::numeric_limits<std::int64_t>::max() / 8;
  if (cols != 0 && rows > max_bytes / h.itemsize / cols)
    throw Error(ErrorCode::parse,
                fmt::format("{}: shape {} is too large", name, shape_text(h.shape)));
  const std::int64_t count = rows * cols;
  const std::int64_t expected = count * h.itemsize;

  // Check the size before allocating, so a corrupt shape cannot demand terabytes.
  const std::int64_t data_offset = static_cast<std::int64_t>(8 + len_bytes + header_len);
  std::error_code ec;
  const auto file_size = std::filesystem::file_size(path, ec);
  if (!ec) {
    const std::int64_t found = static_cast<std::int64_t>(file_size) - data_offset;
    if (found < expected)
      throw Error(
          ErrorCode::parse,
          fmt::format("{}: truncated: expected {} bytes of data, found {}", name, expected, found));
  }

  Table<double> table(rows, cols);
  double *out = table.data();
  std::vector<unsigned char> buf(std::size_t(1) << 16);
  std::int64_t k = 0, r = 0, c = 0; // flat index in file order, and the (row, col) it maps to
  while (k < count) {
    const std::int64_t want_elems =
        std::min<std::int64_t>(count - k, static_cast<std::int64_t>(buf.size()) / h.itemsize);
    const std::size_t want = static_cast<std::size_t>(want_elems * h.itemsize);
    const std::size_t got = read_some(f, buf.data(), want, path);
    if (got < want)
      throw Error(ErrorCode::parse,
                  fmt::format("{}: truncated: expected {} bytes of data, found {}", name, expected,
                              k * h.itemsize + static_cast<std::int64_t>(got)));
    for (std::int64_t e = 0; e < want_elems; ++e, ++k) {
      const unsigned char *p = buf.data() + e * h.itemsize;
      const double v = h.itemsize == 8 ? std::bit_cast<double>(load_le<std::uint64_t>(p))
                                       : std::bit_cast<float>(load_le<std::uint32_t>(p));
      if (h.fortran) {
        out[k] = v; // Fortran order is exactly Table's column-major layout
      } else {
        table(r, c) = v;
        if (++c == cols) {
          c = 0;
          ++r;
        }
      }
    }
  }
  unsigned char extra[4096];
  std::int64_t trailing = 0;
  for (std::size_t got; (got = read_some(f, extra, sizeof extra, path)) > 0;)
    trailing += static_cast<std::int64_t>(got);
  if (trailing > 0)
    throw Error(ErrorCode::parse,
                fmt::format("{}: {} unexpected bytes after the {} bytes of data of shape {}", name,
                            trailing, expected, shape_text(h.shape)));

  // Report the first bad value in the file's own order, which is the index a numpy user would use.
  std::int64_t first_bad = -1;
  for (std::int64_t m = 0; m < count; ++m) {
    if (std::isfinite(out[m]))
      continue;
    const std::int64_t idx = h.fortran ? m : (m % rows) * cols + m / rows;
    if (first_bad < 0 || idx < first_bad)
      first_bad = idx;
  }
  if (first_bad >= 0) {
    const std::int64_t br = h.fortran ? first_bad % rows : first_bad / cols;
    const std::int64_t bc = h.fortran ? first_bad / rows : first_bad % cols;
    throw Error(ErrorCode::non_finite,
                fmt::format("{}: non-finite value {} at index {} (row {}, column {})", name,
                            table(br, bc), first_bad, br, bc));
  }

  if (table.empty() && !options.allow_empty)
    throw Error(ErrorCode::empty_input,
                fmt::format("{}: no data (shape {})", name, shape_text(h.shape)));
  return table;
}

void write_npy(std::FILE *out, const std::filesystem::path &path, const Table<double> &table,
               const WriteOptions &options) {
  const bool f32 = options.npy_float32;
  std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}, {}), }}",
                                 f32 ? "<f4" : "<f8", table.rows(), table.cols());
  // numpy pads so that magic, version, length and header together fill a multiple of 64 bytes,
  // which keeps the data aligned for memory mapping.
  constexpr std::size_t prefix = 10, align = 64;
  const std::size_t unpadded = prefix + dict.size() + 1;
  dict.append((align - unpadded % align) % align, ' ');
  dict.push_back('\n');

  std::string buf(magic);
  buf.push_back('\x01');
  buf.push_back('\x00');
  store_le(buf, static_cast<std::uint16_t>(dict.size()));
  buf += dict;

  constexpr std::size_t flush_at = std::size_t(1) << 16;
  for (std::int64_t i = 0; i < table.rows(); ++i) {
    for (std::int64_t j = 0; j < table.cols(); ++j) {
      if (f32)
        store_le(buf, std::bit_cast<std::uint32_t>(static_cast<float>(table(i, j))));
      else
        store_le(buf, std::bit_cast<std::uint64_t>(table(i, j)));
    }
    if (buf.size() >= flush_at) {
      write_bytes(out, buf, path);
      buf.clear();
    }
  }
  write_bytes(out, buf, path);
}

} // namespace ksum::io::detail
