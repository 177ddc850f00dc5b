// Placement: a pure function from storage lifetimes to addresses. One strategy a file in
// src/strategies/, all behind `place`.
#pragma once

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
  kBest,    // every strategy above, per buffer the smallest; never worse than kGgml
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

struct PlacementOptions {
  Strategy strategy = Strategy::kBest;
};

[[nodiscard]] Result<Placement> place(const Lifetimes& lifetimes, const PlacementOptions& options = {});

// The strategies themselves.
[[nodiscard]] Placement place_ggml(const Lifetimes& lifetimes);
[[nodiscard]] Placement place_greedy(const Lifetimes& lifetimes, const GreedyOptions& options = {});
// The smallest of several placements, chosen per allocator (allocators are independent).
[[nodiscard]] Placement smallest_per_allocator(const Lifetimes& lifetimes, std::vector<Placement> candidates);

// Reference points: the most bytes live at any one step (no placement can use fewer), and
// the bytes a plan without any reuse needs. Per allocator.
[[nodiscard]] std::vector<Bytes> live_lower_bound(const Lifetimes& lifetimes);
[[nodiscard]] std::vector<Bytes> no_reuse_size(const Lifetimes& lifetimes);

}  // namespace galloc
