// GraphAllocator: ggml_gallocr's state machine (reserve, measure, alloc with auto-reserve,
// needs_reserve, buffer sizes), its failure paths, and the validity of every plan it makes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "galloc/galloc.hpp"
#include "galloc/validator.hpp"
#include "support/ggml_like_builder.hpp"
#include "support/random_graph.hpp"
#include "support/strategy_param.hpp"

namespace galloc {
namespace {

using testing::GgmlLikeBuilder;

GraphAllocatorOptions options_for(Strategy strategy) {
  GraphAllocatorOptions options;
  options.placement.strategy = strategy;
  options.placement.exact.time_limit_seconds = 0.02;  // keep the exact search short in tests
  return options;
}

// Memory the graph does not own: the weights w.
std::vector<float>& weights() {
  static std::vector<float> storage(1024, 1.0f);
  return storage;
}

// The test graph, with n elements in its main tensors (the structure does not depend on n):
//
//   w (weights, has_memory) -----------+------------------------------+
//   x (input) --> a = mul(x, w) --> b = pad(a, 8) --> c = scale(b) --> v = view_1d(c, 4, 16)
//                 |                                                    |
//                 |                         wv = view_1d(w, 4, 0) --> d = mul(v, wv)
//                 +-------------------------------------------------> o = concat(d, a, 0)  output
//
// `swap_sources` builds a = mul(w, x) instead: the same sizes, another structure.
struct TestGraph {
  GgmlLikeBuilder builder;
  TensorId w, x, a, b, c, v, wv, d, o;
  Graph& graph() { return builder.graph(); }
};

TestGraph make_graph(std::int64_t n, bool swap_sources = false) {
  TestGraph t;
  GgmlLikeBuilder& g = t.builder;
  t.w = g.new_tensor_1d(DataType::F32, n);
  g[t.w].has_memory = true;
  g[t.w].data = weights().data();
  t.x = g.input_1d(n);
  t.a = swap_sources ? g.mul(t.w, t.x) : g.mul(t.x, t.w);
  t.b = g.pad(t.a, 8);
  t.c = g.scale(t.b);
  t.v = g.view_1d(t.c, 4, 16);
  t.wv = g.view_1d(t.w, 4, 0);
  t.d = g.mul(t.v, t.wv);
  t.o = g.concat(t.d, t.a, 0);
  g.expand_output(t.o);
  return t;
}

// ---------------------------------------------------------------------------------------------
// Properties that hold for every strategy

class GraphAllocatorStrategies : public ::testing::TestWithParam<Strategy> {};

// Real memory, a max size that forces several chunks: every planned tensor's data lies inside
// its chunk's buffer, aligned; views follow their source; external memory is left alone.
TEST_P(GraphAllocatorStrategies, AllocPlacesEveryTensorInsideItsChunk) {
  CpuBufferType cpu(64, 256);
  GraphAllocator allocator({&cpu}, options_for(GetParam()));
  TestGraph t = make_graph(40);
  Graph& graph = t.graph();
  ASSERT_TRUE(allocator.reserve(graph).is_ok());
  const Status status = allocator.alloc(graph);
  ASSERT_TRUE(status.is_ok()) << status.to_string();

  const Plan& plan = *allocator.plan();
  const auto chunks = allocator.chunks(0);
  ASSERT_EQ(chunks.size(), plan.buffers[0].chunk_sizes.size());
  EXPECT_GT(chunks.size(), 1u);
  for (std::size_t i = 0; i < graph.tensors.size(); ++i) {
    const Tensor& tensor = graph.tensors[i];
    SCOPED_TRACE(describe_tensor(graph, static_cast<TensorId>(i)));
    const TensorPlacement& slot = plan.tensors[i];
    if (tensor.has_memory) {
      EXPECT_FALSE(slot.planned());
      continue;
    }
    if (tensor.is_view()) {
      EXPECT_FALSE(slot.planned());
      EXPECT_EQ(tensor.data, static_cast<std::byte*>(graph[tensor.view_src].data) + tensor.view_offs);
      continue;
    }
    ASSERT_TRUE(slot.planned());
    ASSERT_GE(slot.chunk, 0);
    ASSERT_LT(static_cast<std::size_t>(slot.chunk), chunks.size());
    Buffer* chunk = chunks[static_cast<std::size_t>(slot.chunk)];
    EXPECT_EQ(tensor.data, chunk->base() + slot.offset);
    EXPECT_EQ(slot.size, tensor_nbytes(tensor));
    EXPECT_LE(slot.offset + slot.size, chunk->size());
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(tensor.data) % 64, 0u);
    // The memory is real and writable (AddressSanitizer builds check the bounds too).
    std::memset(tensor.data, 0x5a, slot.size);
  }
  EXPECT_EQ(graph[t.w].data, weights().data());
  EXPECT_EQ(graph[t.wv].data, weights().data());
}

// The plans the allocator makes are the ones analyze_lifetimes + place give, and the
// independent validator finds nothing wrong with them: the test graph and random graphs with
// several buffer types, shared types, small max sizes and padding.
TEST_P(GraphAllocatorStrategies, EveryPlanPassesValidatePlacement) {
  const GraphAllocatorOptions options = options_for(GetParam());
  for (std::uint64_t seed = 0; seed < 25; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const testing::RandomCase c = testing::random_case(seed);
    const auto types = c.make_buffer_types();
    const BufferAssignment assignment{c.node_buffer_ids, c.leaf_buffer_ids};

    auto lifetimes = analyze_lifetimes(c.graph, types.per_id, assignment);
    ASSERT_TRUE(lifetimes.is_ok()) << lifetimes.status().to_string();
    auto placement = place(*lifetimes, options.placement);
    ASSERT_TRUE(placement.is_ok()) << placement.status().to_string();
    const auto issues = validate_placement(*lifetimes, *placement);
    EXPECT_TRUE(issues.empty()) << issues.front().message;

    GraphAllocator allocator(types.per_id, options);
    const Status status = allocator.reserve(c.graph, assignment);
    ASSERT_TRUE(status.is_ok()) << status.to_string();
    const Plan expected = make_plan(c.graph, types.per_id, *lifetimes, *placement, "");
    EXPECT_EQ(allocator.plan()->tensors, expected.tensors);
  }
  NullBufferType type(8, 128);
  TestGraph t = make_graph(24);
  const std::vector<const BufferType*> types{&type};
  auto lifetimes = analyze_lifetimes(t.graph(), types);
  ASSERT_TRUE(lifetimes.is_ok());
  auto placement = place(*lifetimes, options.placement);
  ASSERT_TRUE(placement.is_ok());
  EXPECT_TRUE(validate_placement(*lifetimes, *placement).empty());
}

INSTANTIATE_TEST_SUITE_P(AllStrategies, GraphAllocatorStrategies, ::testing::ValuesIn(all_strategies()),
                         testing::strategy_param_name);

// ---------------------------------------------------------------------------------------------
// The state machine (default options)

TEST(GraphAllocator, ViewsGetSourceDataPlusOffset) {
  CpuBufferType cpu;
  GraphAllocator allocator({&cpu});
  TestGraph t = make_graph(32);
  Graph& graph = t.graph();
  ASSERT_TRUE(allocator.alloc(graph).is_ok());
  EXPECT_NE(graph[t.c].data, nullptr);
  EXPECT_EQ(graph[t.v].data, static_cast<std::byte*>(graph[t.c].data) + 16);
  EXPECT_EQ(graph[t.wv].data, static_cast<void*>(weights().data()));
}

// What an adapter sees of alloc: its buffers reset, before_reserve only when the graph no
// longer fits, then every tensor once, in the order ggml first reaches it (leafs; each node's
// sources, then the node), with an address exactly where alloc(graph) would write one.
TEST(GraphAllocator, SinkSeesTensorsInGgmlOrderWithTheAddressesAllocWrites) {
  struct Recorder final : AllocSink {
    std::vector<TensorId> order;
    std::vector<std::byte*> data;
    int reserves = 0;
    TensorId fail_at = kNoTensor;
    Status before_reserve(Graph&) override {
      ++reserves;
      return Status::ok();
    }
    Status place(TensorId id, const TensorAddress* address) override {
      if (id == fail_at) return internal_error("stop here");
      order.push_back(id);
      data.push_back(address != nullptr ? address->data : nullptr);
      if (address != nullptr) {
        EXPECT_EQ(address->buffer, 0);
      }
      return Status::ok();
    }
  };
  CpuBufferType cpu;
  GraphAllocator allocator({&cpu});
  TestGraph t = make_graph(32);
  Graph& graph = t.graph();
  Recorder first;
  ASSERT_TRUE(allocator.alloc(graph, first).is_ok());
  EXPECT_EQ(first.reserves, 1);

  std::vector<TensorId> expected;
  const auto visit = [&](TensorId id) {
    if (std::find(expected.begin(), expected.end(), id) == expected.end()) expected.push_back(id);
  };
  for (TensorId leaf : graph.leafs) visit(leaf);
  for (TensorId node : graph.nodes) {
    for (TensorId src : graph[node].src) {
      if (src != kNoTensor) visit(src);
    }
    visit(node);
  }
  EXPECT_EQ(first.order, expected);

  Recorder again;
  ASSERT_TRUE(allocator.alloc(graph, again).is_ok());
  EXPECT_EQ(again.reserves, 0) << "the same graph fits its reservation";
  ASSERT_TRUE(allocator.alloc(graph).is_ok());
  for (std::size_t i = 0; i < again.order.size(); ++i) {
    const Tensor& tensor = graph[again.order[i]];
    SCOPED_TRACE(describe_tensor(graph, again.order[i]));
    if (tensor.is_view() || tensor.has_memory) {
      EXPECT_EQ(again.data[i], nullptr);
    } else {
      EXPECT_EQ(again.data[i], tensor.data);
      EXPECT_NE(again.data[i], nullptr);
    }
  }

  // An error from the sink stops the walk and is alloc's result.
  Recorder failing;
  failing.fail_at = t.d;
  const Status s = allocator.alloc(graph, failing);
  EXPECT_EQ(s.code(), ErrorCode::kInternal);
  EXPECT_EQ(std::find(failing.order.begin(), failing.order.end(), t.o), failing.order.end());
}

// alloc resets every chunk before placing tensors again (ggml_backend_buffer_reset).
TEST(GraphAllocator, AllocResetsEveryChunk) {
  struct ResetCounting final : BufferType {
    struct Counted final : Buffer {
      std::unique_ptr<Buffer> inner;
      int* resets;
      const BufferType* owner;
      std::byte* base() override { return inner->base(); }
      Bytes size() const override { return inner->size(); }
      const BufferType& type() const override { return *owner; }
      void reset() override { ++*resets; }
    };
    CpuBufferType cpu{64, 256};
    mutable int resets = 0;
    std::string name() const override { return "reset-counting"; }
    Bytes alignment() const override { return 64; }
    Bytes max_size() const override { return 256; }
    Result<std::unique_ptr<Buffer>> allocate(Bytes size) const override {
      auto inner = cpu.allocate(size);
      if (!inner) return inner.status();
      auto buffer = std::make_unique<Counted>();
      buffer->inner = std::move(inner).value();
      buffer->resets = &resets;
      buffer->owner = this;
      return std::unique_ptr<Buffer>(std::move(buffer));
    }
  };
  ResetCounting type;
  GraphAllocator allocator({&type});
  TestGraph t = make_graph(40);
  ASSERT_TRUE(allocator.alloc(t.graph()).is_ok());
  const auto chunks = static_cast<int>(allocator.chunks(0).size());
  ASSERT_GT(chunks, 1);
  EXPECT_EQ(type.resets, chunks);
  ASSERT_TRUE(allocator.alloc(t.graph()).is_ok());
  EXPECT_EQ(type.resets, 2 * chunks);
}

TEST(GraphAllocator, HasMemoryTensorsAreNeverPlannedAndKeepTheirData) {
  NullBufferType type;
  GraphAllocator allocator({&type});
  TestGraph t = make_graph(32);
  Graph& graph = t.graph();
  // Also a node with existing memory (a KV-cache write target, say).
  float cache[64] = {};
  graph[t.d].has_memory = true;
  graph[t.d].data = cache;
  ASSERT_TRUE(allocator.alloc(graph).is_ok());
  EXPECT_FALSE(allocator.plan()->tensors[static_cast<std::size_t>(t.w)].planned());
  EXPECT_FALSE(allocator.plan()->tensors[static_cast<std::size_t>(t.d)].planned());
  EXPECT_EQ(graph[t.w].data, weights().data());
  EXPECT_EQ(graph[t.d].data, static_cast<void*>(cache));
  EXPECT_TRUE(allocator.plan()->tensors[static_cast<std::size_t>(t.x)].planned());
}

TEST(GraphAllocator, AllocBeforeReserveWithOneBufferIdReservesItself) {
  NullBufferType type;
  GraphAllocator allocator({&type});
  EXPECT_FALSE(allocator.plan().has_value());
  EXPECT_EQ(allocator.buffer_size(0).value(), 0u);
  TestGraph t = make_graph(32);
  ASSERT_TRUE(allocator.alloc(t.graph()).is_ok());
  ASSERT_TRUE(allocator.plan().has_value());
  EXPECT_GT(allocator.buffer_size(0).value(), 0u);
  EXPECT_NE(t.graph()[t.o].data, nullptr);

  // A larger graph: reserved again, the buffer grows.
  const Bytes before = allocator.buffer_size(0).value();
  TestGraph larger = make_graph(64);
  ASSERT_TRUE(allocator.needs_reserve(larger.graph()));
  ASSERT_TRUE(allocator.alloc(larger.graph()).is_ok());
  EXPECT_GT(allocator.buffer_size(0).value(), before);
  EXPECT_FALSE(allocator.needs_reserve(larger.graph()));
}

TEST(GraphAllocator, AllocWithSeveralBufferIdsNeedsAReserve) {
  NullBufferType type_a(8, kUnlimited, "A");
  NullBufferType type_b(8, kUnlimited, "B");
  GraphAllocator allocator({&type_a, &type_b});
  TestGraph t = make_graph(32);
  Graph& graph = t.graph();
  const Status status = allocator.alloc(graph);
  EXPECT_EQ(status.code(), ErrorCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("reserve"), std::string::npos) << status.message();
  EXPECT_EQ(graph[t.x].data, nullptr);
  EXPECT_EQ(type_a.allocations() + type_b.allocations(), 0u);

  // Nodes a, b, c in A; d, o in B (views and leafs as they come).
  std::vector<BufferId> node_ids(graph.nodes.size(), 0);
  node_ids[static_cast<std::size_t>(t.builder.node_index(t.d))] = 1;
  node_ids[static_cast<std::size_t>(t.builder.node_index(t.o))] = 1;
  ASSERT_TRUE(allocator.reserve(graph, {node_ids, {}}).is_ok());
  ASSERT_TRUE(allocator.alloc(graph).is_ok());
  EXPECT_NE(graph[t.x].data, nullptr);
  EXPECT_GT(allocator.buffer_size(1).value(), 0u);

  // A graph that does not fit the reservation is not re-reserved behind the caller's back.
  TestGraph larger = make_graph(64);
  EXPECT_EQ(allocator.alloc(larger.graph()).code(), ErrorCode::kFailedPrecondition);
}

// needs_reserve: counts, sizes and structure.
TEST(GraphAllocator, NeedsReserve) {
  NullBufferType type;
  GraphAllocator allocator({&type});
  TestGraph t = make_graph(16);
  EXPECT_TRUE(allocator.needs_reserve(t.graph()));  // nothing reserved yet
  ASSERT_TRUE(allocator.reserve(t.graph()).is_ok());

  EXPECT_FALSE(allocator.needs_reserve(t.graph()));
  EXPECT_FALSE(allocator.needs_reserve(make_graph(16).graph()));  // an equal graph
  EXPECT_FALSE(allocator.needs_reserve(make_graph(8).graph()));   // smaller tensors fit
  EXPECT_TRUE(allocator.needs_reserve(make_graph(17).graph()));   // larger ones do not

  // One more node.
  TestGraph more = make_graph(16);
  more.builder.expand_output(more.builder.scale(more.o));
  EXPECT_TRUE(allocator.needs_reserve(more.graph()));

  // The same sizes, two sources swapped: a = mul(w, x).
  TestGraph swapped = make_graph(16, /*swap_sources=*/true);
  ASSERT_EQ(swapped.graph().tensors.size(), t.graph().tensors.size());
  for (std::size_t i = 0; i < t.graph().tensors.size(); ++i) {
    ASSERT_EQ(tensor_nbytes(swapped.graph().tensors[i]), tensor_nbytes(t.graph().tensors[i]));
  }
  EXPECT_TRUE(allocator.needs_reserve(swapped.graph()));

  // The same sizes, another flag: b becomes an output.
  TestGraph flagged = make_graph(16);
  flagged.builder.set_output(flagged.b);
  EXPECT_TRUE(allocator.needs_reserve(flagged.graph()));

  // The same graph under other in-place rules (another ggml's ggml_op_can_inplace).
  TestGraph other_rules = make_graph(16);
  other_rules.graph().inplace_ops.reset();
  EXPECT_TRUE(allocator.needs_reserve(other_rules.graph()));

  // The same graph with its nodes in groups that may run at once (a 2023 parse order).
  TestGraph grouped = make_graph(16);
  grouped.graph().node_groups.assign(grouped.graph().nodes.size(), 0);
  EXPECT_TRUE(allocator.needs_reserve(grouped.graph()));
  TestGraph within = make_graph(16);
  within.graph().inplace_across_buffers = false;
  EXPECT_TRUE(allocator.needs_reserve(within.graph()));
  TestGraph through = make_graph(16);
  through.graph().inplace_through_views = true;
  EXPECT_TRUE(allocator.needs_reserve(through.graph()));

  // A tensor that gains existing memory needs no slot; one that loses it needs one.
  TestGraph external = make_graph(16);
  external.graph()[external.x].has_memory = true;
  EXPECT_FALSE(allocator.needs_reserve(external.graph()));
  ASSERT_TRUE(allocator.reserve(external.graph()).is_ok());
  EXPECT_TRUE(allocator.needs_reserve(make_graph(16).graph()));
}

// The flags and view sources of leafs and sources change the walk as much as those of nodes.
TEST(GraphAllocator, NeedsReserveSeesLeafFlagsAndViewSources) {
  NullBufferType type;
  GraphAllocator allocator({&type}, options_for(Strategy::kGgml));
  TestGraph t = make_graph(16);
  ASSERT_TRUE(allocator.reserve(t.graph()).is_ok());
  // a = mul(x, w) takes the input x's memory once x dies: fine while x is no output.
  const Plan& plan = *allocator.plan();
  ASSERT_EQ(plan.tensors[static_cast<std::size_t>(t.a)].offset, plan.tensors[static_cast<std::size_t>(t.x)].offset);

  TestGraph output_leaf = make_graph(16);
  output_leaf.builder.set_output(output_leaf.x);
  EXPECT_TRUE(allocator.needs_reserve(output_leaf.graph()));
  ASSERT_TRUE(allocator.alloc(output_leaf.graph()).is_ok());
  EXPECT_NE(output_leaf.graph()[output_leaf.a].data, output_leaf.graph()[output_leaf.x].data);

  ASSERT_TRUE(allocator.reserve(t.graph()).is_ok());
  TestGraph viewing_leaf = make_graph(16);
  viewing_leaf.graph()[viewing_leaf.x].view_src = viewing_leaf.w;  // x now reads w's memory
  EXPECT_TRUE(allocator.needs_reserve(viewing_leaf.graph()));
  EXPECT_FALSE(allocator.needs_reserve(make_graph(16).graph()));
}

TEST(GraphAllocator, NeedsReserveCountsTheBufferTypesPadding) {
  NullBufferType type;
  GraphAllocator allocator({&type});
  TestGraph t = make_graph(16);
  ASSERT_TRUE(allocator.reserve(t.graph()).is_ok());
  EXPECT_EQ(allocator.plan()->tensors[static_cast<std::size_t>(t.x)].size, 64u);
  type.set_alloc_padding(8);
  EXPECT_TRUE(allocator.needs_reserve(t.graph()));
  ASSERT_TRUE(allocator.reserve(t.graph()).is_ok());
  EXPECT_EQ(allocator.plan()->tensors[static_cast<std::size_t>(t.x)].size, 72u);
  EXPECT_FALSE(allocator.needs_reserve(t.graph()));
}

// measure plans and reports sizes but changes nothing; a later reserve gives the same sizes.
TEST(GraphAllocator, MeasureChangesNothing) {
  NullBufferType type(8, 128);
  GraphAllocator allocator({&type});
  TestGraph small = make_graph(16);
  ASSERT_TRUE(allocator.reserve(small.graph()).is_ok());
  const Plan plan_before = *allocator.plan();
  const auto chunks_before = allocator.chunks(0);
  const Bytes size_before = allocator.buffer_size(0).value();
  const std::size_t allocations_before = type.allocations();
  const Bytes live_before = type.live_bytes();

  TestGraph large = make_graph(48);
  auto measured = allocator.measure(large.graph());
  ASSERT_TRUE(measured.is_ok()) << measured.status().to_string();
  ASSERT_EQ(measured->size(), 1u);
  EXPECT_GT((*measured)[0], size_before);

  EXPECT_EQ(allocator.plan()->tensors, plan_before.tensors);
  EXPECT_EQ(allocator.plan()->buffers[0].chunk_sizes, plan_before.buffers[0].chunk_sizes);
  EXPECT_EQ(allocator.plan()->buffers[0].lower_bound, plan_before.buffers[0].lower_bound);
  EXPECT_EQ(allocator.chunks(0), chunks_before);
  EXPECT_EQ(allocator.buffer_size(0).value(), size_before);
  EXPECT_EQ(type.allocations(), allocations_before);
  EXPECT_EQ(type.live_bytes(), live_before);
  EXPECT_EQ(large.graph()[large.x].data, nullptr);
  EXPECT_FALSE(allocator.needs_reserve(small.graph()));

  // A fresh allocator's reserve, and this one's, give what measure said.
  GraphAllocator fresh({&type});
  ASSERT_TRUE(fresh.reserve(large.graph()).is_ok());
  EXPECT_EQ(fresh.buffer_size(0).value(), (*measured)[0]);
  ASSERT_TRUE(allocator.reserve(large.graph()).is_ok());
  EXPECT_EQ(allocator.buffer_size(0).value(), (*measured)[0]);
}

TEST(GraphAllocator, MeasureReportsTheSharedSizeForEveryIdOfAType) {
  NullBufferType type;
  GraphAllocator allocator({&type, &type});
  TestGraph t = make_graph(16);
  std::vector<BufferId> node_ids(t.graph().nodes.size(), 1);
  node_ids[0] = 0;
  const BufferAssignment assignment{node_ids, {}};
  auto measured = allocator.measure(t.graph(), assignment);
  ASSERT_TRUE(measured.is_ok());
  ASSERT_EQ(measured->size(), 2u);
  EXPECT_EQ((*measured)[0], (*measured)[1]);
  ASSERT_TRUE(allocator.reserve(t.graph(), assignment).is_ok());
  EXPECT_EQ(allocator.buffer_size(0).value(), (*measured)[0]);
  EXPECT_EQ(allocator.buffer_size(1).value(), 0u);  // counted under id 0
  EXPECT_EQ(allocator.chunks(0), allocator.chunks(1));
}

TEST(GraphAllocator, MeasureOfABadGraphIsAnError) {
  NullBufferType type;
  GraphAllocator allocator({&type});
  TestGraph t = make_graph(16);
  t.graph()[t.c].src[0] = 1000;
  EXPECT_EQ(allocator.measure(t.graph()).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(allocator.reserve(t.graph()).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(allocator.alloc(t.graph()).code(), ErrorCode::kInvalidArgument);
  EXPECT_FALSE(allocator.plan().has_value());
}

// A reserve whose buffer allocation fails returns kOutOfMemory and keeps the previous plan, in
// buffers of its sizes allocated again: the chunk allocated before the failing one is
// released, alloc still works.
TEST(GraphAllocator, FailedReserveKeepsThePreviousPlan) {
  NullBufferType type(8, 128);
  GraphAllocator allocator({&type});
  TestGraph small = make_graph(16);
  ASSERT_TRUE(allocator.alloc(small.graph()).is_ok());
  const Plan plan_before = *allocator.plan();
  std::vector<Bytes> chunk_sizes_before;
  for (Buffer* chunk : allocator.chunks(0)) chunk_sizes_before.push_back(chunk->size());
  const Bytes size_before = allocator.buffer_size(0).value();
  const Bytes live_before = type.live_bytes();
  const std::size_t buffers_before = type.live_buffers();
  void* x_before = small.graph()[small.x].data;

  TestGraph large = make_graph(64);
  auto measured_plan = allocator.measure(large.graph());
  ASSERT_TRUE(measured_plan.is_ok());
  type.fail_allocation(type.allocations() + 2);  // the second chunk of the next reserve
  const Status status = allocator.reserve(large.graph());
  EXPECT_EQ(status.code(), ErrorCode::kOutOfMemory);
  EXPECT_NE(status.message().find("chunk 1"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("injected"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("the previous plan is kept"), std::string::npos) << status.message();

  EXPECT_EQ(allocator.plan()->tensors, plan_before.tensors);
  EXPECT_EQ(allocator.plan()->buffers[0].chunk_sizes, plan_before.buffers[0].chunk_sizes);
  std::vector<Bytes> chunk_sizes_after;
  for (Buffer* chunk : allocator.chunks(0)) chunk_sizes_after.push_back(chunk->size());
  EXPECT_EQ(chunk_sizes_after, chunk_sizes_before);
  EXPECT_EQ(allocator.buffer_size(0).value(), size_before);
  EXPECT_EQ(type.live_bytes(), live_before);
  EXPECT_EQ(type.live_buffers(), buffers_before);
  EXPECT_FALSE(allocator.needs_reserve(small.graph()));
  small.graph()[small.x].data = nullptr;
  ASSERT_TRUE(allocator.alloc(small.graph()).is_ok());
  EXPECT_EQ(small.graph()[small.x].data, x_before);  // the null type's buffers share one fake base

  // The failure was a one-off: the next try succeeds.
  ASSERT_TRUE(allocator.alloc(large.graph()).is_ok());
  EXPECT_EQ(allocator.buffer_size(0).value(), (*measured_plan)[0]);
}

// When the previous sizes cannot be allocated again either, the plan is dropped: nothing is
// held, the status says so, and the next alloc reserves from scratch.
TEST(GraphAllocator, FailedReserveThatCannotRestoreDropsThePlan) {
  struct FailingFrom final : BufferType {
    NullBufferType inner{8, 128};
    std::size_t fail_from = 0;  // 0: never
    mutable std::size_t made = 0;
    std::string name() const override { return "failing-from"; }
    Bytes alignment() const override { return 8; }
    Bytes max_size() const override { return 128; }
    Result<std::unique_ptr<Buffer>> allocate(Bytes size) const override {
      if (fail_from != 0 && ++made >= fail_from) return out_of_memory("no memory (injected)");
      return inner.allocate(size);
    }
  };
  FailingFrom type;
  GraphAllocator allocator({&type});
  TestGraph small = make_graph(16);
  ASSERT_TRUE(allocator.alloc(small.graph()).is_ok());
  type.fail_from = 2;  // the growth's first chunk succeeds, then nothing does
  TestGraph large = make_graph(64);
  const Status status = allocator.reserve(large.graph());
  EXPECT_EQ(status.code(), ErrorCode::kOutOfMemory);
  EXPECT_NE(status.message().find("the plan is dropped"), std::string::npos) << status.message();
  EXPECT_FALSE(allocator.plan().has_value());
  EXPECT_EQ(allocator.buffer_size(0).value(), 0u);
  EXPECT_EQ(type.inner.live_bytes(), 0u);
  EXPECT_TRUE(allocator.needs_reserve(small.graph()));
  type.fail_from = 0;
  ASSERT_TRUE(allocator.alloc(small.graph()).is_ok());
  EXPECT_NE(small.graph()[small.o].data, nullptr);
}

// A reserve that grows the buffer frees the old one first, as ggml does: the most bytes held
// at once is the larger buffer, not the sum of both.
TEST(GraphAllocator, GrowingNeverHoldsTheOldAndTheNewBufferAtOnce) {
  NullBufferType type(64);
  GraphAllocator allocator({&type});
  TestGraph small = make_graph(1 << 18);  // a 2 MiB compute buffer
  ASSERT_TRUE(allocator.reserve(small.graph()).is_ok());
  const Bytes old_size = allocator.buffer_size(0).value();
  TestGraph large = make_graph(1 << 20);  // 8 MiB
  ASSERT_TRUE(allocator.reserve(large.graph()).is_ok());
  const Bytes new_size = allocator.buffer_size(0).value();
  ASSERT_GT(new_size, old_size);
  std::printf("regrowth %llu -> %llu bytes: peak held %llu bytes\n", static_cast<unsigned long long>(old_size),
              static_cast<unsigned long long>(new_size), static_cast<unsigned long long>(type.peak_bytes()));
  EXPECT_EQ(type.peak_bytes(), new_size) << "old " << old_size << ", new " << new_size;
}

TEST(GraphAllocator, FailedFirstReserveLeavesNoPlan) {
  NullBufferType type;
  type.fail_allocation(1);
  GraphAllocator allocator({&type});
  TestGraph t = make_graph(16);
  EXPECT_EQ(allocator.reserve(t.graph()).code(), ErrorCode::kOutOfMemory);
  EXPECT_FALSE(allocator.plan().has_value());
  EXPECT_EQ(allocator.buffer_size(0).value(), 0u);
  EXPECT_EQ(type.live_buffers(), 0u);
  EXPECT_TRUE(allocator.needs_reserve(t.graph()));
}

TEST(GraphAllocator, BufferSize) {
  NullBufferType shared;
  NullBufferType other(8, kUnlimited, "other");
  GraphAllocator allocator({&shared, &other, &shared});
  TestGraph t = make_graph(16);
  // b (a pad: never in place) and c (in place of b) go to `other`; the rest to id 2.
  std::vector<BufferId> node_ids(t.graph().nodes.size(), 2);
  node_ids[static_cast<std::size_t>(t.builder.node_index(t.b))] = 1;
  ASSERT_TRUE(allocator.reserve(t.graph(), {node_ids, {}}).is_ok());
  EXPECT_EQ(allocator.buffer_count(), 3);
  EXPECT_GT(allocator.buffer_size(0).value(), 0u);  // id 2's tensors are counted here
  EXPECT_GT(allocator.buffer_size(1).value(), 0u);
  EXPECT_EQ(allocator.buffer_size(2).value(), 0u);
  EXPECT_EQ(allocator.buffer_size(0).value() + allocator.buffer_size(1).value(),
            shared.live_bytes() + other.live_bytes());
  EXPECT_TRUE(allocator.plan()->buffers[2].shared);
  for (BufferId bad : {-1, 3, 100}) {
    const auto size = allocator.buffer_size(bad);
    EXPECT_EQ(size.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(size.status().message().find("buffer id " + std::to_string(bad)), std::string::npos)
        << size.status().message();
    EXPECT_TRUE(allocator.chunks(bad).empty());
  }
}

// Buffers only grow: a smaller graph after a larger one keeps the larger buffers.
TEST(GraphAllocator, BuffersDoNotShrink) {
  NullBufferType type;
  GraphAllocator allocator({&type});
  ASSERT_TRUE(allocator.reserve(make_graph(64).graph()).is_ok());
  const Bytes large = allocator.buffer_size(0).value();
  const std::size_t allocations = type.allocations();
  ASSERT_TRUE(allocator.reserve(make_graph(16).graph()).is_ok());
  EXPECT_EQ(allocator.buffer_size(0).value(), large);
  EXPECT_EQ(type.allocations(), allocations);
}

}  // namespace
}  // namespace galloc
