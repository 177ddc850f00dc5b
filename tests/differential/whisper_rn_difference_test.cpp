// whisper.rn 0.4.0-rc.10's ggml-alloc against galloc's `ggml` strategy, which follows llama.rn
// 0.12.9's. They agree wherever the two ggml versions agree, and these tests pin down the three
// places where they do not. whisper.rn 0.4.0-rc.10's:
//   1. ignores the buffer type's max size (no chunks): one buffer above the max;
//   2. reuses fewer ops in place (no FILL, ADD_ID, ROPE_BACK, SILU_BACK, RMS_NORM_BACK,
//      SOFT_MAX_BACK);
//   3. never frees the tail of a larger parent taken over in place (llama.rn 0.12.9's does, but
//      only for a custom alloc_size, so no case rc.10 could see is built here).
#include <gtest/gtest.h>

#include "galloc/graph_allocator.hpp"
#include "ggml_bridge.hpp"
#include "support/random_graph.hpp"

namespace galloc {
namespace {

bool inplace_differs(Op op) {
  switch (op) {
    case Op::Fill:
    case Op::AddId:
    case Op::RopeBack:
    case Op::SiluBack:
    case Op::RmsNormBack:
    case Op::SoftMaxBack: return true;
    default: return false;
  }
}

TEST(WhisperRnDifference, AgreesWithoutMaxSizeAndWithSharedInplaceOps) {
  testing::RandomGraphOptions options;
  options.allow_small_max_size = false;
  std::size_t compared = 0;
  for (std::uint64_t seed = 0; seed < 600; ++seed) {
    const auto c = testing::random_case(seed, options);
    bool comparable = true;
    for (const Tensor& t : c.graph.tensors) comparable = comparable && !inplace_differs(t.op);
    const auto stock = ggml_bridge::run_stock(c);
    if (!comparable || !stock.error.empty()) continue;
    ASSERT_TRUE(stock.ok) << "seed " << seed;
    auto types = c.make_buffer_types();
    GraphAllocator allocator(types.per_id, {{Strategy::kGgml}});
    ASSERT_TRUE(allocator.reserve(c.graph, {c.node_buffer_ids, c.leaf_buffer_ids}).is_ok());
    const Plan& plan = *allocator.plan();
    for (std::size_t t = 0; t < c.graph.tensors.size(); ++t) {
      const TensorPlacement& ours = plan.tensors[t];
      ASSERT_EQ(ours.planned(), stock.tensors[t].type >= 0) << "seed " << seed << " tensor " << t;
      if (!ours.planned()) continue;
      EXPECT_EQ(ours.offset, stock.tensors[t].offset) << "seed " << seed << " tensor " << t;
    }
    for (std::size_t b = 0; b < c.buffer_type_of_id.size(); ++b) {
      EXPECT_EQ(allocator.buffer_size(static_cast<BufferId>(b)).value(), stock.buffer_sizes[b]) << "seed " << seed;
    }
    ++compared;
  }
  EXPECT_GT(compared, 300u);
}

// x0, x1, x2 inputs of 64 bytes, then x3 = x0 + x1, x4 = x3 + x2: with a max size of 128 the
// rc.10 puts all 192 bytes in one buffer; llama.rn 0.12.9 (and galloc) open a second chunk.
TEST(WhisperRnDifference, IgnoresMaxSize) {
  testing::RandomCase c;
  c.types = {{8, 128, 0}};
  c.buffer_type_of_id = {0};
  Graph& g = c.graph;
  const TensorId x0 = g.add_leaf(g.new_tensor("x0", DataType::F32, {16}));
  const TensorId x1 = g.add_leaf(g.new_tensor("x1", DataType::F32, {16}));
  const TensorId x2 = g.add_leaf(g.new_tensor("x2", DataType::F32, {16}));
  for (TensorId x : {x0, x1, x2}) g[x].flags |= kFlagInput;
  const TensorId x3 = g.add_node(g.new_op("x3", Op::Add, DataType::F32, {16}, {x0, x1}));
  const TensorId x4 = g.add_node(g.new_op("x4", Op::Add, DataType::F32, {16}, {x3, x2}));
  g[x4].flags |= kFlagOutput;

  const auto stock = ggml_bridge::run_stock(c);
  ASSERT_TRUE(stock.ok);
  ASSERT_EQ(stock.chunk_sizes[0].size(), 1u);
  EXPECT_EQ(stock.chunk_sizes[0][0], 192u) << "rc.10's single buffer is above the 128-byte max";

  auto types = c.make_buffer_types();
  GraphAllocator allocator(types.per_id, {{Strategy::kGgml}});
  ASSERT_TRUE(allocator.reserve(g).is_ok());
  const auto chunks = allocator.chunks(0);
  ASSERT_EQ(chunks.size(), 2u);
  EXPECT_EQ(chunks[0]->size(), 128u);
  EXPECT_EQ(chunks[1]->size(), 64u);
  EXPECT_EQ(allocator.buffer_size(0).value(), stock.buffer_sizes[0]) << "same total, split differently";
}

// y = SOFT_MAX_BACK(x, g) with x dying at y: llama.rn 0.12.9 reuses x in place, rc.10 does not.
TEST(WhisperRnDifference, ReusesFewerOpsInPlace) {
  testing::RandomCase c;
  c.types = {{8, kUnlimited, 0}};
  c.buffer_type_of_id = {0};
  Graph& g = c.graph;
  const TensorId x = g.add_leaf(g.new_tensor("x", DataType::F32, {16}));
  const TensorId d = g.add_leaf(g.new_tensor("d", DataType::F32, {16}));
  g[x].flags |= kFlagInput;
  g[d].flags |= kFlagInput;
  const TensorId s = g.add_node(g.new_op("s", Op::Sqr, DataType::F32, {16}, {x}));
  const TensorId y = g.add_node(g.new_op("y", Op::SoftMaxBack, DataType::F32, {16}, {s, d}));
  g[y].flags |= kFlagOutput;

  const auto stock = ggml_bridge::run_stock(c);
  if (!stock.error.empty()) GTEST_SKIP() << stock.error;
  ASSERT_TRUE(stock.ok);
  auto types = c.make_buffer_types();
  GraphAllocator allocator(types.per_id, {{Strategy::kGgml}});
  ASSERT_TRUE(allocator.reserve(g).is_ok());
  // galloc (llama.rn 0.12.9's rules): s takes x's memory, y takes s's: 128 bytes. rc.10: y is new.
  EXPECT_EQ(allocator.buffer_size(0).value(), 128u);
  EXPECT_EQ(stock.buffer_sizes[0], 192u);
}

}  // namespace
}  // namespace galloc
