// MiniMalloc's CSV problem format, in and out: one buffer a row, `id,lower,upper,size`, live
// over the half-open time interval [lower, upper), optionally with `alignment` and `offset`
// columns (a solution). The reader turns a file into a single-allocator Problem, so every
// placement strategy can run on MiniMalloc's benchmarks; the writer emits MiniMalloc's format
// again, with the offsets of a placement.
//
//   id,lower,upper,size          buffer 0 lives over times [0, 10), buffer 1 over [10, 20):
//   0,0,10,4096                  they do not overlap, so both may sit at offset 0.
//   1,10,20,4096
//
// Header names are MiniMalloc's: `buffer` and `buffer_id` stand for `id`, `start` and `begin`
// for `lower`, and `end` for an inclusive upper bound (read as end + 1). A `gaps` column is
// accepted and ignored: a buffer is then treated as live over its whole interval, which is
// conservative (every placement made that way is valid with the gaps too). Unknown columns are
// ignored. I/O stays here: nothing in the planners reads files.
#pragma once

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "galloc/placement.hpp"
#include "galloc/problem.hpp"
#include "galloc/status.hpp"
#include "galloc/types.hpp"

namespace galloc {

using TimeValue = std::int64_t;  // a time in a MiniMalloc file: any 64-bit integer

struct CsvOptions {
  // The allocator's max chunk size (MiniMalloc has none: one buffer of any size).
  Bytes max_chunk_size = kUnlimited;
};

// A MiniMalloc problem as a Problem, plus what the file said that a Problem cannot hold.
// Storage i is row i (in file order); all vectors below are per row.
struct CsvProblem {
  // One allocator (alignment: the largest in the alignment column, 1 without one), one
  // storage per row, one event per step: times are replaced by their order (at equal times
  // frees come before allocations, as intervals are half-open), so two storages overlap in
  // steps exactly when the rows overlap in time.
  Problem problem;
  std::vector<std::string> ids;
  std::vector<std::optional<Offset>> given_offsets;  // the offset column, where there is one
  std::vector<Interval<TimeValue>> times;            // [lower, upper) as in the file
  std::vector<Bytes> sizes;                          // as in the file (storages round them up
                                                     // to the alignment)
  std::vector<Bytes> alignments;                     // 1 without an alignment column
  bool has_alignment_column = false;
};

// Parses a whole CSV. Errors are kInvalidArgument and name the line and the field:
// "line 17: size 'abc' is not a number". Never crashes, whatever the input.
[[nodiscard]] Result<CsvProblem> read_minimalloc_csv(std::istream& input, const CsvOptions& options = {});
[[nodiscard]] Result<CsvProblem> read_minimalloc_csv(const std::filesystem::path& path, const CsvOptions& options = {});

// Writes `id,lower,upper,size[,alignment][,offset]` with the file's own ids, times and sizes.
// The offset column comes from `placement` (chunks laid end to end when there are several),
// or, without one, from the given offsets when every row had one.
void write_minimalloc_csv(std::ostream& output, const CsvProblem& problem, const Placement* placement);

// The given offsets as a placement (one chunk, as large as the highest buffer end), so a
// solution read from a file can be validated; kInvalidArgument when a row has no offset.
[[nodiscard]] Result<Placement> given_placement(const CsvProblem& problem);

// The exact search (place_exact in placement.hpp) on a MiniMalloc problem, ranking buffers by
// how long they live in the file's own times instead of in steps, which are all a Problem
// keeps. MiniMalloc's orders are made for those times: on its challenging benchmarks they
// decide between well under a second and no solution at all.
[[nodiscard]] Result<Placement> place_exact(const CsvProblem& problem, const Placement& start,
                                            const ExactOptions& options);
// How long each row lives in the file's times: ExactOptions::durations for a search of it
// (best's, when it must meet a capacity, too).
[[nodiscard]] std::vector<double> durations_of(const CsvProblem& problem);

// The capacity MiniMalloc's benchmark files carry in their name: "A.1048576.csv" -> 1048576.
[[nodiscard]] std::optional<Bytes> capacity_from_file_name(const std::filesystem::path& path);

}  // namespace galloc
