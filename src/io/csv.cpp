#include "io/io_detail.hpp"

#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <fmt/format.h>
#include <iterator>
#include <vector>

namespace ksum::io::detail {
namespace {

constexpr std::string_view blanks = " \t";

std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(blanks);
  if (first == std::string_view::npos)
    return {};
  return s.substr(first, s.find_last_not_of(blanks) - first + 1);
}

// A field as shown in a message: control characters escaped and long fields cut, so one bad cell in
// a binary or misdelimited file cannot flood the terminal.
std::string shown_field(std::string_view s) {
  constexpr std::size_t max_shown = 40;
  std::string out = "'";
  for (std::size_t i = 0; i < s.size() && i < max_shown; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '\t')
      out += "\\t";
    else if (c == '\r')
      out += "\\r";
    else if (c < 0x20 || c == 0x7f)
      out += fmt::format("\\x{:02x}", c);
    else
      out += static_cast<char>(c);
  }
  if (s.size() > max_shown)
    out += "...";
  out += '\'';
  return out;
}

// from_chars reports both overflow and underflow as out of range without a value; they need
// different answers (an error versus zero), so look at the decimal exponent of the leading
// significant digit. `s` is a decimal literal from_chars accepted in full.
bool too_large(std::string_view s) {
  if (!s.empty() && s.front() == '-')
    s.remove_prefix(1);
  std::string_view mantissa = s;
  long long exponent = 0;
  if (const auto e = s.find_first_of("eE"); e != std::string_view::npos) {
    mantissa = s.substr(0, e);
    std::string_view digits = s.substr(e + 1);
    const bool negative = !digits.empty() && digits.front() == '-';
    if (!digits.empty() && (digits.front() == '-' || digits.front() == '+'))
      digits.remove_prefix(1);
    const auto res = std::from_chars(digits.data(), digits.data() + digits.size(), exponent);
    if (res.ec == std::errc::result_out_of_range)
      exponent = LLONG_MAX / 2; // so large that the mantissa cannot change the verdict
    if (negative)
      exponent = -exponent;
  }
  const auto point = mantissa.find('.');
  const std::string_view whole = mantissa.substr(0, point);
  const std::string_view frac =
      point == std::string_view::npos ? std::string_view{} : mantissa.substr(point + 1);
  long long lead = 0;
  if (const auto nz = whole.find_first_not_of('0'); nz != std::string_view::npos) {
    lead = static_cast<long long>(whole.size() - nz) - 1;
  } else {
    const auto nzf = frac.find_first_not_of('0');
    if (nzf == std::string_view::npos)
      return false;
    lead = -static_cast<long long>(nzf) - 1;
  }
  return exponent + lead > 0;
}

enum class Number { ok, not_a_number, too_large };

Number parse_number(std::string_view s, double &value) {
  // from_chars rejects a leading '+', which strtod, Python and spreadsheets all accept.
  if (s.size() > 1 && s[0] == '+' && s[1] != '+' && s[1] != '-')
    s.remove_prefix(1);
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec == std::errc::invalid_argument || ptr != s.data() + s.size())
    return Number::not_a_number;
  if (ec == std::errc::result_out_of_range) {
    if (too_large(s))
      return Number::too_large;
    // Below the smallest subnormal: zero is the closest double, as strtod and Python give.
    value = s.front() == '-' ? -0.0 : 0.0;
  }
  return Number::ok;
}

// A field that can only be a column name: something other than a number.
bool is_name(std::string_view field) {
  double ignored = 0;
  return !field.empty() && parse_number(field, ignored) == Number::not_a_number;
}

void split(std::string_view line, std::vector<std::string_view> &fields) {
  fields.clear();
  for (;;) {
    const auto comma = line.find(',');
    fields.push_back(trim(line.substr(0, comma)));
    if (comma == std::string_view::npos)
      return;
    line.remove_prefix(comma + 1);
  }
}

} // namespace

Table<double> read_csv(const std::filesystem::path &path, const ReadOptions &options) {
  const std::string name = display(path);
  std::string text;
  {
    File file = open_for_reading(path);
    text = read_rest(file.get(), path);
  }
  std::string_view rest = text;
  // Spreadsheets often prefix UTF-8 CSV with a byte-order mark; it is not part of the first field.
  if (rest.starts_with("\xEF\xBB\xBF"))
    rest.remove_prefix(3);

  std::vector<std::string_view> fields;
  std::vector<std::vector<double>> columns;
  std::vector<std::string> names;
  std::size_t ncols = 0;
  std::int64_t rows = 0;
  std::int64_t line_no = 0;
  std::int64_t header_line = 0; // 0: no header
  bool seen_content = false;

  while (!rest.empty()) {
    const auto newline = rest.find('\n');
    std::string_view line = rest.substr(0, newline);
    rest = newline == std::string_view::npos ? std::string_view{} : rest.substr(newline + 1);
    ++line_no;
    if (line.ends_with('\r'))
      line.remove_suffix(1);
    const std::string_view content = trim(line);
    if (content.empty() || content.front() == '#')
      continue;
    split(line, fields);

    if (!seen_content) {
      seen_content = true;
      ncols = fields.size();
      columns.resize(ncols);
      bool header = false;
      for (auto f : fields)
        header = header || is_name(f);
      if (header) {
        header_line = line_no;
        for (auto f : fields)
          names.emplace_back(f);
        continue;
      }
    } else if (fields.size() != ncols) {
      // The header alone cannot be checked; disagreement with the first row is reported against it,
      // since that is the line a user would fix.
      if (header_line != 0 && rows == 0)
        throw Error(ErrorCode::parse,
                    fmt::format("{}:{}: header has {} fields, but the first data row (line {}) "
                                "has {}",
                                name, header_line, ncols, line_no, fields.size()));
      throw Error(ErrorCode::parse, fmt::format("{}:{}: expected {} columns, found {}", name,
                                                line_no, ncols, fields.size()));
    }

    for (std::size_t j = 0; j < ncols; ++j) {
      const std::string_view f = fields[j];
      if (f.empty())
        throw Error(ErrorCode::parse, fmt::format("{}:{}:{}: empty field", name, line_no, j + 1));
      double v = 0;
      switch (parse_number(f, v)) {
      case Number::not_a_number:
        throw Error(ErrorCode::parse, fmt::format("{}:{}:{}: cannot parse {} as a number", name,
                                                  line_no, j + 1, shown_field(f)));
      case Number::too_large:
        throw Error(ErrorCode::non_finite,
                    fmt::format("{}:{}:{}: value {} is too large for a double", name, line_no,
                                j + 1, shown_field(f)));
      case Number::ok:
        break;
      }
      if (!std::isfinite(v))
        throw Error(ErrorCode::non_finite, fmt::format("{}:{}:{}: non-finite value {}", name,
                                                       line_no, j + 1, shown_field(f)));
      columns[j].push_back(v);
    }
    ++rows;
  }

  if (rows == 0 && !options.allow_empty) {
    if (header_line != 0)
      throw Error(ErrorCode::empty_input,
                  fmt::format("{}: no data rows (only a header, at line {})", name, header_line));
    throw Error(ErrorCode::empty_input, fmt::format("{}: no data rows", name));
  }
  // A file without a single line says nothing about its width, so it fits whatever width is asked.
  if (!seen_content && options.expect_cols > 0)
    ncols = static_cast<std::size_t>(options.expect_cols);

  Table<double> table(rows, static_cast<std::int64_t>(ncols));
  for (std::size_t j = 0; j < columns.size(); ++j)
    std::copy(columns[j].begin(), columns[j].end(),
              table.col(static_cast<std::int64_t>(j)).begin());
  table.names = std::move(names);
  return table;
}

void write_csv(std::FILE *out, const std::filesystem::path &path, const Table<double> &table,
               const WriteOptions &options) {
  const std::string name = display(path);
  const int digits = options.significant_digits;
  if (digits < 1 || digits > 17)
    throw Error(
        ErrorCode::invalid_argument,
        fmt::format("{}: significant_digits must be between 1 and 17, got {}", name, digits));
  if (table.cols() == 0 && table.rows() > 0)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("{}: cannot write {} rows without columns as CSV", name, table.rows()));

  // Names that would not survive a read back are refused rather than silently mangled.
  if (!table.names.empty()) {
    if (static_cast<std::int64_t>(table.names.size()) != table.cols())
      throw Error(ErrorCode::invalid_argument, fmt::format("{}: {} column names for {} columns",
                                                           name, table.names.size(), table.cols()));
    bool any_name = false;
    for (const std::string &n : table.names) {
      if (n.find_first_of(",\r\n") != std::string::npos)
        throw Error(
            ErrorCode::invalid_argument,
            fmt::format("{}: column name {} contains a comma or line break", name, shown_field(n)));
      any_name = any_name || is_name(trim(n));
    }
    if (trim(table.names.front()).starts_with('#'))
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("{}: column name {} starts with '#', which would make the header a "
                              "comment",
                              name, shown_field(table.names.front())));
    if (!any_name)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("{}: the column names are all numbers or empty, so the header would "
                              "be read back as data",
                              name));
  }

  fmt::memory_buffer buf;
  constexpr std::size_t flush_at = std::size_t(1) << 16;
  const auto flush = [&] {
    write_bytes(out, std::string_view(buf.data(), buf.size()), path);
    buf.clear();
  };
  for (std::size_t j = 0; j < table.names.size(); ++j) {
    if (j > 0)
      buf.push_back(',');
    buf.append(std::string_view(table.names[j]));
  }
  if (!table.names.empty())
    buf.push_back('\n');
  for (std::int64_t i = 0; i < table.rows(); ++i) {
    for (std::int64_t j = 0; j < table.cols(); ++j) {
      if (j > 0)
        buf.push_back(',');
      fmt::format_to(std::back_inserter(buf), "{:.{}g}", table(i, j), digits);
    }
    buf.push_back('\n');
    if (buf.size() >= flush_at)
      flush();
  }
  flush();
}

} // namespace ksum::io::detail
