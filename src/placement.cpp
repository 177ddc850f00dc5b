#include "galloc/placement.hpp"

#include <algorithm>
#include <array>

namespace galloc {

namespace {
struct StrategyName {
  Strategy strategy;
  std::string_view name;
};
constexpr std::array<StrategyName, 4> kStrategies{{{Strategy::kGgml, "ggml"},
                                                   {Strategy::kGreedy, "greedy"},
                                                   {Strategy::kExact, "exact"},
                                                   {Strategy::kBest, "best"}}};

Bytes total(const std::vector<Bytes>& chunks) {
  Bytes sum = 0;
  for (Bytes c : chunks) sum += c;
  return sum;
}

bool at_lower_bound(const Placement& placement, const std::vector<Bytes>& lower) {
  for (std::size_t a = 0; a < lower.size(); ++a) {
    if (total(placement.chunk_sizes[a]) > lower[a]) return false;
  }
  return true;
}

// ggml, then (only where it is above the lower bound) the greedy variants.
Placement best_of_fast_strategies(const Lifetimes& lifetimes) {
  std::vector<Placement> candidates;
  candidates.push_back(place_ggml(lifetimes));
  if (at_lower_bound(candidates.front(), live_lower_bound(lifetimes))) return std::move(candidates.front());
  for (GreedyOrder order : {GreedyOrder::kDecreasingSize, GreedyOrder::kStartTime}) {
    for (GapChoice gap : {GapChoice::kBestFit, GapChoice::kLowestOffset}) {
      candidates.push_back(place_greedy(lifetimes, {order, gap}));
    }
  }
  return smallest_per_allocator(lifetimes, std::move(candidates));
}
}  // namespace

std::string_view strategy_name(Strategy strategy) {
  for (const auto& entry : kStrategies) {
    if (entry.strategy == strategy) return entry.name;
  }
  return "unknown";
}

Result<Strategy> strategy_from_name(std::string_view name) {
  std::string known;
  for (const auto& entry : kStrategies) {
    if (entry.name == name) return entry.strategy;
    known += (known.empty() ? "" : ", ") + std::string(entry.name);
  }
  return invalid_argument("unknown strategy '" + std::string(name) + "' (known: " + known + ")");
}

std::vector<Strategy> all_strategies() {
  std::vector<Strategy> result;
  for (const auto& entry : kStrategies) result.push_back(entry.strategy);
  return result;
}

Result<Placement> place(const Lifetimes& lifetimes, const PlacementOptions& options) {
  switch (options.strategy) {
    case Strategy::kGgml:
      return place_ggml(lifetimes);
    case Strategy::kGreedy:
      return place_greedy(lifetimes);
    case Strategy::kExact:
      return place_exact(lifetimes, best_of_fast_strategies(lifetimes), options.exact);
    case Strategy::kBest: {
      Placement best = best_of_fast_strategies(lifetimes);
      if (options.best_search_seconds <= 0) return best;
      const auto lower = live_lower_bound(lifetimes);
      bool worth_it = false;
      for (std::size_t a = 0; a < lower.size(); ++a) {
        const auto size = static_cast<double>(total(best.chunk_sizes[a]));
        worth_it = worth_it || size > static_cast<double>(lower[a]) * (1.0 + options.best_search_min_gap);
      }
      if (!worth_it) return best;
      ExactOptions search;
      search.time_limit_seconds = options.best_search_seconds;
      auto searched = place_exact(lifetimes, best, search);
      if (!searched) return best;
      return smallest_per_allocator(lifetimes, {std::move(best), std::move(searched).value()});
    }
  }
  return invalid_argument("unknown strategy " + std::to_string(static_cast<int>(options.strategy)));
}

Placement smallest_per_allocator(const Lifetimes& lifetimes, std::vector<Placement> candidates) {
  const std::size_t n_allocators = lifetimes.allocators.size();
  // Strictly smaller, or as small with fewer chunks; earlier candidates win ties.
  std::vector<std::size_t> winner(n_allocators, 0);
  for (std::size_t a = 0; a < n_allocators; ++a) {
    for (std::size_t i = 1; i < candidates.size(); ++i) {
      const auto& mine = candidates[i].chunk_sizes[a];
      const auto& theirs = candidates[winner[a]].chunk_sizes[a];
      if (total(mine) < total(theirs) || (total(mine) == total(theirs) && mine.size() < theirs.size())) {
        winner[a] = i;
      }
    }
  }
  Placement best;
  best.storage_address.resize(lifetimes.storages.size());
  for (std::size_t s = 0; s < lifetimes.storages.size(); ++s) {
    const auto a = static_cast<std::size_t>(lifetimes.storages[s].allocator);
    best.storage_address[s] = candidates[winner[a]].storage_address[s];
  }
  for (std::size_t a = 0; a < n_allocators; ++a) best.chunk_sizes.push_back(candidates[winner[a]].chunk_sizes[a]);
  return best;
}

std::vector<Bytes> live_lower_bound(const Lifetimes& lifetimes) {
  std::vector<Bytes> live(lifetimes.allocators.size(), 0);
  std::vector<Bytes> peak(lifetimes.allocators.size(), 0);
  for (const LifetimeEvent& event : lifetimes.events) {
    const auto a = static_cast<std::size_t>(
        lifetimes.storages[static_cast<std::size_t>(event.storage)].allocator);
    if (event.kind == LifetimeEvent::Kind::kAllocate) {
      live[a] += event.size;
      peak[a] = std::max(peak[a], live[a]);
    } else {
      live[a] -= event.size;
    }
  }
  return peak;
}

std::vector<Bytes> no_reuse_size(const Lifetimes& lifetimes) {
  std::vector<Bytes> total(lifetimes.allocators.size(), 0);
  for (const StorageObject& storage : lifetimes.storages) {
    total[static_cast<std::size_t>(storage.allocator)] += storage.size;
  }
  return total;
}

}  // namespace galloc
