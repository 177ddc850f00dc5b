// The liveness walk: ggml's counting, in-place and freeing rules, seen through the events.
#include <gtest/gtest.h>

#include <algorithm>

#include "galloc/lifetimes.hpp"
#include "galloc/placement.hpp"
#include "galloc/zoo.hpp"
#include "support/lifetimes_difference.hpp"
#include "support/random_graph.hpp"

namespace galloc {
namespace {

class LifetimesTest : public ::testing::Test {
 protected:
  NullBufferType type_{8};
  std::vector<const BufferType*> types_{&type_};
  Graph g_;

  TensorId input(const char* name, std::int64_t n) {
    const TensorId id = g_.add_leaf(g_.new_tensor(name, DataType::F32, {n}));
    g_[id].flags |= kFlagInput;
    return id;
  }
  TensorId node(const char* name, Op op, std::int64_t n, std::initializer_list<TensorId> src) {
    return g_.add_node(g_.new_op(name, op, DataType::F32, {n}, src));
  }
  GraphProblem analyze() {
    auto result = analyze_lifetimes(g_, types_);
    EXPECT_TRUE(result.is_ok()) << result.status().to_string();
    return std::move(result).value();
  }
  StorageId storage_of(const GraphProblem& l, TensorId t) { return l.tensor_storage[static_cast<std::size_t>(t)]; }
};

//   x ──scale──> a ──add(b)──> out      a takes x's memory, out takes a's
TEST_F(LifetimesTest, InplaceChainSharesOneStorage) {
  const TensorId x = input("x", 16);
  const TensorId b = input("b", 16);
  const TensorId a = node("a", Op::Scale, 16, {x});
  const TensorId out = node("out", Op::Add, 16, {a, b});
  g_[out].flags |= kFlagOutput;
  const GraphProblem l = analyze();
  EXPECT_EQ(storage_of(l, x), storage_of(l, a));
  EXPECT_EQ(storage_of(l, a), storage_of(l, out));
  EXPECT_NE(storage_of(l, b), storage_of(l, out));
  EXPECT_EQ(l.storages.size(), 2u);
  EXPECT_EQ(live_lower_bound(l)[0], 128u);
}

// The graph's in-place set decides which ops may take over a source: an older ggml's list
// without SCALE, a newer one's with CLAMP.
//   x ──scale──> a ──clamp──> out
TEST_F(LifetimesTest, TheGraphsInplaceOpsDecide) {
  const TensorId x = input("x", 16);
  const TensorId a = node("a", Op::Scale, 16, {x});
  const TensorId out = node("out", Op::Clamp, 16, {a});
  g_[out].flags |= kFlagOutput;
  const GraphProblem by_default = analyze();
  EXPECT_EQ(storage_of(by_default, x), storage_of(by_default, a));
  EXPECT_NE(storage_of(by_default, a), storage_of(by_default, out));

  g_.inplace_ops.reset(static_cast<std::size_t>(Op::Scale));
  g_.inplace_ops.set(static_cast<std::size_t>(Op::Clamp));
  const GraphProblem changed = analyze();
  EXPECT_NE(storage_of(changed, x), storage_of(changed, a));
  EXPECT_EQ(storage_of(changed, a), storage_of(changed, out));
}

// Nodes of one group (ggml_allocr_set_parse_seq between -1 barriers) may run at once: what
// the group reads is freed after its last node, and a node takes a source over in place only
// when no other node of the group reads it.
//   x ──scale──> a ──scale──> b        group 0: a, c
//   x ──sqr────> c                     group 1: b, d
//   c ──scale──> d
TEST_F(LifetimesTest, NodeGroupsFreeAtTheirEndAndShareNoSourceInPlace) {
  const TensorId x = input("x", 16);
  const TensorId a = node("a", Op::Scale, 16, {x});
  const TensorId c = node("c", Op::Sqr, 16, {x});
  const TensorId b = node("b", Op::Scale, 16, {a});
  const TensorId d = node("d", Op::Scale, 16, {c});
  g_[b].flags |= kFlagOutput;
  g_[d].flags |= kFlagOutput;
  const GraphProblem alone = analyze();
  EXPECT_EQ(storage_of(alone, x), storage_of(alone, c));  // c is x's last reader: in place

  g_.node_groups = {0, 0, 1, 1};
  const GraphProblem grouped = analyze();
  // a still reads x while c runs: c gets memory of its own, and x lives to the group's end
  EXPECT_NE(storage_of(grouped, x), storage_of(grouped, c));
  EXPECT_NE(storage_of(grouped, x), storage_of(grouped, a));
  const StorageObject& xs = grouped.storages[static_cast<std::size_t>(storage_of(grouped, x))];
  const StorageObject& cs = grouped.storages[static_cast<std::size_t>(storage_of(grouped, c))];
  EXPECT_GT(xs.live.upper, cs.live.lower);  // x and c overlap in time: they cannot share bytes
  // b and d are their groups' only readers of a and c: in place, as before
  EXPECT_EQ(storage_of(grouped, a), storage_of(grouped, b));
  EXPECT_EQ(storage_of(grouped, c), storage_of(grouped, d));

  g_.node_groups = {0, 0, 1};
  EXPECT_FALSE(analyze_lifetimes(g_, types_).is_ok());  // one group per node, or none
}

// ggml from late 2024 lets a node take over a source in another buffer id (the node then
// lives there); the 2023 ggml_gallocr_alloc_graph_n does not.
//   x (buffer 0) ──scale──> a (buffer 1)
TEST_F(LifetimesTest, InplaceAcrossBuffersOnlyWhenTheGraphAllows) {
  NullBufferType second{8};
  const std::vector<const BufferType*> two{&type_, &second};
  const TensorId x = g_.add_node(g_.new_op("x", Op::Sqr, DataType::F32, {16}, {input("in", 16)}));
  const TensorId a = node("a", Op::Scale, 16, {x});
  g_[a].flags |= kFlagOutput;
  const std::vector<BufferId> node_ids{0, 1}, leaf_ids{0};
  const BufferAssignment assignment{node_ids, leaf_ids};
  auto across = analyze_lifetimes(g_, two, assignment);
  ASSERT_TRUE(across.is_ok()) << across.status().to_string();
  EXPECT_EQ(storage_of(*across, x), storage_of(*across, a));
  EXPECT_EQ(across->tensor_buffer[static_cast<std::size_t>(a)], 0);

  g_.inplace_across_buffers = false;
  auto within = analyze_lifetimes(g_, two, assignment);
  ASSERT_TRUE(within.is_ok()) << within.status().to_string();
  EXPECT_NE(storage_of(*within, x), storage_of(*within, a));
  EXPECT_EQ(within->tensor_buffer[static_cast<std::size_t>(a)], 1);
}

// The 2023 allocator also takes a source over through a view of all of it (a reshape between
// two element-wise ops) when nothing else reads the source or the view.
//   x ──sqr──> a ──reshape──> r ──scale──> out
TEST_F(LifetimesTest, InplaceThroughAViewWhenTheGraphAllows) {
  const TensorId x = input("x", 16);
  const TensorId a = node("a", Op::Sqr, 16, {x});
  const TensorId r = g_.add_node(g_.new_view("r", Op::Reshape, a, 0, {4, 4}));
  const TensorId out = g_.add_node(g_.new_op("out", Op::Scale, DataType::F32, {4, 4}, {r}));
  g_[out].flags |= kFlagOutput;
  const GraphProblem late = analyze();
  EXPECT_NE(storage_of(late, a), storage_of(late, out));

  g_.inplace_through_views = true;
  const GraphProblem old = analyze();
  EXPECT_EQ(storage_of(old, a), storage_of(old, out));
  EXPECT_LT(live_lower_bound(old)[0], live_lower_bound(late)[0]);

  // not when the view starts inside its source
  g_[r].view_offs = 8;
  g_[r].ne = {2, 1, 1, 1};
  g_[r].nb = contiguous_strides(DataType::F32, g_[r].ne);
  g_[out].ne = g_[r].ne;
  g_[out].nb = g_[r].nb;
  const GraphProblem offset = analyze();
  EXPECT_NE(storage_of(offset, a), storage_of(offset, out));
}

// A parent with two children, an output parent, or a different layout is not reused.
TEST_F(LifetimesTest, NoInplaceForSharedOutputOrOtherLayout) {
  const TensorId x = input("x", 16);
  const TensorId a = node("a", Op::Scale, 16, {x});   // x still needed by c
  const TensorId c = node("c", Op::Add, 16, {a, x});  // reuses a
  g_[c].flags |= kFlagOutput;
  const TensorId d = node("d", Op::Scale, 16, {c});  // c is an output
  const TensorId e = node("e", Op::Scale, 8, {d});   // other shape
  g_[e].flags |= kFlagOutput;
  const GraphProblem l = analyze();
  EXPECT_NE(storage_of(l, a), storage_of(l, x));
  EXPECT_EQ(storage_of(l, c), storage_of(l, a));
  EXPECT_NE(storage_of(l, d), storage_of(l, c));
  EXPECT_NE(storage_of(l, e), storage_of(l, d));
}

// Ops that cannot run in place never reuse a parent.
TEST_F(LifetimesTest, MulMatIsNotInplace) {
  const TensorId x = input("x", 16);
  const TensorId y = node("y", Op::MulMat, 16, {x, x});
  g_[y].flags |= kFlagOutput;
  const GraphProblem l = analyze();
  EXPECT_NE(storage_of(l, x), storage_of(l, y));
}

// A view keeps its source alive until the view's last user; a NONE-op view does not count.
TEST_F(LifetimesTest, ViewsKeepTheirSourceAlive) {
  const TensorId x = input("x", 16);
  const TensorId a = node("a", Op::Cont, 16, {x});
  const TensorId v = g_.add_node(g_.new_view("v", Op::View, a, 0, {8}));
  const TensorId u = node("u", Op::Cont, 8, {x});     // after v, before v's user
  const TensorId w = node("w", Op::Cont, 8, {v, u});  // last user of v: frees a after w
  g_[w].flags |= kFlagOutput;
  const GraphProblem l = analyze();
  EXPECT_EQ(storage_of(l, v), -1) << "views are not storage objects";
  const StorageObject& sa = l.storages[static_cast<std::size_t>(storage_of(l, a))];
  const StorageObject& sw = l.storages[static_cast<std::size_t>(storage_of(l, w))];
  EXPECT_TRUE(sa.live.overlaps(sw.live)) << "a must live while w reads v";
  EXPECT_GT(sa.live.upper, sw.live.lower) << "a is freed only after w is allocated";
  (void)u;
}

TEST_F(LifetimesTest, NoneOpViewDoesNotHoldItsSource) {
  const TensorId x = input("x", 16);
  const TensorId a = node("a", Op::Cont, 16, {x});
  g_.add_node(g_.new_view("dep", Op::None, a, 0, {16}));  // dependency only: src a counts a child
  const TensorId b = node("b", Op::Cont, 16, {x});
  g_[b].flags |= kFlagOutput;
  const GraphProblem l = analyze();
  const StorageObject& sa = l.storages[static_cast<std::size_t>(storage_of(l, a))];
  // a is freed when its only child (the NONE view) is processed, before b is allocated.
  const StorageObject& sb = l.storages[static_cast<std::size_t>(storage_of(l, b))];
  EXPECT_LE(sa.live.upper, sb.live.lower);
}

// Outputs are never freed; existing memory is never planned.
TEST_F(LifetimesTest, OutputsLiveToTheEndAndExistingMemoryIsSkipped) {
  const TensorId w = g_.add_leaf(g_.new_tensor("w", DataType::F16, {16}));
  g_[w].has_memory = true;
  const TensorId x = input("x", 16);
  const TensorId y = node("y", Op::MulMat, 16, {w, x});
  g_[y].flags |= kFlagOutput;
  const TensorId z = node("z", Op::Cont, 16, {x});
  g_[z].flags |= kFlagOutput;
  const GraphProblem l = analyze();
  EXPECT_EQ(storage_of(l, w), -1);
  EXPECT_EQ(l.storages[static_cast<std::size_t>(storage_of(l, y))].live.upper, l.step_count());
  EXPECT_EQ(l.storages[static_cast<std::size_t>(storage_of(l, z))].live.upper, l.step_count());
}

// Inputs are allocated before any node, even when first read late.
TEST_F(LifetimesTest, InputsAreAllocatedFirst) {
  const TensorId x = input("x", 16);
  const TensorId a = node("a", Op::Cont, 16, {x});
  const TensorId late = g_.add(g_.new_tensor("late", DataType::F32, {16}));
  g_[late].flags |= kFlagInput;
  const TensorId b = node("b", Op::Add, 16, {a, late});
  g_[b].flags |= kFlagOutput;
  const GraphProblem l = analyze();
  EXPECT_LT(l.storages[static_cast<std::size_t>(storage_of(l, late))].live.lower,
            l.storages[static_cast<std::size_t>(storage_of(l, a))].live.lower);
}

// Upstream allocates input nodes while it is still counting children, so an input node can
// take over a leaf whose later users are not counted yet; the leaf is then allocated again
// (here at once, as the input source of b; a non-input leaf would wait for its next user). galloc's walk does the same
// (the differential test found it), and storage ids stay consistent although two storages share a first tensor.
//
//   leaf (input) ──> a = cont(leaf)
//   b = scale(leaf), flagged input, listed after a
TEST_F(LifetimesTest, InputNodeTakesALeafWhileChildrenAreCounted) {
  const TensorId leaf = input("leaf", 16);
  const TensorId a = node("a", Op::Cont, 16, {leaf});
  const TensorId b = node("b", Op::Scale, 16, {leaf});
  g_[b].flags |= kFlagInput | kFlagOutput;
  g_[a].flags |= kFlagOutput;
  const GraphProblem l = analyze();
  ASSERT_EQ(l.storages.size(), 3u) << "leaf twice, a once";
  EXPECT_EQ(l.storages[0].first_tensor, leaf);
  EXPECT_EQ(l.storages[1].first_tensor, leaf);
  EXPECT_EQ(storage_of(l, b), 0) << "b holds the leaf's first storage";
  EXPECT_EQ(storage_of(l, leaf), 1) << "the leaf was allocated again";
  const Placement placement = place_ggml(l);
  EXPECT_EQ(placement.storage_address.size(), 3u);
}

// read_order lists leafs, nodes and node sources only, once each, in the order ggml's
// alloc_graph first reaches them (leafs; each node's sources, then the node); tensor_size is
// the buffer type's alloc size (padding included) where a tensor has storage, 0 elsewhere.
TEST_F(LifetimesTest, ReadTensorsAndTheirAllocSizes) {
  type_.set_alloc_padding(8);
  const TensorId x = input("x", 16);
  const TensorId unlisted_source = g_.add(g_.new_tensor("s", DataType::F32, {16}));
  const TensorId unused = g_.add(g_.new_tensor("unused", DataType::F32, {16}));
  const TensorId w = g_.add_leaf(g_.new_tensor("w", DataType::F32, {16}));
  g_[w].has_memory = true;
  const TensorId a = node("a", Op::MulMat, 16, {x, unlisted_source});
  const TensorId v = g_.add_node(g_.new_view("v", Op::View, a, 0, {8}));
  const TensorId out = node("out", Op::Cont, 8, {v, w});
  g_[out].flags |= kFlagOutput;
  const GraphProblem l = analyze();
  EXPECT_EQ(l.read_order, (std::vector<TensorId>{x, w, unlisted_source, a, v, out}));
  EXPECT_EQ(std::count(l.read_order.begin(), l.read_order.end(), unused), 0);
  ASSERT_EQ(l.tensor_size.size(), g_.tensors.size());
  for (std::size_t t = 0; t < g_.tensors.size(); ++t) {
    const Bytes expected = l.tensor_storage[t] >= 0 ? type_.alloc_size(g_.tensors[t]) : 0;
    EXPECT_EQ(l.tensor_size[t], expected) << g_.tensors[t].name;
  }
  EXPECT_EQ(l.tensor_size[static_cast<std::size_t>(x)], 64u + 8u);
  EXPECT_EQ(l.tensor_size[static_cast<std::size_t>(v)], 0u) << "a view has no storage";
}

// Buffer ids sharing a buffer type share one allocator.
TEST(AllocatorsOf, DuplicatesShare) {
  NullBufferType a, b;
  const std::vector<const BufferType*> types{&a, &b, &a};
  EXPECT_EQ(allocators_of(types), (std::vector<AllocatorId>{0, 1, 0}));
}

// upstream_lifetimes moves every deferred leaf's allocation back to the leaf phase: the same
// lifetimes as walking the graph again without deferring, on the zoo graphs that defer leafs
// (whisper's and gpt-2's copies into fresh tensors) and on random graphs.
TEST(UpstreamLifetimes, EqualToAWalkWithoutDeferring) {
  NullBufferType type(32);
  const std::vector<const BufferType*> types{&type};
  LifetimeOptions defer;
  defer.defer_written_leafs = true;
  std::size_t graphs_with_deferred_leafs = 0;
  const auto check = [&](const Graph& graph, Span<const BufferType* const> per_id, const BufferAssignment& assignment,
                         const std::string& name) {
    auto deferred = analyze_lifetimes(graph, per_id, assignment, defer);
    auto upstream = analyze_lifetimes(graph, per_id, assignment);
    ASSERT_TRUE(deferred.is_ok() && upstream.is_ok()) << name;
    if (!deferred->deferred_leafs.empty()) graphs_with_deferred_leafs += 1;
    const GraphProblem derived = upstream_lifetimes(*deferred);
    EXPECT_TRUE(derived.deferred_leafs.empty()) << name;
    EXPECT_EQ(testing::lifetimes_difference(derived, *upstream), "") << name;
  };
  for (const auto& entry : zoo::list()) {
    auto graph = zoo::build(entry.name);
    ASSERT_TRUE(graph.is_ok()) << entry.name;
    check(*graph, types, {}, entry.name);
  }
  for (std::uint64_t seed = 0; seed < 200; ++seed) {
    const testing::RandomCase c = testing::random_case(seed);
    const auto case_types = c.make_buffer_types();
    check(c.graph, case_types.per_id, {c.node_buffer_ids, c.leaf_buffer_ids}, "seed " + std::to_string(seed));
  }
  EXPECT_GE(graphs_with_deferred_leafs, 6u) << "the zoo alone has six graphs that defer leafs";
}

}  // namespace
}  // namespace galloc
