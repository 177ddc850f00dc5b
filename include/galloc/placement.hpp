// Placement: a pure function from a placement problem (problem.hpp) to addresses. One strategy
// a file in src/strategies/; every one of them is an entry of the registry below, by name.
#pragma once

#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include "galloc/problem.hpp"
#include "galloc/status.hpp"
#include "galloc/types.hpp"

namespace galloc {

enum class Strategy {
  kGgml,                         // online best fit in execution order, exactly as upstream ggml-alloc
  kGreedy,                       // greedy by decreasing size, into the best-fitting gap
  kGreedyLowestOffset,           // greedy by decreasing size, into the lowest gap that fits
  kGreedyByStart,                // greedy in order of allocation, into the best-fitting gap
  kGreedyByStartLowestOffset,    // greedy in order of allocation, into the lowest gap that fits
  kGreedyLateFirst,              // greedy by decreasing size, the later end first, into the best-fitting gap
  kLowestOffsetFirst,            // lowest offset first; the busiest, then the largest area
  kLowestOffsetFirstByLifetime,  // lowest offset first; the busiest, then the longest lifetime
  kExact,                        // offline search for the smallest buffer within a time budget (MiniMalloc)
  kBest,                         // the heuristics, ggml among them, until one reaches the lower bound; per buffer
                                 // the smallest (never worse than kGgml); then the exact search where the gap to
                                 // the lower bound is still large and a budget is given
};

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
  // times, which a Problem reduces to their order); empty, or of another length: in steps.
  // Only the order in which the search tries objects depends on it.
  std::vector<double> durations;
};

struct PlacementOptions {
  Strategy strategy = Strategy::kBest;
  ExactOptions exact;  // for kExact; kBest reads its capacity, durations and progress callback
  // kBest runs the exact search only with a budget (seconds per allocator; 0: never) and only
  // on allocators whose best size is more than `best_search_min_gap` above the lower bound;
  // and whenever its heuristics miss `exact.capacity`, for `best_search_seconds` or else
  // `exact.time_limit_seconds`, failing as the exact search does when no placement fits.
  double best_search_seconds = 0;
  double best_search_min_gap = 0.001;
};

// The registry: every strategy, by name. `best` tries the heuristics (in an order of its own,
// the most often smallest first) and keeps, per buffer, the smallest.
struct NamedStrategy {
  Strategy strategy;
  std::string_view name;
  std::string_view summary;  // one line, for help texts
  bool heuristic;            // one cheap pass that never fails: a candidate of `best`
  Result<Placement> (*place)(const Problem& problem, const PlacementOptions& options);
};
[[nodiscard]] Span<const NamedStrategy> strategy_registry();
[[nodiscard]] std::string_view strategy_name(Strategy strategy);
[[nodiscard]] Result<Strategy> strategy_from_name(std::string_view name);
[[nodiscard]] std::vector<Strategy> all_strategies();  // the registry's, in its order

[[nodiscard]] Result<Placement> place(const Problem& problem, const PlacementOptions& options = {});

// The strategies themselves.
[[nodiscard]] Placement place_ggml(const Problem& problem);

enum class GreedyOrder {
  kDecreasingSize,           // largest first (XLA's spatial order)
  kStartTime,                // in order of allocation (XLA's temporal order)
  kDecreasingSizeLateFirst,  // largest first; among equal sizes, the one freed last first
};
enum class GapChoice {
  kBestFit,       // the smallest gap that fits
  kLowestOffset,  // the first gap that fits
};
struct GreedyOptions {
  GreedyOrder order = GreedyOrder::kDecreasingSize;
  GapChoice gap = GapChoice::kBestFit;
};
// Offline: objects in `order`, each into a gap among the placed objects it is live with
// (Pisarchyk & Lee).
[[nodiscard]] Placement place_greedy(const Problem& problem, const GreedyOptions& options = {});

// Objects in non-decreasing offset order, each at the lowest offset above the placed objects
// it is live with; among equals, the one live at the busiest step first, then by `order`:
// the exact search's first descent without its backtracking
// (src/strategies/lowest_offset_first.cpp). It costs about as much as one greedy variant;
// kBusiestThenArea is the default because it reaches the lower bound most often
// (docs/PERFORMANCE.md has the graphs and figures).
enum class LowestOffsetOrder {
  kBusiestThenArea,      // then the larger size x lifetime, then the longer (MiniMalloc's TAW)
  kBusiestThenLifetime,  // then the longer lifetime, then the larger area (TWA)
};
struct LowestOffsetOptions {
  LowestOffsetOrder order = LowestOffsetOrder::kBusiestThenArea;
};
[[nodiscard]] Placement place_lowest_offset_first(const Problem& problem, const LowestOffsetOptions& options = {});

// Starts from `start` (a valid placement, say greedy's) and searches for smaller ones.
[[nodiscard]] Result<Placement> place_exact(const Problem& problem, const Placement& start,
                                            const ExactOptions& options);

// The bytes one allocator's placement needs: the sum of its chunk sizes.
[[nodiscard]] Bytes chunks_total(const std::vector<Bytes>& chunk_sizes);

// Reference points: the most bytes live at any one step (no placement can use fewer), and
// the bytes a plan without any reuse needs. Per allocator.
[[nodiscard]] std::vector<Bytes> live_lower_bound(const Problem& problem);
[[nodiscard]] std::vector<Bytes> no_reuse_size(const Problem& problem);

}  // namespace galloc
