#include "galloc/placement.hpp"

#include <algorithm>
#include <array>

namespace galloc {

namespace {
struct StrategyName {
  Strategy strategy;
  std::string_view name;
};
constexpr std::array<StrategyName, 1> kStrategies{{{Strategy::kGgml, "ggml"}}};
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
  }
  return invalid_argument("unknown strategy " + std::to_string(static_cast<int>(options.strategy)));
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
