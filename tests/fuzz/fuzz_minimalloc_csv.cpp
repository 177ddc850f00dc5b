// Fuzz target: the MiniMalloc CSV reader. Whatever the bytes: a problem or kInvalidArgument,
// never a crash; an accepted problem is consistent, places (ggml, greedy) into a valid
// placement, and written out with that placement reads back to the same rows.
#include <sstream>
#include <string>

#include "fuzz_support.hpp"
#include "galloc/minimalloc_csv.hpp"
#include "galloc/validator.hpp"

using namespace galloc;
using galloc::fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::istringstream input(std::string(reinterpret_cast<const char*>(data), size));
  auto problem = read_minimalloc_csv(input);
  if (!problem) {
    require(problem.status().code() == ErrorCode::kInvalidArgument,
            "rejected with " + problem.status().to_string() + " instead of invalid argument");
    require(!problem.status().message().empty(), "rejected without a message");
    return 0;
  }
  const Problem& lifetimes = problem->problem;
  const std::size_t rows = problem->ids.size();
  require(lifetimes.storages.size() == rows && problem->times.size() == rows && problem->sizes.size() == rows &&
              problem->given_offsets.size() == rows && problem->alignments.size() == rows,
          "per-row vectors differ in length");
  require(lifetimes.allocators.size() == 1, "not one allocator");
  require(is_power_of_two(lifetimes.allocators[0].alignment), "alignment is not a power of two");
  for (const StorageObject& s : lifetimes.storages) {
    require(s.live.lower >= 0 && s.live.upper <= lifetimes.step_count() && s.live.lower <= s.live.upper,
            "a storage lives outside the steps");
  }
  if (rows > 2000) return 0;
  Placement placement = place_ggml(lifetimes);
  auto issues = validate_placement(lifetimes, placement);
  require(issues.empty(), "ggml: invalid placement: " + (issues.empty() ? "" : issues.front().message));
  const Placement greedy = place_greedy(lifetimes);
  issues = validate_placement(lifetimes, greedy);
  require(issues.empty(), "greedy: invalid placement: " + (issues.empty() ? "" : issues.front().message));
  if (auto given = given_placement(*problem)) (void)validate_placement(lifetimes, *given);

  std::ostringstream out;
  write_minimalloc_csv(out, *problem, &greedy);
  std::istringstream back_in(out.str());
  auto back = read_minimalloc_csv(back_in);
  require(back.is_ok(), "written CSV does not read back: " + back.status().to_string() + "\n" + out.str());
  require(back->ids == problem->ids && back->times == problem->times && back->sizes == problem->sizes,
          "written CSV reads back to other rows\n" + out.str());
  return 0;
}
