// galloc's `ggml` strategy against stock ggml-alloc, on the same graphs: every offset, chunk
// and buffer size must be identical. Built once against upstream ggml (llama.rn 0.12.9).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "galloc/graph_allocator.hpp"
#include "galloc/plan.hpp"
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
      diff << where(c) << ": " << describe_tensor(c.graph, static_cast<TensorId>(t)) << ": galloc type "
           << our_type << " chunk " << ours.chunk << " offset " << ours.offset << ", stock type " << theirs.type
           << " chunk " << theirs.chunk << " offset " << theirs.offset << "\n";
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

TEST(DifferentialUpstream, RandomGraphsMatchStockGgmlAlloc) {
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
  std::printf("random graphs: %zu identical to stock, %zu needed stock's 16th chunk (not compared), "
              "%zu buffer types with a max size, %zu cases with several buffer ids\n",
              compared, skipped, chunked, multi);
  for (std::size_t i = 0; i < std::min<std::size_t>(mismatches.size(), 5); ++i) ADD_FAILURE() << mismatches[i];
  EXPECT_TRUE(mismatches.empty()) << mismatches.size() << " of " << kRandomCases << " cases differ";
  // The generator must exercise what it claims to.
  EXPECT_GT(compared, kRandomCases * 9 / 10);
  EXPECT_GT(chunked, kRandomCases / 5);
  EXPECT_GT(multi, kRandomCases / 3);
}

}  // namespace
}  // namespace galloc
