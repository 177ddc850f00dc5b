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

// Every heuristic, in best_order, until no placement can beat the best so far
// (cannot_be_beaten); per allocator the smallest.
[[nodiscard]] Placement best_of_heuristics(const Problem& problem);

// The order `best` tries the heuristics in. It stops at the first placement no other can
// beat, so those that are cheap and often reach the live lower bound go first; how often each
// does is in docs/PERFORMANCE.md (`python3 bench/at_bound.py`).
//   - ggml is the cheapest, and linear in the objects where the greedy variants are not on the
//     pathological graphs of docs/RELIABILITY.md (P4): it goes first on problems above
//     kGreedyFirstUpTo objects, where such a graph would make greedy slow.
//   - Greedy into the lowest gap reaches the bound on most graphs and costs less than either
//     lowest-offset-first. Between kLowestOffsetFirstUpTo and kGreedyFirstUpTo objects it goes
//     first: behind ggml it ran anyway wherever ggml missed the bound, and ggml's run was
//     wasted there.
//   - Lowest-offset-first by lifetime is alone in reaching the bound on some flash-attention
//     graphs, so it goes second where greedy goes first.
//   - Lowest-offset-first (busiest, then area) costs about what greedy does on small problems
//     and alone reaches the bound on some of the zoo's (a training step, ResNet-50, ViT-B/16,
//     a GPT-2 token step), so it goes first up to kLowestOffsetFirstUpTo objects.
//   - Each of the rest is alone the smallest on a few random graphs, so they stay, behind.
[[nodiscard]] Span<const Strategy> best_order(const Problem& problem);
inline constexpr std::size_t kLowestOffsetFirstUpTo = 336;
inline constexpr std::size_t kGreedyFirstUpTo = 4096;

// Lowest-offset-first finds its next object in one of two ways with the same result. Up to this
// many objects in a chunk, every waiting object's lowest offset is kept up to date and scanned
// in vector code after each placement (quadratic, but cheaper than the heap except on small
// problems); above it, a lazy heap over a skyline tree looks again only at objects
// that reach its top.
inline constexpr std::size_t kScanUpTo = 1024;

// place_lowest_offset_first with the picker's threshold given, so that tests can compare the two.
[[nodiscard]] Placement place_lowest_offset_first(const Problem& problem, const LowestOffsetOptions& options,
                                                  std::size_t scan_up_to);

}  // namespace galloc::detail
