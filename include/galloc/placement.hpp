// Placement: a pure function from storage lifetimes to addresses. One strategy a file in
// src/strategies/, all behind `place`.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "galloc/dynamic_allocator.hpp"
#include "galloc/lifetimes.hpp"
#include "galloc/status.hpp"

namespace galloc {

struct Placement {
  std::vector<ChunkAddress> storage_address;      // per storage object
  std::vector<std::vector<Bytes>> chunk_sizes;    // per allocator, per chunk: bytes needed
};

enum class Strategy {
  kGgml,    // online best fit in execution order, exactly as upstream ggml-alloc
  kGreedy,  // offline: decreasing size, each at the best-fitting gap (Pisarchyk & Lee)
  kExact,   // offline search for the smallest buffer within a time budget (MiniMalloc)
  kBest,    // ggml, then greedy and lowest-offset-first variants until one reaches the lower
            // bound; per buffer the smallest (never worse than kGgml); then the exact search
            // where the gap to the lower bound is still large and a budget is given
};

enum class GreedyOrder {
  kDecreasingSize,  // largest first (XLA's spatial order)
  kStartTime,       // in order of allocation (XLA's temporal order)
};
enum class GapChoice {
  kBestFit,       // the smallest gap that fits
  kLowestOffset,  // the first gap that fits
};
struct GreedyOptions {
  GreedyOrder order = GreedyOrder::kDecreasingSize;
  GapChoice gap = GapChoice::kBestFit;
};

[[nodiscard]] std::string_view strategy_name(Strategy strategy);
[[nodiscard]] Result<Strategy> strategy_from_name(std::string_view name);
[[nodiscard]] std::vector<Strategy> all_strategies();

// Progress of a long search: the best size so far, the lower bound, seconds left.
struct SearchProgress {
  Bytes best = 0;
  Bytes lower_bound = 0;
  double seconds_left = 0;
};

struct ExactOptions {
  double time_limit_seconds = 1.0;  // per allocator; the best placement found so far is kept
  // When set: a placement must fit in this many bytes (a MiniMalloc capacity); a search that
  // cannot find one returns kInfeasible (proved) or kDeadlineExceeded (ran out of time).
  std::optional<Bytes> capacity;
  std::function<void(const SearchProgress&)> on_progress;  // called from the searching thread
  // Per storage object, how long it lives in the caller's own time units (a MiniMalloc file's
  // times, which a Lifetimes reduces to their order); empty, or of another length: in steps.
  // Only the order in which the search tries objects depends on it.
  std::vector<double> durations;
};

struct PlacementOptions {
  Strategy strategy = Strategy::kBest;
  ExactOptions exact;  // for kExact
  // kBest runs the exact search only with a budget (seconds per allocator; 0: never) and only
  // on allocators whose best size is more than `best_search_min_gap` above the lower bound.
  double best_search_seconds = 0;
  double best_search_min_gap = 0.001;
};

[[nodiscard]] Result<Placement> place(const Lifetimes& lifetimes, const PlacementOptions& options = {});

// The strategies themselves.
[[nodiscard]] Placement place_ggml(const Lifetimes& lifetimes);
[[nodiscard]] Placement place_greedy(const Lifetimes& lifetimes, const GreedyOptions& options = {});
// Objects in non-decreasing offset order, each at the lowest offset above the placed objects
// it is live with; among equals, the one live at the busiest step first, then by `order`:
// the exact search's first descent without its backtracking
// (src/strategies/lowest_offset_first.cpp). It costs about as much as one greedy variant;
// with kBusiestThenArea it reaches the live lower bound on every zoo graph.
enum class LowestOffsetOrder {
  kBusiestThenArea,      // then the larger size x lifetime, then the longer (MiniMalloc's TAW)
  kBusiestThenLifetime,  // then the longer lifetime, then the larger area (TWA)
};
struct LowestOffsetOptions {
  LowestOffsetOrder order = LowestOffsetOrder::kBusiestThenArea;
  // Up to this many objects in a chunk, every waiting object's lowest offset is kept up to
  // date and scanned in vector code after each placement (quadratic, but cheaper than the
  // heap on all but the smallest zoo graphs); above it, a lazy heap over
  // a skyline tree looks again only at objects that reach its top. Same placement either
  // way; only the cost differs (tests set it to compare the two).
  std::size_t scan_up_to = 1024;
};
[[nodiscard]] Placement place_lowest_offset_first(const Lifetimes& lifetimes,
                                                  const LowestOffsetOptions& options = {});
// Starts from `start` (a valid placement, say greedy's) and searches for smaller ones.
[[nodiscard]] Result<Placement> place_exact(const Lifetimes& lifetimes, const Placement& start,
                                            const ExactOptions& options);
// The bytes one allocator's placement needs: the sum of its chunk sizes.
[[nodiscard]] Bytes chunks_total(const std::vector<Bytes>& chunk_sizes);
// The storage objects of each allocator, in id order (for strategies that place allocator by
// allocator).
[[nodiscard]] std::vector<std::vector<StorageId>> storages_by_allocator(const Lifetimes& lifetimes);
// The smallest of several placements, chosen per allocator (allocators are independent).
[[nodiscard]] Placement smallest_per_allocator(const Lifetimes& lifetimes, std::vector<Placement> candidates);

// Reference points: the most bytes live at any one step (no placement can use fewer), and
// the bytes a plan without any reuse needs. Per allocator.
[[nodiscard]] std::vector<Bytes> live_lower_bound(const Lifetimes& lifetimes);
[[nodiscard]] std::vector<Bytes> no_reuse_size(const Lifetimes& lifetimes);
// Whether no placement can win over this one in smallest_per_allocator: every allocator at its
// lower bound (`lower`, from live_lower_bound) in as few chunks as its max size allows.
[[nodiscard]] bool cannot_be_beaten(const Lifetimes& lifetimes, const Placement& placement,
                                    const std::vector<Bytes>& lower);

}  // namespace galloc
