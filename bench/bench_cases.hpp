// What the planning benches share: the graphs they time and how they time galloc on one.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "galloc/graph_allocator.hpp"
#include "galloc/zoo.hpp"
#include "median.hpp"
#include "support/random_graph.hpp"

namespace galloc::bench {

struct NamedCase {
  std::string name;
  testing::RandomCase c;
};

// The zoo at real dimensions on a CPU-like buffer type (alignment 32, as ggml's CPU buffer),
// and large random graphs. `small_max_sizes`: random graphs may have buffer types with small
// max sizes (stock ggml caps chunks at 16, galloc does not, so the comparison with stock
// leaves them out).
inline std::vector<NamedCase> cases(bool small_max_sizes) {
  std::vector<NamedCase> result;
  for (const auto& entry : zoo::list()) {
    auto graph = zoo::build(entry.name);
    if (!graph) continue;
    NamedCase named{entry.name, {}};
    named.c.graph = std::move(graph).value();
    named.c.types = {{32, kUnlimited, 0}};
    named.c.buffer_type_of_id = {0};
    result.push_back(std::move(named));
  }
  testing::RandomGraphOptions options;
  options.max_nodes = 2000;
  options.max_leafs = 200;
  options.allow_small_max_size = small_max_sizes;
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    result.push_back({"random-" + std::to_string(seed), testing::random_case(seed, options)});
  }
  return result;
}

struct GallocTiming {
  double reserve_seconds = 0;  // medians over the repetitions
  double alloc_seconds = 0;
  Bytes size = 0;
  Bytes lower_bound = 0;
};

// Reserve, then alloc, `repetitions` times through one GraphAllocator.
inline GallocTiming time_galloc(const testing::RandomCase& c, Strategy strategy, int repetitions) {
  auto types = c.make_buffer_types();
  GraphAllocator allocator(types.per_id, {{strategy}});
  Graph graph = c.graph;
  const BufferAssignment assignment{c.node_buffer_ids, c.leaf_buffer_ids};
  std::vector<double> reserve, alloc;
  for (int r = 0; r < repetitions; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    const Status reserved = allocator.reserve(graph, assignment);
    const auto t1 = std::chrono::steady_clock::now();
    const Status allocated = allocator.alloc(graph);
    const auto t2 = std::chrono::steady_clock::now();
    if (!reserved || !allocated) {
      std::fprintf(stderr, "galloc failed: %s %s\n", reserved.to_string().c_str(), allocated.to_string().c_str());
      return {};
    }
    reserve.push_back(std::chrono::duration<double>(t1 - t0).count());
    alloc.push_back(std::chrono::duration<double>(t2 - t1).count());
  }
  return {median(reserve), median(alloc), allocator.plan()->total_size(), allocator.plan()->total_lower_bound()};
}

}  // namespace galloc::bench
