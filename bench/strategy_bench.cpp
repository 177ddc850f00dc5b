// Planning time of galloc alone, without stock ggml to compare with: reserve and alloc through
// GraphAllocator with every strategy of the registry but `exact` (a time budget, not a cost),
// on the zoo graphs and large random graphs. The median of the repetitions, per graph and
// strategy, then the geometric mean over the graphs. For comparing builds of galloc with each
// other (a fast path against its simple twin, say); planning_bench compares with stock ggml.
//
//   build/bench/galloc_strategy_bench [--repetitions N] [--filter SUBSTRING] [--strategy NAME]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "galloc/graph_allocator.hpp"
#include "galloc/placement.hpp"
#include "galloc/zoo.hpp"
#include "support/random_graph.hpp"

namespace {

struct NamedCase {
  std::string name;
  galloc::testing::RandomCase c;
};

// The zoo at real dimensions on one CPU-like buffer type (alignment 32), and large random graphs.
std::vector<NamedCase> cases() {
  std::vector<NamedCase> result;
  for (const auto& entry : galloc::zoo::list()) {
    auto graph = galloc::zoo::build(entry.name);
    if (!graph) continue;
    NamedCase named{entry.name, {}};
    named.c.graph = std::move(graph).value();
    named.c.types = {{32, galloc::kUnlimited, 0}};
    named.c.buffer_type_of_id = {0};
    result.push_back(std::move(named));
  }
  galloc::testing::RandomGraphOptions options;
  options.max_nodes = 2000;
  options.max_leafs = 200;
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    result.push_back({"random-" + std::to_string(seed), galloc::testing::random_case(seed, options)});
  }
  return result;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

struct Timing {
  double reserve_seconds = 0;
  double alloc_seconds = 0;
  galloc::Bytes size = 0;
};

Timing time_case(const galloc::testing::RandomCase& c, galloc::Strategy strategy, int repetitions) {
  auto types = c.make_buffer_types();
  galloc::GraphAllocator allocator(types.per_id, {{strategy}});
  galloc::Graph graph = c.graph;
  const galloc::BufferAssignment assignment{c.node_buffer_ids, c.leaf_buffer_ids};
  std::vector<double> reserve, alloc;
  for (int r = 0; r < repetitions; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    const galloc::Status reserved = allocator.reserve(graph, assignment);
    const auto t1 = std::chrono::steady_clock::now();
    const galloc::Status allocated = allocator.alloc(graph);
    const auto t2 = std::chrono::steady_clock::now();
    if (!reserved || !allocated) {
      std::fprintf(stderr, "failed: %s %s\n", reserved.to_string().c_str(), allocated.to_string().c_str());
      return {};
    }
    reserve.push_back(std::chrono::duration<double>(t1 - t0).count());
    alloc.push_back(std::chrono::duration<double>(t2 - t1).count());
  }
  return {median(reserve), median(alloc), allocator.plan()->total_size()};
}

}  // namespace

int main(int argc, char** argv) {
  int repetitions = 15;
  std::string filter, only;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--repetitions") == 0) repetitions = std::max(1, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--filter") == 0) filter = argv[i + 1];
    if (std::strcmp(argv[i], "--strategy") == 0) only = argv[i + 1];
  }
  std::vector<galloc::Strategy> strategies;
  for (galloc::Strategy strategy : galloc::all_strategies()) {
    if (strategy != galloc::Strategy::kExact && (only.empty() || galloc::strategy_name(strategy) == only)) {
      strategies.push_back(strategy);
    }
  }
  std::vector<double> log_reserve(strategies.size(), 0), log_alloc(strategies.size(), 0);
  int counted = 0;
  std::printf("%-28s %-32s %14s %12s %10s\n", "graph", "strategy", "buffer bytes", "reserve us", "alloc us");
  for (const NamedCase& named : cases()) {
    if (!filter.empty() && named.name.find(filter) == std::string::npos) continue;
    for (std::size_t s = 0; s < strategies.size(); ++s) {
      const Timing t = time_case(named.c, strategies[s], repetitions);
      std::printf("%-28s %-32s %14llu %12.1f %10.2f\n", named.name.c_str(),
                  std::string(galloc::strategy_name(strategies[s])).c_str(), static_cast<unsigned long long>(t.size),
                  t.reserve_seconds * 1e6, t.alloc_seconds * 1e6);
      log_reserve[s] += std::log(std::max(1e-9, t.reserve_seconds));
      log_alloc[s] += std::log(std::max(1e-9, t.alloc_seconds));
    }
    ++counted;
  }
  if (counted == 0) return 1;
  std::printf("\ngeometric means over %d graphs:\n", counted);
  for (std::size_t s = 0; s < strategies.size(); ++s) {
    std::printf("  %-32s reserve %10.1f us   alloc %8.2f us\n",
                std::string(galloc::strategy_name(strategies[s])).c_str(), std::exp(log_reserve[s] / counted) * 1e6,
                std::exp(log_alloc[s] / counted) * 1e6);
  }
  return 0;
}
