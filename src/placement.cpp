#include "galloc/placement.hpp"

#include <algorithm>
#include <iterator>
#include <string>

#include "placement_internal.hpp"

namespace galloc {

namespace {

template <GreedyOrder order, GapChoice gap>
Result<Placement> run_greedy(const Problem& problem, const PlacementOptions&) {
  return place_greedy(problem, {order, gap});
}

template <LowestOffsetOrder order>
Result<Placement> run_lowest_offset_first(const Problem& problem, const PlacementOptions&) {
  return place_lowest_offset_first(problem, {order});
}

Result<Placement> run_ggml(const Problem& problem, const PlacementOptions&) { return place_ggml(problem); }

Result<Placement> run_exact(const Problem& problem, const PlacementOptions& options) {
  return place_exact(problem, detail::best_of_heuristics(problem), options.exact);
}

Result<Placement> run_best(const Problem& problem, const PlacementOptions& options) {
  Placement best = detail::best_of_heuristics(problem);
  const auto lower = live_lower_bound(problem);
  bool misses_capacity = false;
  bool worth_it = false;
  for (std::size_t a = 0; a < lower.size(); ++a) {
    const Bytes size = chunks_total(best.chunk_sizes[a]);
    misses_capacity = misses_capacity || (options.exact.capacity && size > *options.exact.capacity);
    worth_it =
        worth_it || static_cast<double>(size) > static_cast<double>(lower[a]) * (1.0 + options.best_search_min_gap);
  }
  // A capacity the heuristics miss means the caller wants a fit: the exact search for one, in
  // the time given, and its error (infeasible, or out of time) when there is none.
  if (misses_capacity) {
    ExactOptions search = options.exact;
    if (options.best_search_seconds > 0) search.time_limit_seconds = options.best_search_seconds;
    auto searched = place_exact(problem, best, search);
    if (!searched) return searched.status();
    return detail::smallest_per_allocator(problem, {std::move(best), std::move(searched).value()});
  }
  if (options.best_search_seconds <= 0 || !worth_it) return best;
  ExactOptions search = options.exact;
  search.capacity.reset();
  search.time_limit_seconds = options.best_search_seconds;
  auto searched = place_exact(problem, best, search);
  if (!searched) return best;
  return detail::smallest_per_allocator(problem, {std::move(best), std::move(searched).value()});
}

// The registry, in the order `galloc strategies` lists it. `best` tries the heuristics in
// an order of its own (best_order, below).
constexpr NamedStrategy kRegistry[] = {
    {Strategy::kGgml, "ggml", "online best fit in execution order, exactly as upstream ggml-alloc", true, run_ggml},
    {Strategy::kGreedyLowestOffset, "greedy-lowest-offset", "largest first, each into the lowest gap that fits", true,
     run_greedy<GreedyOrder::kDecreasingSize, GapChoice::kLowestOffset>},
    {Strategy::kLowestOffsetFirst, "lowest-offset-first",
     "lowest offset first; the busiest, then the largest area (MiniMalloc's first descent)", true,
     run_lowest_offset_first<LowestOffsetOrder::kBusiestThenArea>},
    {Strategy::kGreedy, "greedy", "largest first, each into the best-fitting gap", true,
     run_greedy<GreedyOrder::kDecreasingSize, GapChoice::kBestFit>},
    {Strategy::kLowestOffsetFirstByLifetime, "lowest-offset-first-by-lifetime",
     "lowest offset first; the busiest, then the longest lifetime", true,
     run_lowest_offset_first<LowestOffsetOrder::kBusiestThenLifetime>},
    {Strategy::kGreedyByStart, "greedy-by-start", "in order of allocation, each into the best-fitting gap", true,
     run_greedy<GreedyOrder::kStartTime, GapChoice::kBestFit>},
    {Strategy::kGreedyByStartLowestOffset, "greedy-by-start-lowest-offset",
     "in order of allocation, each into the lowest gap that fits", true,
     run_greedy<GreedyOrder::kStartTime, GapChoice::kLowestOffset>},
    {Strategy::kGreedyLateFirst, "greedy-late-first",
     "largest first, among equal sizes the one freed later first, each into the best-fitting gap", true,
     run_greedy<GreedyOrder::kDecreasingSizeLateFirst, GapChoice::kBestFit>},
    {Strategy::kExact, "exact", "search for the smallest placement within a time limit (MiniMalloc)", false, run_exact},
    {Strategy::kBest, "best", "per buffer the smallest of the heuristics, never worse than ggml", false, run_best},
};

const NamedStrategy* find(Strategy strategy) {
  for (const NamedStrategy& entry : kRegistry) {
    if (entry.strategy == strategy) return &entry;
  }
  return nullptr;
}

}  // namespace

Span<const NamedStrategy> strategy_registry() { return {kRegistry, std::size(kRegistry)}; }

std::string_view strategy_name(Strategy strategy) {
  const NamedStrategy* entry = find(strategy);
  return entry == nullptr ? "unknown" : entry->name;
}

Result<Strategy> strategy_from_name(std::string_view name) {
  std::string known;
  for (const NamedStrategy& entry : kRegistry) {
    if (entry.name == name) return entry.strategy;
    known += (known.empty() ? "" : ", ") + std::string(entry.name);
  }
  return invalid_argument("unknown strategy '" + std::string(name) + "' (known: " + known + ")");
}

std::vector<Strategy> all_strategies() {
  std::vector<Strategy> result;
  for (const NamedStrategy& entry : kRegistry) result.push_back(entry.strategy);
  return result;
}

Result<Placement> place(const Problem& problem, const PlacementOptions& options) {
  const NamedStrategy* entry = find(options.strategy);
  if (entry == nullptr) {
    return invalid_argument("unknown strategy " + std::to_string(static_cast<int>(options.strategy)));
  }
  return entry->place(problem, options);
}

namespace detail {

Span<const Strategy> best_order(const Problem& problem) {
  static constexpr Strategy kSmall[] = {
      Strategy::kLowestOffsetFirst,           Strategy::kGgml,           Strategy::kGreedyLowestOffset,
      Strategy::kLowestOffsetFirstByLifetime, Strategy::kGreedy,         Strategy::kGreedyByStart,
      Strategy::kGreedyByStartLowestOffset,   Strategy::kGreedyLateFirst};
  static constexpr Strategy kMedium[] = {Strategy::kGreedyLowestOffset,
                                         Strategy::kLowestOffsetFirstByLifetime,
                                         Strategy::kGgml,
                                         Strategy::kLowestOffsetFirst,
                                         Strategy::kGreedy,
                                         Strategy::kGreedyByStart,
                                         Strategy::kGreedyByStartLowestOffset,
                                         Strategy::kGreedyLateFirst};
  static constexpr Strategy kLarge[] = {Strategy::kGgml,
                                        Strategy::kGreedyLowestOffset,
                                        Strategy::kLowestOffsetFirstByLifetime,
                                        Strategy::kLowestOffsetFirst,
                                        Strategy::kGreedy,
                                        Strategy::kGreedyByStart,
                                        Strategy::kGreedyByStartLowestOffset,
                                        Strategy::kGreedyLateFirst};
  if (problem.storages.size() <= kLowestOffsetFirstUpTo) return {kSmall, std::size(kSmall)};
  if (problem.storages.size() <= kGreedyFirstUpTo) return {kMedium, std::size(kMedium)};
  return {kLarge, std::size(kLarge)};
}

Placement best_of_heuristics(const Problem& problem) {
  const std::vector<Bytes> lower = live_lower_bound(problem);
  const PlacementOptions options;
  Placement best;
  bool first = true;
  for (Strategy strategy : best_order(problem)) {
    if (!first && cannot_be_beaten(problem, best, lower)) break;
    Placement next = std::move(find(strategy)->place(problem, options)).value();
    best = first ? std::move(next) : smallest_per_allocator(problem, {std::move(best), std::move(next)});
    first = false;
  }
  return best;
}

Placement smallest_per_allocator(const Problem& problem, std::vector<Placement> candidates) {
  const std::size_t n_allocators = problem.allocators.size();
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
  best.storage_address.resize(problem.storages.size());
  for (std::size_t s = 0; s < problem.storages.size(); ++s) {
    const auto a = static_cast<std::size_t>(problem.storages[s].allocator);
    best.storage_address[s] = candidates[winner[a]].storage_address[s];
  }
  for (std::size_t a = 0; a < n_allocators; ++a) best.chunk_sizes.push_back(candidates[winner[a]].chunk_sizes[a]);
  return best;
}

std::vector<std::vector<StorageId>> storages_by_allocator(const Problem& problem) {
  // Counted first, so that each list is allocated once: on small graphs the allocations are a
  // visible part of a strategy's time.
  std::vector<std::size_t> count(problem.allocators.size(), 0);
  for (const StorageObject& object : problem.storages) ++count[static_cast<std::size_t>(object.allocator)];
  std::vector<std::vector<StorageId>> ids(count.size());
  for (std::size_t a = 0; a < count.size(); ++a) ids[a].reserve(count[a]);
  for (std::size_t s = 0; s < problem.storages.size(); ++s) {
    ids[static_cast<std::size_t>(problem.storages[s].allocator)].push_back(static_cast<StorageId>(s));
  }
  return ids;
}

bool cannot_be_beaten(const Problem& problem, const Placement& placement, const std::vector<Bytes>& lower) {
  for (std::size_t a = 0; a < lower.size(); ++a) {
    const auto& chunks = placement.chunk_sizes[a];
    if (chunks_total(chunks) > lower[a]) return false;
    if (chunks.size() <= 1) continue;
    // Chunks no larger than the max size (no object above it) cannot hold the lower bound in
    // fewer than lower / max size of them.
    const Bytes limit = problem.allocators[a].max_chunk_size;
    if (std::any_of(chunks.begin(), chunks.end(), [&](Bytes c) { return c > limit; })) return false;
    // A max size of 0 (a buffer type that takes nothing) leaves only empty chunks here.
    const Bytes fewest = limit == 0 ? 0 : lower[a] / limit + (lower[a] % limit != 0 ? 1 : 0);
    if (chunks.size() > fewest) return false;
  }
  return true;
}

}  // namespace detail

Bytes chunks_total(const std::vector<Bytes>& chunk_sizes) {
  Bytes sum = 0;
  for (Bytes c : chunk_sizes) sum += c;
  return sum;
}

std::vector<Bytes> live_lower_bound(const Problem& problem) {
  std::vector<Bytes> live(problem.allocators.size(), 0);
  std::vector<Bytes> peak(problem.allocators.size(), 0);
  for (const LifetimeEvent& event : problem.events) {
    const auto a = static_cast<std::size_t>(problem.storages[static_cast<std::size_t>(event.storage)].allocator);
    if (event.kind == LifetimeEvent::Kind::kAllocate) {
      live[a] += event.size;
      peak[a] = std::max(peak[a], live[a]);
    } else {
      live[a] -= event.size;
    }
  }
  return peak;
}

std::vector<Bytes> no_reuse_size(const Problem& problem) {
  std::vector<Bytes> total(problem.allocators.size(), 0);
  for (const StorageObject& storage : problem.storages) {
    total[static_cast<std::size_t>(storage.allocator)] += storage.size;
  }
  return total;
}

}  // namespace galloc
