// Regressions for what the reliability work (docs/RELIABILITY.md) found in the library: each
// test reproduces one finding with a literal graph, and passes since its fix.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "galloc/galloc.hpp"
#include "galloc/validator.hpp"

namespace galloc {
namespace {

// Fixed in src/lifetimes.cpp (LivenessWalk::overwrites_whole). Deferred written leafs
// (LifetimeOptions::defer_written_leafs, used by every strategy but ggml) must only defer a leaf that its first writer
// overwrites completely. SET and ACC (set_inplace/acc_inplace: a view of the leaf, src = {leaf, values}) write part of
// it and keep (ACC: read) the rest; SET_ROWS (src = {values, rows}) keeps the rows it does not select. The leaf is set
// by the application after alloc, like every leaf ggml allocates up front, so allocating it only at the write gives it
// memory that an earlier tensor used (and the application's write lands on that tensor). Found by the property tests
// (tests/property/, PropertyRegressions has the executed version of the same graphs).
//
//   x (input) -> n0 = mul_mat(x) -> n1 = mul_mat(n0) --+
//   l (plain leaf, 64 bytes) --------------------------+--> w = op(l, n1)  (a view of l, output)
Graph written_leaf_graph(Op write, bool full_cover = true) {
  Graph g;
  const TensorId x = g.add_leaf(g.new_tensor("x", DataType::F32, {16}));
  g[x].flags |= kFlagInput;
  const TensorId l = g.add_leaf(g.new_tensor("l", DataType::F32, {16}));
  const TensorId n0 = g.add_node(g.new_op("n0", Op::MulMat, DataType::F32, {16}, {x}));
  const TensorId n1 = g.add_node(g.new_op("n1", Op::MulMat, DataType::F32, {4}, {n0}));
  Tensor w = g.new_view("w", write, l, full_cover ? 0 : 16, {full_cover ? 16 : 4});
  if (write == Op::Cpy) {
    w.src[0] = n1;
    w.src[1] = l;
  } else if (write == Op::SetRows) {
    w.src[0] = n1;
    w.src[1] = n1;
  } else {
    w.src[0] = l;
    w.src[1] = n1;
  }
  w.flags |= kFlagOutput;
  g.add_node(std::move(w));
  return g;
}

std::size_t deferred_leafs(const Graph& g) {
  NullBufferType type(8);
  const std::vector<const BufferType*> types{&type};
  auto lifetimes = analyze_lifetimes(g, types, {}, {.defer_written_leafs = true});
  EXPECT_TRUE(lifetimes.is_ok()) << lifetimes.status().to_string();
  return lifetimes ? lifetimes->deferred_leafs.size() : 0;
}

TEST(Regressions, LeafWrittenFirstBySetIsNotDeferred) { EXPECT_EQ(deferred_leafs(written_leaf_graph(Op::Set)), 0u); }
TEST(Regressions, LeafWrittenFirstByAccIsNotDeferred) { EXPECT_EQ(deferred_leafs(written_leaf_graph(Op::Acc)), 0u); }
TEST(Regressions, LeafWrittenFirstBySetRowsIsNotDeferred) {
  EXPECT_EQ(deferred_leafs(written_leaf_graph(Op::SetRows)), 0u);
}
// A CPY into a window of the leaf (a hand-made graph: ggml would list the window view first)
// keeps the rest of the leaf too.
TEST(Regressions, LeafWrittenFirstByAPartialCpyIsNotDeferred) {
  EXPECT_EQ(deferred_leafs(written_leaf_graph(Op::Cpy, /*full_cover=*/false)), 0u);
}
// What the option is for, and stays: a CPY over all of the leaf.
TEST(Regressions, LeafOverwrittenWholeByCpyIsDeferred) { EXPECT_EQ(deferred_leafs(written_leaf_graph(Op::Cpy)), 1u); }

// The placement consequence, without executing anything: with greedy, l gets bytes that x
// holds before n0 reads it, so the application's write of l (after alloc) overwrites x.
TEST(Regressions, LeafWrittenFirstBySetDoesNotShareMemoryWithAnInput) {
  const Graph g = written_leaf_graph(Op::Set);
  NullBufferType type(8);
  const std::vector<const BufferType*> types{&type};
  for (Strategy strategy : all_strategies()) {
    PlacementOptions options;
    options.strategy = strategy;
    options.exact.time_limit_seconds = 0.01;
    auto planned = plan_graph(g, types, {}, options);
    ASSERT_TRUE(planned.is_ok());
    const TensorPlacement& x = planned->plan.tensors[0];
    const TensorPlacement& l = planned->plan.tensors[1];
    const bool overlap = x.chunk == l.chunk && x.offset < l.offset + l.size && l.offset < x.offset + x.size;
    EXPECT_FALSE(overlap) << strategy_name(strategy) << ": the leaf l [" << l.offset << ", " << l.offset + l.size
                          << ") shares bytes with the input x [" << x.offset << ", " << x.offset + x.size << ")";
  }
}

// Fixed in src/lifetimes.cpp (check_view_roots_have_memory: kInvalidArgument). A view whose
// root is neither node nor leaf, has no memory and is no node's source
// (set_rows into a tensor the graph does not list: the view does not name its destination as a
// source) is never allocated: reserve and alloc succeed and leave the view's data NULL, so the
// backend writes through a NULL base. Upstream ggml asserts in ggml_backend_view_init there.
// Found by the property tests' generator (a SET_ROWS into an unlisted tensor). Either answer
// would do: reserve rejects the graph (what it does now), or the root gets memory.
TEST(Regressions, ViewOfATensorNothingAllocatesIsRejectedOrGetsMemory) {
  Graph g;
  const TensorId dest = g.add(g.new_tensor("dest", DataType::F32, {16}));  // not listed
  const TensorId values = g.add_leaf(g.new_tensor("values", DataType::F32, {16}));
  g[values].flags |= kFlagInput;
  Tensor w = g.new_view("w", Op::SetRows, dest, 0, {16});
  w.src[0] = values;
  w.src[1] = values;
  w.flags |= kFlagOutput;
  const TensorId view = g.add_node(std::move(w));
  CpuBufferType cpu(64);
  GraphAllocator allocator({&cpu});
  const Status reserved = allocator.reserve(g);
  if (!reserved.is_ok()) {
    EXPECT_EQ(reserved.code(), ErrorCode::kInvalidArgument) << reserved.to_string();
    return;
  }
  ASSERT_TRUE(allocator.alloc(g).is_ok());
  EXPECT_NE(g[view].data, nullptr) << "alloc succeeded and left the SET_ROWS view without memory";
}

// clang < 16 cannot capture structured bindings in a lambda (C++20 P1091/P1381), and
// validate_placement did: the library did not compile with Debian's clang 14, which the fuzz
// build uses. Fixed in src/plan.cpp (the loop names the pair's members instead of binding
// them); this keeps the overlap report (the lambda) exercised.
TEST(Regressions, ValidatorReportsOverlapsWithChunkAndAllocator) {
  GraphProblem lifetimes;
  lifetimes.allocators.push_back({1, kUnlimited});
  lifetimes.buffer_allocator = {0};
  lifetimes.storages.push_back({0, 16, {0, 2}, {}, 0});
  lifetimes.storages.push_back({0, 16, {1, 3}, {}, 1});
  Placement placement;
  placement.storage_address = {{0, 0}, {0, 8}};
  placement.chunk_sizes = {{24}};
  const auto issues = validate_placement(lifetimes, placement);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].kind, PlacementIssueKind::kOverlap);
  EXPECT_NE(issues[0].message.find("in chunk 0 of allocator 0"), std::string::npos) << issues[0].message;
}

}  // namespace
}  // namespace galloc
