// Compute buffer size and planning time: stock ggml-alloc and every galloc strategy on the same
// graphs, in one run, side by side. Prints one row per graph and strategy, and the geometric
// means of the ratios to stock: over every graph, and over the zoo graphs a shipped program
// builds (galloc::zoo::ZooEntry::shipped).
//
//   build/bench/galloc_planning_bench [--repetitions N] [--filter SUBSTRING]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "bench_cases.hpp"
#include "galloc/planner.hpp"
#include "galloc/zoo.hpp"
#include "ggml_bridge.hpp"

using galloc::Bytes;
using galloc::bench::GallocTiming;
using galloc::bench::NamedCase;
using galloc::bench::time_galloc;

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
  // per strategy, the sums of log(galloc / stock): [0] every graph, [1] the shipped zoo graphs
  struct LogSums {
    std::vector<double> size, plan, alloc;
    int counted = 0;
  };
  LogSums sums[2];
  for (LogSums& sum : sums) sum.size = sum.plan = sum.alloc = std::vector<double>(strategies.size(), 0);
  std::set<std::string> shipped;
  for (const galloc::zoo::ZooEntry& entry : galloc::zoo::list()) {
    if (entry.shipped) shipped.insert(entry.name);
  }
  for (const NamedCase& named : galloc::bench::cases(/*small_max_sizes=*/false)) {
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
      for (int k = 0; k < (shipped.count(named.name) != 0 ? 2 : 1); ++k) {
        sums[k].size[s] += std::log(std::max(1e-12, vs_stock));
        sums[k].plan[s] += std::log(std::max(1e-12, plan_x));
        sums[k].alloc[s] += std::log(std::max(1e-12, alloc_x));
      }
    }
    ++sums[0].counted;
    if (shipped.count(named.name) != 0) ++sums[1].counted;
  }
  if (sums[0].counted == 0) return 1;
  for (int k = 0; k < 2; ++k) {
    const LogSums& sum = sums[k];
    if (sum.counted == 0) continue;
    std::printf("\ngeometric means over %d %s (galloc / stock):\n", sum.counted,
                k == 0 ? "graphs" : "zoo graphs a shipped program builds");
    for (std::size_t s = 0; s < strategies.size(); ++s) {
      std::printf("  %-7s buffer %.4f   reserve time %.2fx   alloc time %.2fx\n",
                  std::string(galloc::strategy_name(strategies[s])).c_str(), std::exp(sum.size[s] / sum.counted),
                  std::exp(sum.plan[s] / sum.counted), std::exp(sum.alloc[s] / sum.counted));
    }
  }
  return 0;
}
