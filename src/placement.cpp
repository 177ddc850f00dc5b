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

// A placement function best may try; each sees the lifetimes best plans with.
using PlacementFunction = Placement (*)(const Lifetimes&);

// best's candidates after ggml, the most often smallest first, since best stops at the first
// that reaches the lower bound. Greedy by size into the lowest gap is the smallest on 19 of the
// 23 zoo graphs and on 96% of random allocators; lowest-offset-first (busiest, then area)
// reaches the bound on all 23 (on ViT-B/16, ResNet-50, training-llama-2l and gpt2-small-tg1
// alone). Each of the rest is the only smallest on a few random graphs (of about 1,700
// allocators: by size best fit 8, by start best fit 3, by start lowest offset 1; the lifetime
// order lowers the geometric mean over random graphs from 1.0040 to 1.0015 with the others),
// so they stay, behind.
constexpr std::array<PlacementFunction, 6> kCandidatesAfterGgml{
    [](const Lifetimes& l) { return place_greedy(l, {GreedyOrder::kDecreasingSize, GapChoice::kLowestOffset}); },
    [](const Lifetimes& l) { return place_lowest_offset_first(l, {LowestOffsetOrder::kBusiestThenArea}); },
    [](const Lifetimes& l) { return place_greedy(l, {GreedyOrder::kDecreasingSize, GapChoice::kBestFit}); },
    [](const Lifetimes& l) { return place_lowest_offset_first(l, {LowestOffsetOrder::kBusiestThenLifetime}); },
    [](const Lifetimes& l) { return place_greedy(l, {GreedyOrder::kStartTime, GapChoice::kBestFit}); },
    [](const Lifetimes& l) { return place_greedy(l, {GreedyOrder::kStartTime, GapChoice::kLowestOffset}); },
};

// Which of the first two goes first is a matter of cost: up to this size they swap. On small
// graphs lowest-offset-first costs about what greedy does, so trying it first costs little
// where greedy would have been enough and saves greedy's attempt where it falls short
// (training-llama-2l, ResNet-50, ViT-B/16, gpt2-small-tg1); above it, greedy, cheaper on most
// large graphs, goes first. docs/PERFORMANCE.md has the measured costs.
constexpr std::size_t kLowestOffsetFirstUpTo = 336;

// ggml, then the candidates until every allocator is at its lower bound.
Placement best_of_fast_strategies(const Lifetimes& lifetimes) {
  const std::vector<Bytes> lower = live_lower_bound(lifetimes);
  Placement best = place_ggml(lifetimes);
  std::array<PlacementFunction, 6> candidates = kCandidatesAfterGgml;
  if (lifetimes.storages.size() <= kLowestOffsetFirstUpTo) std::swap(candidates[0], candidates[1]);
  for (PlacementFunction candidate : candidates) {
    if (cannot_be_beaten(lifetimes, best, lower)) break;
    best = smallest_per_allocator(lifetimes, {std::move(best), candidate(lifetimes)});
  }
  return best;
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
        const auto size = static_cast<double>(chunks_total(best.chunk_sizes[a]));
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
      const Bytes my_size = chunks_total(mine);
      const Bytes their_size = chunks_total(theirs);
      if (my_size < their_size || (my_size == their_size && mine.size() < theirs.size())) {
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

Bytes chunks_total(const std::vector<Bytes>& chunk_sizes) {
  Bytes sum = 0;
  for (Bytes c : chunk_sizes) sum += c;
  return sum;
}

std::vector<std::vector<StorageId>> storages_by_allocator(const Lifetimes& lifetimes) {
  // Counted first, so that each list is allocated once: on small graphs the allocations were
  // a visible part of a strategy's time (docs/PERFORMANCE.md).
  std::vector<std::size_t> count(lifetimes.allocators.size(), 0);
  for (const StorageObject& object : lifetimes.storages) ++count[static_cast<std::size_t>(object.allocator)];
  std::vector<std::vector<StorageId>> ids(count.size());
  for (std::size_t a = 0; a < count.size(); ++a) ids[a].reserve(count[a]);
  for (std::size_t s = 0; s < lifetimes.storages.size(); ++s) {
    ids[static_cast<std::size_t>(lifetimes.storages[s].allocator)].push_back(static_cast<StorageId>(s));
  }
  return ids;
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

bool cannot_be_beaten(const Lifetimes& lifetimes, const Placement& placement, const std::vector<Bytes>& lower) {
  for (std::size_t a = 0; a < lower.size(); ++a) {
    const auto& chunks = placement.chunk_sizes[a];
    if (chunks_total(chunks) > lower[a]) return false;
    if (chunks.size() <= 1) continue;
    // Chunks no larger than the max size (no object above it) cannot hold the lower bound in
    // fewer than lower / max size of them.
    const Bytes limit = lifetimes.allocators[a].max_chunk_size;
    if (std::any_of(chunks.begin(), chunks.end(), [&](Bytes c) { return c > limit; })) return false;
    // A max size of 0 (a buffer type that takes nothing) leaves only empty chunks here.
    const Bytes fewest = limit == 0 ? 0 : lower[a] / limit + (lower[a] % limit != 0 ? 1 : 0);
    if (chunks.size() > fewest) return false;
  }
  return true;
}

std::vector<Bytes> no_reuse_size(const Lifetimes& lifetimes) {
  std::vector<Bytes> total(lifetimes.allocators.size(), 0);
  for (const StorageObject& storage : lifetimes.storages) {
    total[static_cast<std::size_t>(storage.allocator)] += storage.size;
  }
  return total;
}

}  // namespace galloc
