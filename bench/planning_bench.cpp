// Compute buffer size and planning time: stock ggml-alloc and every galloc strategy on the same
// graphs, in one run, side by side. Prints one row per graph and strategy, and the geometric
// means of the ratios to stock.
//
//   build/bench/galloc_planning_bench [--repetitions N] [--filter SUBSTRING]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "galloc/graph_allocator.hpp"
#include "galloc/planner.hpp"
#include "ggml_bridge.hpp"
#include "support/random_graph.hpp"
#if __has_include("galloc/zoo.hpp") && !defined(GALLOC_BENCH_NO_ZOO)
#include "galloc/zoo.hpp"
#define GALLOC_HAVE_ZOO 1
#endif

namespace {

using galloc::Bytes;

struct NamedCase {
  std::string name;
  galloc::testing::RandomCase c;
};

// The graphs: the zoo at real dimensions on a CPU-like buffer type (alignment 32, as ggml's
// CPU buffer), and large random graphs.
std::vector<NamedCase> cases() {
  std::vector<NamedCase> result;
#ifdef GALLOC_HAVE_ZOO
  for (const auto& entry : galloc::zoo::list()) {
    auto graph = galloc::zoo::build(entry.name);
    if (!graph) continue;
    NamedCase named{entry.name, {}};
    named.c.graph = std::move(graph).value();
    named.c.types = {{32, galloc::kUnlimited, 0}};
    named.c.buffer_type_of_id = {0};
    result.push_back(std::move(named));
  }
#endif
  galloc::testing::RandomGraphOptions options;
  options.max_nodes = 2000;
  options.max_leafs = 200;
  options.allow_small_max_size = false;  // stock caps chunks at 16, galloc does not
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    result.push_back({"random-" + std::to_string(seed), galloc::testing::random_case(seed, options)});
  }
  return result;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

struct GallocTiming {
  double reserve_seconds = 0;
  double alloc_seconds = 0;
  Bytes size = 0;
  Bytes lower_bound = 0;
};

GallocTiming time_galloc(const galloc::testing::RandomCase& c, galloc::Strategy strategy, int repetitions) {
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
      std::fprintf(stderr, "galloc failed: %s %s\n", reserved.to_string().c_str(), allocated.to_string().c_str());
      break;
    }
    reserve.push_back(std::chrono::duration<double>(t1 - t0).count());
    alloc.push_back(std::chrono::duration<double>(t2 - t1).count());
  }
  GallocTiming timing;
  timing.reserve_seconds = median(reserve);
  timing.alloc_seconds = median(alloc);
  timing.size = allocator.plan()->total_size();
  timing.lower_bound = allocator.plan()->total_lower_bound();
  return timing;
}

}  // namespace

int main(int argc, char** argv) {
  int repetitions = 9;
  std::string filter;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--repetitions") == 0) repetitions = std::max(1, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--filter") == 0) filter = argv[i + 1];
  }
  const std::vector<galloc::Strategy> strategies{galloc::Strategy::kGgml, galloc::Strategy::kGreedy,
                                                 galloc::Strategy::kBest};
  std::printf("%-28s %7s %-7s %12s %12s %8s %8s %9s %9s\n", "graph", "nodes", "planner", "buffer MiB", "lower MiB",
              "/lower", "/stock", "plan x", "alloc x");
  std::vector<double> size_ratio(strategies.size(), 0), plan_ratio(strategies.size(), 0),
      alloc_ratio(strategies.size(), 0);
  int counted = 0;
  for (const NamedCase& named : cases()) {
    if (!filter.empty() && named.name.find(filter) == std::string::npos) continue;
    const auto stock = galloc::ggml_bridge::time_stock(named.c, repetitions);
    if (!stock.error.empty()) {
      std::printf("%-28s skipped: %s\n", named.name.c_str(), stock.error.c_str());
      continue;
    }
    const auto mib = [](double bytes) { return bytes / (1024.0 * 1024.0); };
    GallocTiming lower = time_galloc(named.c, galloc::Strategy::kGgml, 1);
    std::printf("%-28s %7zu %-7s %12.3f %12.3f %8.4f %8s %9.1fus %9.1fus\n", named.name.c_str(),
                named.c.graph.nodes.size(), "stock", mib(static_cast<double>(stock.total_size)),
                mib(static_cast<double>(lower.lower_bound)),
                static_cast<double>(stock.total_size) / static_cast<double>(std::max<Bytes>(1, lower.lower_bound)), "1",
                stock.reserve_seconds * 1e6, stock.alloc_seconds * 1e6);
    for (std::size_t s = 0; s < strategies.size(); ++s) {
      const GallocTiming t = time_galloc(named.c, strategies[s], repetitions);
      const double vs_stock =
          static_cast<double>(t.size) / static_cast<double>(std::max<std::size_t>(1, stock.total_size));
      const double plan_x = t.reserve_seconds / std::max(1e-9, stock.reserve_seconds);
      const double alloc_x = t.alloc_seconds / std::max(1e-9, stock.alloc_seconds);
      std::printf("%-28s %7s %-7s %12.3f %12.3f %8.4f %8.4f %9.2fx %9.2fx\n", "", "",
                  std::string(galloc::strategy_name(strategies[s])).c_str(), mib(static_cast<double>(t.size)),
                  mib(static_cast<double>(t.lower_bound)),
                  static_cast<double>(t.size) / static_cast<double>(std::max<Bytes>(1, t.lower_bound)), vs_stock,
                  plan_x, alloc_x);
      size_ratio[s] += std::log(std::max(1e-12, vs_stock));
      plan_ratio[s] += std::log(std::max(1e-12, plan_x));
      alloc_ratio[s] += std::log(std::max(1e-12, alloc_x));
    }
    ++counted;
  }
  if (counted == 0) return 1;
  std::printf("\ngeometric means over %d graphs (galloc / stock):\n", counted);
  for (std::size_t s = 0; s < strategies.size(); ++s) {
    std::printf("  %-7s buffer %.4f   reserve time %.2fx   alloc time %.2fx\n",
                std::string(galloc::strategy_name(strategies[s])).c_str(), std::exp(size_ratio[s] / counted),
                std::exp(plan_ratio[s] / counted), std::exp(alloc_ratio[s] / counted));
  }
  return 0;
}
