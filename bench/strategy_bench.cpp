// Planning time of galloc alone, without stock ggml to compare with: reserve and alloc through
// GraphAllocator with every strategy of the registry but `exact` (a time budget, not a cost),
// on the zoo graphs and large random graphs. The median of the repetitions, per graph and
// strategy, then the geometric mean over the graphs. For comparing builds of galloc with each
// other (a fast path against its simple twin, say); planning_bench compares with stock ggml.
//
//   build/bench/galloc_strategy_bench [--repetitions N] [--filter SUBSTRING] [--strategy NAME]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench_cases.hpp"
#include "galloc/placement.hpp"

using galloc::bench::GallocTiming;
using galloc::bench::NamedCase;

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
  for (const NamedCase& named : galloc::bench::cases(/*small_max_sizes=*/true)) {
    if (!filter.empty() && named.name.find(filter) == std::string::npos) continue;
    for (std::size_t s = 0; s < strategies.size(); ++s) {
      const GallocTiming t = galloc::bench::time_galloc(named.c, strategies[s], repetitions);
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
