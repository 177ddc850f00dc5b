// The placement validator: independent of every strategy, it reads only the placement problem
// (storage sizes, live intervals, allocators), as MiniMalloc's validator reads only its Problem.
#pragma once

#include <string>
#include <vector>

#include "galloc/problem.hpp"
#include "galloc/types.hpp"

namespace galloc {

// What the validator can find wrong with a placement.
enum class PlacementIssueKind {
  kMissingAddress,  // a storage object has no chunk
  kBadAlignment,    // offset not a multiple of the allocator's alignment
  kOutOfChunk,      // offset + size beyond the chunk's size
  kOverlap,         // two storage objects live at the same step share bytes
  kChunkTooLarge,   // a chunk above the max size that no single storage object needs
};

struct PlacementIssue {
  PlacementIssueKind kind;
  StorageId storage = -1;
  StorageId other = -1;  // for kOverlap
  std::string message;
};

// Checks a placement against the problem it was made for. Empty: valid. Independent of
// every strategy: it only reads addresses, sizes and live intervals (tails included).
[[nodiscard]] std::vector<PlacementIssue> validate_placement(const Problem& problem, const Placement& placement);

}  // namespace galloc
