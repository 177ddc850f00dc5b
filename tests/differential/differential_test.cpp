// galloc's `ggml` strategy against stock ggml-alloc, on the same graphs: every offset, chunk
// and buffer size must be identical. Built against llama.rn 0.12.9's ggml.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "galloc/graph_allocator.hpp"
#include "galloc/plan.hpp"
#include "galloc/validator.hpp"
#include "galloc/zoo.hpp"
#include "ggml_bridge.hpp"
#include "support/random_graph.hpp"

namespace galloc {
namespace {

constexpr std::uint64_t kRandomCases = 2500;

struct Comparison {
  bool skipped = false;  // stock needed its 16th chunk, where galloc deliberately differs
  std::string mismatch;  // empty: identical
};

std::string where(const testing::RandomCase& c) { return "seed " + std::to_string(c.seed); }

Comparison compare_with_stock(const testing::RandomCase& c) {
  Comparison out;
  const ggml_bridge::StockResult stock = ggml_bridge::run_stock(c);
  if (!stock.ok) {
    out.mismatch = where(c) + ": " + stock.error;
    return out;
  }
  for (const auto& sizes : stock.chunk_sizes) {
    if (sizes.size() >= 16) out.skipped = true;
  }

  auto types = c.make_buffer_types();
  GraphAllocator allocator(types.per_id, {{Strategy::kGgml}});
  const BufferAssignment assignment{c.node_buffer_ids, c.leaf_buffer_ids};
  auto measured = allocator.measure(c.graph, assignment);
  if (Status s = allocator.reserve(c.graph, assignment); !s) {
    out.mismatch = where(c) + ": galloc reserve failed: " + s.to_string();
    return out;
  }
  // Every plan must validate, skipped or not.
  auto lifetimes = analyze_lifetimes(c.graph, types.per_id, assignment);
  auto placement = place(*lifetimes, {Strategy::kGgml});
  const auto issues = validate_placement(*lifetimes, *placement);
  if (!issues.empty()) {
    out.mismatch = where(c) + ": invalid plan: " + issues.front().message;
    return out;
  }
  if (out.skipped) return out;

  const Plan& plan = *allocator.plan();
  std::ostringstream diff;
  for (std::size_t t = 0; t < c.graph.tensors.size(); ++t) {
    const TensorPlacement& ours = plan.tensors[t];
    const ggml_bridge::StockTensor& theirs = stock.tensors[t];
    const int our_type = ours.planned() ? c.buffer_type_of_id[static_cast<std::size_t>(ours.buffer)] : -1;
    if (our_type != theirs.type || (ours.planned() && (ours.chunk != theirs.chunk || ours.offset != theirs.offset))) {
      diff << where(c) << ": " << describe_tensor(c.graph, static_cast<TensorId>(t)) << ": galloc type " << our_type
           << " chunk " << ours.chunk << " offset " << ours.offset << ", stock type " << theirs.type << " chunk "
           << theirs.chunk << " offset " << theirs.offset << "\n";
      out.mismatch = diff.str();
      return out;
    }
  }
  for (std::size_t b = 0; b < c.buffer_type_of_id.size(); ++b) {
    const Bytes ours = allocator.buffer_size(static_cast<BufferId>(b)).value();
    if (ours != stock.buffer_sizes[b]) {
      diff << where(c) << ": buffer " << b << " size: galloc " << ours << ", stock " << stock.buffer_sizes[b];
      out.mismatch = diff.str();
      return out;
    }
    if (!stock.measured_sizes.empty() && (*measured)[b] != stock.measured_sizes[b]) {
      diff << where(c) << ": buffer " << b << " measured: galloc " << (*measured)[b] << ", stock "
           << stock.measured_sizes[b];
      out.mismatch = diff.str();
      return out;
    }
  }
  for (std::size_t type = 0; type < c.types.size(); ++type) {
    // The first id of this type holds its chunks.
    const auto id = std::find(c.buffer_type_of_id.begin(), c.buffer_type_of_id.end(), static_cast<int>(type)) -
                    c.buffer_type_of_id.begin();
    std::vector<std::size_t> ours;
    for (Buffer* chunk : allocator.chunks(static_cast<BufferId>(id))) ours.push_back(chunk->size());
    if (ours != stock.chunk_sizes[type]) {
      diff << where(c) << ": type " << type << " has " << ours.size() << " chunks in galloc, "
           << stock.chunk_sizes[type].size() << " in stock (or their sizes differ)";
      out.mismatch = diff.str();
      return out;
    }
  }
  return out;
}

TEST(DifferentialLlamaRn, RandomGraphsMatchStockGgmlAlloc) {
  std::size_t compared = 0, skipped = 0, chunked = 0, multi = 0;
  std::vector<std::string> mismatches;
  for (std::uint64_t seed = 0; seed < kRandomCases; ++seed) {
    const auto c = testing::random_case(seed);
    if (std::getenv("GALLOC_TRACE_SEEDS")) std::fprintf(stderr, "seed %llu\n", static_cast<unsigned long long>(seed));
    const Comparison result = compare_with_stock(c);
    if (!result.mismatch.empty()) {
      mismatches.push_back(result.mismatch);
      continue;
    }
    if (result.skipped) {
      ++skipped;
      continue;
    }
    ++compared;
    for (const auto& spec : c.types) chunked += spec.max_size != kUnlimited ? 1 : 0;
    multi += c.buffer_type_of_id.size() > 1 ? 1 : 0;
  }
  std::printf(
      "random graphs: %zu identical to stock, %zu needed stock's 16th chunk (not compared), "
      "%zu buffer types with a max size, %zu cases with several buffer ids\n",
      compared, skipped, chunked, multi);
  for (std::size_t i = 0; i < std::min<std::size_t>(mismatches.size(), 5); ++i) ADD_FAILURE() << mismatches[i];
  EXPECT_TRUE(mismatches.empty()) << mismatches.size() << " of " << kRandomCases << " cases differ";
  // The generator must exercise what it claims to.
  EXPECT_GT(compared, kRandomCases * 9 / 10);
  EXPECT_GT(chunked, kRandomCases / 5);
  EXPECT_GT(multi, kRandomCases / 3);
}

// Every zoo graph at real dimensions, three ways: one CPU-like buffer type (alignment 32, as
// ggml's CPU buffers), a max size that forces a few chunks, and two buffer types with nodes spread
// over them (as a scheduler splitting a model across devices would).
TEST(DifferentialLlamaRn, ZooGraphsMatchStockGgmlAlloc) {
  std::size_t compared = 0;
  for (const auto& entry : zoo::list()) {
    auto graph = zoo::build(entry.name);
    ASSERT_TRUE(graph.is_ok()) << entry.name << ": " << graph.status().to_string();
    for (int variant = 0; variant < 3; ++variant) {
      testing::RandomCase c;
      c.seed = static_cast<std::uint64_t>(variant);
      c.graph = *graph;
      if (variant == 0) {
        c.types = {{32, kUnlimited, 0}};
        c.buffer_type_of_id = {0};
      } else if (variant == 1) {
        // A quarter of the graph's ggml-planned size: a few chunks, well under stock's 16.
        NullBufferType probe(32);
        const std::vector<const BufferType*> one{&probe};
        auto lifetimes = analyze_lifetimes(c.graph, one);
        ASSERT_TRUE(lifetimes.is_ok());
        const Placement probe_plan = place_ggml(*lifetimes);
        Bytes total = 0;
        for (Bytes chunk : probe_plan.chunk_sizes[0]) total += chunk;
        c.types = {{32, std::max<Bytes>(total / 4, 1), 0}};
        c.buffer_type_of_id = {0};
      } else {
        c.types = {{32, kUnlimited, 0}, {64, 64u << 20, 0}};
        c.buffer_type_of_id = {0, 1};
        for (std::size_t i = 0; i < c.graph.nodes.size(); ++i)
          c.node_buffer_ids.push_back(i * 2 < c.graph.nodes.size() ? 0 : 1);
        c.leaf_buffer_ids.assign(c.graph.leafs.size(), 0);
      }
      const Comparison result = compare_with_stock(c);
      EXPECT_TRUE(result.mismatch.empty()) << entry.name << " variant " << variant << ": " << result.mismatch;
      EXPECT_FALSE(result.skipped) << entry.name << " variant " << variant << " needed 16 chunks";
      ++compared;
    }
  }
  EXPECT_GE(compared, 3u * 14u);
}

}  // namespace
}  // namespace galloc
