// What the strategies share and `best` decides with, and the knobs that only tune cost. Private
// to the library (src/ is a private include directory); tests include it to check the pieces.
#pragma once

#include <cstddef>
#include <vector>

#include "galloc/placement.hpp"
#include "galloc/problem.hpp"

namespace galloc::detail {

// The storage objects of each allocator, in id order (for strategies that place allocator by
// allocator).
[[nodiscard]] std::vector<std::vector<StorageId>> storages_by_allocator(const Problem& problem);

// The smallest of several placements, chosen per allocator (allocators are independent).
// Strictly smaller, or as small in fewer chunks; earlier candidates win ties.
[[nodiscard]] Placement smallest_per_allocator(const Problem& problem, std::vector<Placement> candidates);

// Whether no placement can win over this one in smallest_per_allocator: every allocator at its
// lower bound (`lower`, from live_lower_bound) in as few chunks as its max size allows.
[[nodiscard]] bool cannot_be_beaten(const Problem& problem, const Placement& placement,
                                    const std::vector<Bytes>& lower);

// ggml, then every heuristic of the registry until every allocator is at its lower bound;
// per allocator the smallest.
[[nodiscard]] Placement best_of_heuristics(const Problem& problem);

// Up to this many storage objects, `best` tries lowest-offset-first before greedy into the
// lowest gap. On small problems the two cost about the same, so trying lowest-offset-first
// first costs little where greedy would have been enough and saves greedy's attempt where it
// falls short (training-llama-2l, ResNet-50, ViT-B/16, gpt2-small-tg1); above it, greedy,
// cheaper on most large graphs, goes first. docs/PERFORMANCE.md has the measured costs.
inline constexpr std::size_t kLowestOffsetFirstUpTo = 336;

// Lowest-offset-first finds its next object in one of two ways with the same result. Up to this
// many objects in a chunk, every waiting object's lowest offset is kept up to date and scanned
// in vector code after each placement (quadratic, but cheaper than the heap on all but the
// smallest zoo graphs); above it, a lazy heap over a skyline tree looks again only at objects
// that reach its top.
inline constexpr std::size_t kScanUpTo = 1024;

// place_lowest_offset_first with the picker's threshold given, so that tests can compare the two.
[[nodiscard]] Placement place_lowest_offset_first(const Problem& problem, const LowestOffsetOptions& options,
                                                  std::size_t scan_up_to);

}  // namespace galloc::detail
