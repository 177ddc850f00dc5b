#include "galloc/minimalloc_csv.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <fstream>
#include <iterator>
#include <limits>
#include <ostream>
#include <string_view>
#include <type_traits>
#include <unordered_map>

namespace galloc {

namespace {

// Sizes and offsets stay below this, and so do their sums: the planners add sizes freely.
constexpr Bytes kMaxTotalBytes = Bytes{1} << 62;
constexpr Bytes kMaxAlignment = Bytes{1} << 32;

enum class Column : std::uint8_t { kId, kLower, kUpper, kEnd, kSize, kAlignment, kOffset, kGaps, kOther };

Column column_of(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; });
  if (lower == "id" || lower == "buffer" || lower == "buffer_id") return Column::kId;
  if (lower == "lower" || lower == "start" || lower == "begin") return Column::kLower;
  if (lower == "upper") return Column::kUpper;
  if (lower == "end") return Column::kEnd;
  if (lower == "size") return Column::kSize;
  if (lower == "alignment") return Column::kAlignment;
  if (lower == "offset") return Column::kOffset;
  if (lower == "gaps") return Column::kGaps;
  return Column::kOther;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t' || text.front() == '\r')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) text.remove_suffix(1);
  return text;
}

std::vector<std::string_view> split_fields(std::string_view line) {
  std::vector<std::string_view> fields;
  std::size_t begin = 0;
  while (true) {
    const std::size_t comma = line.find(',', begin);
    if (comma == std::string_view::npos) {
      fields.push_back(trim(line.substr(begin)));
      return fields;
    }
    fields.push_back(trim(line.substr(begin, comma - begin)));
    begin = comma + 1;
  }
}

// At most 40 characters of a field, for messages.
std::string shown(std::string_view field) {
  std::string text(field.substr(0, 40));
  for (char& c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
  }
  return field.size() > 40 ? text + "..." : text;
}

std::string at_line(std::size_t line) { return "line " + std::to_string(line) + ": "; }

template <typename T>
Status parse_integer(std::string_view field, std::size_t line, std::string_view what, T& value) {
  const std::string prefix = at_line(line) + std::string(what) + " '" + shown(field) + "'";
  if (field.empty()) return invalid_argument(at_line(line) + std::string(what) + " is empty");
  const char* begin = field.data();
  const char* end = field.data() + field.size();
  if constexpr (std::is_unsigned_v<T>) {
    if (*begin == '-') return invalid_argument(prefix + " is negative");
  }
  if (*begin == '+') {  // from_chars takes no plus sign
    ++begin;
    if (begin != end && *begin == '-') return invalid_argument(prefix + " is not a number");
  }
  const auto [ptr, error] = std::from_chars(begin, end, value);
  if (error == std::errc::result_out_of_range) return invalid_argument(prefix + " is out of range");
  if (error != std::errc() || ptr != end || begin == end) return invalid_argument(prefix + " is not a number");
  return Status::ok();
}

struct Row {
  std::size_t line = 0;
  std::string id;
  Interval<TimeValue> time;
  Bytes size = 0;
  Bytes alignment = 1;
  std::optional<Offset> offset;
};

Result<CsvProblem> build_problem(std::vector<Row> rows, bool has_alignment, const CsvOptions& options) {
  CsvProblem csv;
  csv.has_alignment_column = has_alignment;
  Bytes alignment = 1;
  for (const Row& row : rows) alignment = std::max(alignment, row.alignment);
  csv.problem.allocators.push_back({alignment, options.max_chunk_size});

  struct Point {
    TimeValue time;
    int kind;  // 0: free, 1: allocate (frees first at equal times: intervals are half-open)
    std::size_t row;
  };
  std::vector<Point> points;
  points.reserve(rows.size() * 2);
  for (std::size_t r = 0; r < rows.size(); ++r) {
    points.push_back({rows[r].time.lower, 1, r});
    points.push_back({rows[r].time.upper, 0, r});
  }
  std::sort(points.begin(), points.end(), [](const Point& a, const Point& b) {
    if (a.time != b.time) return a.time < b.time;
    if (a.kind != b.kind) return a.kind < b.kind;
    return a.row < b.row;
  });

  csv.problem.storages.resize(rows.size());
  csv.problem.events.reserve(points.size());
  for (std::size_t r = 0; r < rows.size(); ++r) {
    StorageObject& storage = csv.problem.storages[r];
    storage.allocator = 0;
    storage.size = align_up(rows[r].size, alignment);
  }
  for (std::size_t i = 0; i < points.size(); ++i) {
    const Point& point = points[i];
    StorageObject& storage = csv.problem.storages[point.row];
    LifetimeEvent event;
    event.storage = static_cast<StorageId>(point.row);
    event.size = storage.size;
    if (point.kind == 1) {
      event.kind = LifetimeEvent::Kind::kAllocate;
      storage.live.lower = static_cast<Step>(i);
    } else {
      event.kind = LifetimeEvent::Kind::kFree;
      storage.live.upper = static_cast<Step>(i);
    }
    csv.problem.events.push_back(event);
  }

  for (Row& row : rows) {
    csv.ids.push_back(std::move(row.id));
    csv.given_offsets.push_back(row.offset);
    csv.times.push_back(row.time);
    csv.sizes.push_back(row.size);
    csv.alignments.push_back(row.alignment);
  }
  return csv;
}

}  // namespace

Result<CsvProblem> read_minimalloc_csv(std::istream& input, const CsvOptions& options) {
  if (options.max_chunk_size == 0) return invalid_argument("max_chunk_size must be at least 1");
  const std::string text((std::istreambuf_iterator<char>(input)), std::istreambuf_iterator<char>());
  if (input.bad()) return invalid_argument("could not read the input");
  std::string_view rest(text);
  if (rest.substr(0, 3) == "\xEF\xBB\xBF") rest.remove_prefix(3);  // a UTF-8 byte order mark

  std::array<int, static_cast<std::size_t>(Column::kOther)> column_index{};
  column_index.fill(-1);
  std::size_t header_fields = 0;
  bool have_header = false;
  std::vector<Row> rows;
  std::unordered_map<std::string, std::size_t> id_line;
  Bytes total = 0;

  std::size_t line_number = 0;
  while (!rest.empty()) {
    const std::size_t newline = rest.find('\n');
    const std::string_view line = rest.substr(0, newline);
    rest.remove_prefix(newline == std::string_view::npos ? rest.size() : newline + 1);
    ++line_number;
    if (trim(line).empty()) continue;
    const std::vector<std::string_view> fields = split_fields(line);

    if (!have_header) {
      have_header = true;
      header_fields = fields.size();
      for (std::size_t f = 0; f < fields.size(); ++f) {
        const Column column = column_of(fields[f]);
        if (column == Column::kOther) continue;
        int& index = column_index[static_cast<std::size_t>(column)];
        if (index >= 0) {
          return invalid_argument(at_line(line_number) + "column '" + shown(fields[f]) + "' repeats column " +
                                  std::to_string(index + 1));
        }
        index = static_cast<int>(f);
      }
      auto has = [&](Column column) { return column_index[static_cast<std::size_t>(column)] >= 0; };
      if (has(Column::kUpper) && has(Column::kEnd)) {
        return invalid_argument(at_line(line_number) + "both 'upper' and 'end' columns");
      }
      std::string missing;
      if (!has(Column::kId)) missing += " 'id'";
      if (!has(Column::kLower)) missing += " 'lower'";
      if (!has(Column::kUpper) && !has(Column::kEnd)) missing += " 'upper'";
      if (!has(Column::kSize)) missing += " 'size'";
      if (!missing.empty()) {
        return invalid_argument(at_line(line_number) + "the header '" + shown(trim(line)) + "' lacks the column(s)" +
                                missing + " (expected id,lower,upper,size)");
      }
      continue;
    }

    if (fields.size() != header_fields) {
      return invalid_argument(at_line(line_number) + std::to_string(fields.size()) + " fields, the header has " +
                              std::to_string(header_fields));
    }
    if (rows.size() >= (std::size_t{1} << 30)) return invalid_argument(at_line(line_number) + "too many rows");
    auto field = [&](Column column) {
      return fields[static_cast<std::size_t>(column_index[static_cast<std::size_t>(column)])];
    };
    auto has = [&](Column column) { return column_index[static_cast<std::size_t>(column)] >= 0; };

    Row row;
    row.line = line_number;
    row.id = std::string(field(Column::kId));
    if (row.id.empty()) return invalid_argument(at_line(line_number) + "id is empty");
    if (auto [it, inserted] = id_line.emplace(row.id, line_number); !inserted) {
      return invalid_argument(at_line(line_number) + "id '" + shown(row.id) + "' was already used on line " +
                              std::to_string(it->second));
    }
    GALLOC_RETURN_IF_ERROR(parse_integer(field(Column::kLower), line_number, "lower", row.time.lower));
    if (has(Column::kUpper)) {
      GALLOC_RETURN_IF_ERROR(parse_integer(field(Column::kUpper), line_number, "upper", row.time.upper));
    } else {
      TimeValue end = 0;
      GALLOC_RETURN_IF_ERROR(parse_integer(field(Column::kEnd), line_number, "end", end));
      if (end == std::numeric_limits<TimeValue>::max()) {
        return invalid_argument(at_line(line_number) + "end " + std::to_string(end) + " is out of range");
      }
      row.time.upper = end + 1;  // an inclusive end
    }
    if (row.time.upper <= row.time.lower) {
      return invalid_argument(at_line(line_number) + "upper " + std::to_string(row.time.upper) + " <= lower " +
                              std::to_string(row.time.lower));
    }
    GALLOC_RETURN_IF_ERROR(parse_integer(field(Column::kSize), line_number, "size", row.size));
    if (has(Column::kAlignment)) {
      GALLOC_RETURN_IF_ERROR(parse_integer(field(Column::kAlignment), line_number, "alignment", row.alignment));
      if (!is_power_of_two(row.alignment) || row.alignment > kMaxAlignment) {
        return invalid_argument(at_line(line_number) + "alignment " + std::to_string(row.alignment) +
                                " is not a power of two up to 2^32");
      }
    }
    if (has(Column::kOffset) && !field(Column::kOffset).empty()) {
      Offset offset = 0;
      GALLOC_RETURN_IF_ERROR(parse_integer(field(Column::kOffset), line_number, "offset", offset));
      if (offset > kMaxTotalBytes) {
        return invalid_argument(at_line(line_number) + "offset " + std::to_string(offset) + " is above 2^62");
      }
      row.offset = offset;
    }
    // Rounded up to the alignment, sizes must still add up to no more than 2^62.
    const Bytes rounded = row.size + (row.alignment - 1);
    if (row.size > kMaxTotalBytes || rounded > kMaxTotalBytes - total) {
      return invalid_argument(at_line(line_number) + "size " + std::to_string(row.size) +
                              ": the sizes add up to more than 2^62 bytes");
    }
    total += rounded;
    rows.push_back(std::move(row));
  }
  if (!have_header) return invalid_argument("empty file: expected the header id,lower,upper,size");
  // The allocator's alignment is the largest; every size rounded up to it must still fit.
  Bytes alignment = 1;
  for (const Row& row : rows) alignment = std::max(alignment, row.alignment);
  if (alignment > 1) {
    Bytes rounded_total = 0;
    for (const Row& row : rows) {
      const Bytes rounded = align_up(row.size, alignment);
      if (rounded > kMaxTotalBytes - rounded_total) {
        return invalid_argument(at_line(row.line) + "size " + std::to_string(row.size) + " rounded up to alignment " +
                                std::to_string(alignment) + ": the sizes add up to more than 2^62 bytes");
      }
      rounded_total += rounded;
    }
  }
  return build_problem(std::move(rows), column_index[static_cast<std::size_t>(Column::kAlignment)] >= 0, options);
}

Result<CsvProblem> read_minimalloc_csv(const std::filesystem::path& path, const CsvOptions& options) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return invalid_argument("cannot open '" + path.string() + "'");
  auto csv = read_minimalloc_csv(file, options);
  if (!csv) return invalid_argument(path.string() + ": " + csv.status().message());
  return csv;
}

void write_minimalloc_csv(std::ostream& output, const CsvProblem& csv, const Placement* placement) {
  const std::size_t n = csv.ids.size();
  bool all_given = n > 0;
  for (const auto& offset : csv.given_offsets) all_given = all_given && offset.has_value();
  const bool with_offsets = placement != nullptr || all_given;

  // Chunks laid end to end: chunk c starts where chunks 0..c-1 end.
  std::vector<Offset> chunk_base;
  if (placement != nullptr && !placement->chunk_sizes.empty()) {
    Offset base = 0;
    for (Bytes size : placement->chunk_sizes.front()) {
      chunk_base.push_back(base);
      base += size;
    }
  }

  output << "id,lower,upper,size";
  if (csv.has_alignment_column) output << ",alignment";
  if (with_offsets) output << ",offset";
  output << '\n';
  for (std::size_t r = 0; r < n; ++r) {
    output << csv.ids[r] << ',' << csv.times[r].lower << ',' << csv.times[r].upper << ',' << csv.sizes[r];
    if (csv.has_alignment_column) output << ',' << csv.alignments[r];
    if (with_offsets) {
      output << ',';
      if (placement != nullptr) {
        if (r < placement->storage_address.size()) {
          const ChunkAddress address = placement->storage_address[r];
          if (address.chunk >= 0 && static_cast<std::size_t>(address.chunk) < chunk_base.size()) {
            output << chunk_base[static_cast<std::size_t>(address.chunk)] + address.offset;
          }
        }
      } else if (csv.given_offsets[r]) {
        output << *csv.given_offsets[r];
      }
    }
    output << '\n';
  }
}

Result<Placement> given_placement(const CsvProblem& csv) {
  Placement placement;
  placement.chunk_sizes.assign(csv.problem.allocators.size(), {});
  Bytes high = 0;
  for (std::size_t r = 0; r < csv.given_offsets.size(); ++r) {
    if (!csv.given_offsets[r])
      return invalid_argument("row " + std::to_string(r) + " (id '" + csv.ids[r] + "') has no offset");
    const Offset offset = *csv.given_offsets[r];
    placement.storage_address.push_back({0, offset});
    high = std::max(high, offset + csv.problem.storages[r].size);
  }
  if (!placement.chunk_sizes.empty()) placement.chunk_sizes.front().push_back(high);
  return placement;
}

std::optional<Bytes> capacity_from_file_name(const std::filesystem::path& path) {
  const std::string stem = path.stem().string();
  const std::size_t dot = stem.rfind('.');
  const std::string_view digits = std::string_view(stem).substr(dot == std::string::npos ? 0 : dot + 1);
  if (digits.empty()) return std::nullopt;
  Bytes value = 0;
  const auto [ptr, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (error != std::errc() || ptr != digits.data() + digits.size()) return std::nullopt;
  return value;
}

std::vector<double> durations_of(const CsvProblem& csv) {
  std::vector<double> durations;
  durations.reserve(csv.times.size());
  for (const Interval<TimeValue>& time : csv.times) {
    durations.push_back(static_cast<double>(time.upper) - static_cast<double>(time.lower));
  }
  return durations;
}

Result<Placement> place_exact(const CsvProblem& csv, const Placement& start, const ExactOptions& options) {
  ExactOptions timed = options;
  timed.durations = durations_of(csv);
  return place_exact(csv.problem, start, timed);
}

}  // namespace galloc
