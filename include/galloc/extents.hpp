// A placed storage object as rectangles of address x time. A storage object with tail frees
// is not one rectangle: ggml frees its tail when a smaller in-place successor takes over, so
// the bytes above each tail free die at that free's step, before the rest. The validator and
// the timeline both see storage objects this way.
#pragma once

#include <vector>

#include "galloc/problem.hpp"
#include "galloc/types.hpp"

namespace galloc {

// Bytes [bytes.lower, bytes.upper) of a storage object, live over [steps.lower, steps.upper).
struct StorageExtent {
  Interval<Step> steps;
  Interval<Offset> bytes;  // offsets inside the storage object's chunk
  [[nodiscard]] bool empty() const { return steps.empty() || bytes.empty(); }
};

// Fills `out` (cleared first) with the extents of `storage` placed at `offset`, one per
// position and none left out, so that the index says which part it is: [0] is the head, which
// lives longest; [k + 1] is what tail_frees[k] frees, above the head and above later tails.
// Parts that hold no bytes or live at no step are empty(). A caller that loops over many
// storage objects reuses `out`.
void split_at_tail_frees(const StorageObject& storage, Offset offset, std::vector<StorageExtent>& out);

}  // namespace galloc
