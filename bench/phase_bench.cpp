// Where `best`'s planning time goes on graph files: the lifetimes (and, within them, the
// graph check), then each heuristic placement alone, with whether it reaches the live lower
// bound. Medians of the repetitions, µs, one line per file. The drop-in's reserve adds the
// conversion from ggml_cgraph and the replay record to these.
//
//   build/bench/galloc_phase_bench [--repetitions N] FILE...   (galloc graph files, .json or .json.gz)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "bench_cases.hpp"
#include "galloc/graph_file_gz.hpp"
#include "galloc/graph_json.hpp"
#include "galloc/lifetimes.hpp"
#include "galloc/placement.hpp"

namespace {

template <typename Run>
double median_us(int repetitions, Run&& run) {
  std::vector<double> us;
  for (int r = 0; r < repetitions; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  return galloc::bench::median(std::move(us));
}

}  // namespace

int main(int argc, char** argv) {
  int repetitions = 31;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--repetitions") == 0 && i + 1 < argc) {
      repetitions = std::max(1, std::atoi(argv[++i]));
    } else {
      files.emplace_back(argv[i]);
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "usage: galloc_phase_bench [--repetitions N] FILE...\n");
    return 2;
  }
  int failures = 0;
  for (const std::string& path : files) {
    auto file = galloc::read_graph_file_any(path);
    if (!file) {
      std::fprintf(stderr, "%s\n", file.status().to_string().c_str());
      ++failures;
      continue;
    }
    const galloc::NullBufferTypes types = galloc::make_null_buffer_types(*file);
    galloc::LifetimeOptions deferred;  // as `best` plans: written-first leafs deferred
    deferred.defer_written_leafs = true;
    auto lifetimes = galloc::analyze_lifetimes(file->graph, types.per_id, file->assignment(), deferred);
    if (!lifetimes) {
      std::fprintf(stderr, "%s: %s\n", path.c_str(), lifetimes.status().to_string().c_str());
      ++failures;
      continue;
    }
    const double lifetimes_us = median_us(
        repetitions, [&] { (void)galloc::analyze_lifetimes(file->graph, types.per_id, file->assignment(), deferred); });
    const double check_us = median_us(repetitions, [&] { (void)galloc::validate_graph(file->graph); });
    const std::vector<galloc::Bytes> lower = galloc::live_lower_bound(*lifetimes);
    std::printf("%s storages=%zu lifetimes=%.1f check=%.1f", path.substr(path.rfind('/') + 1).c_str(),
                lifetimes->storages.size(), lifetimes_us, check_us);
    for (const galloc::NamedStrategy& entry : galloc::strategy_registry()) {
      if (!entry.heuristic) continue;
      galloc::PlacementOptions options;
      options.strategy = entry.strategy;
      bool at_bound = true;
      const double us = median_us(repetitions, [&] {
        auto placement = galloc::place(*lifetimes, options);
        for (std::size_t a = 0; a < lower.size(); ++a) {
          at_bound = at_bound && placement && galloc::chunks_total(placement->chunk_sizes[a]) <= lower[a];
        }
      });
      std::printf(" %s=%.1f%s", std::string(entry.name).c_str(), us, at_bound ? "*" : "");
    }
    std::printf("\n");
  }
  std::printf("(µs; * at the live lower bound)\n");
  return failures == 0 ? 0 : 1;
}
