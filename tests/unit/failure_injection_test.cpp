// Failure injection: the buffer type fails its n-th allocation, for every n that the operation
// makes, in reserve (several buffer types, shared ids, chunks), in alloc's automatic
// re-reserve, in allocate_context_tensors and through the C API. Each must return the error,
// release everything it allocated (NullBufferType counts live buffers and bytes; the ASan
// build of `make test` also runs LeakSanitizer), and leave the allocator as it was: same
// buffer sizes, same plan, same chunks, and an alloc of the previously reserved graph works.
#include <gtest/gtest.h>

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "galloc/galloc.h"
#include "galloc/galloc.hpp"
#include "support/ggml_like_builder.hpp"
#include "support/strategy_param.hpp"

namespace galloc {
namespace {

using testing::GgmlLikeBuilder;

// Failures injected by this file, printed once at the end (docs/RELIABILITY.md quotes it).
int& injected() {
  static int count = 0;
  return count;
}
struct PrintInjected : ::testing::Environment {
  void TearDown() override {
    if (injected() > 0) std::printf("[failure injection] %d allocation failures injected\n", injected());
  }
};
[[maybe_unused]] const auto* const kPrintInjected = ::testing::AddGlobalTestEnvironment(new PrintInjected);

// The same structure for every n; sizes grow with n:
//
//   x (input, n) --> a = mul(x, w) --> b = pad(a, 8) --> c = scale(b) --> d = add(c, b) -+
//   w (weights) --/                                                                       |
//   e = concat(d, a)  (output) <----------------------------------------------------------+
//   f = mean(e) (output), g = scale(e), h = concat(g, c)  (output)
struct TestGraph {
  Graph graph;
  std::vector<BufferId> node_ids;  // cycling 0, 1, 2
  std::vector<BufferId> leaf_ids;
  [[nodiscard]] BufferAssignment assignment() const { return {node_ids, leaf_ids}; }
};

TestGraph make_graph(std::int64_t n, int n_ids) {
  GgmlLikeBuilder g;
  const TensorId w = g.new_tensor_1d(DataType::F32, n);
  g[w].has_memory = true;
  const TensorId x = g.input_1d(n);
  const TensorId a = g.mul(x, w);
  const TensorId b = g.pad(a, 8);
  const TensorId c = g.scale(b);
  const TensorId d = g.add(c, b);
  const TensorId e = g.concat(d, g.pad(a, 8), 0);
  g.expand_output(e);
  g.expand_output(g.mean(e));
  g.expand_output(g.concat(g.scale(e), c, 0));
  TestGraph t;
  t.graph = g.graph();
  if (n_ids > 1) {
    for (std::size_t i = 0; i < t.graph.nodes.size(); ++i) t.node_ids.push_back(static_cast<BufferId>(i % n_ids));
    for (std::size_t i = 0; i < t.graph.leafs.size(); ++i) t.leaf_ids.push_back(static_cast<BufferId>(i % n_ids));
  }
  return t;
}

// Two buffer types with small max sizes (so every buffer has several chunks), three buffer ids
// of which 0 and 2 share type A.
struct Types {
  NullBufferType a{16, 512, "A"};
  NullBufferType b{64, 300, "B"};
  Types() { b.set_alloc_padding(24); }
  [[nodiscard]] std::vector<const BufferType*> per_id() const { return {&a, &b, &a}; }
  [[nodiscard]] std::vector<NullBufferType*> all() { return {&a, &b}; }
};

// What must not change when an operation fails.
struct Snapshot {
  std::vector<Bytes> sizes;
  std::vector<std::vector<Bytes>> chunk_sizes;  // per buffer id
  std::optional<Plan> plan;
  std::vector<std::size_t> live_buffers;
  std::vector<Bytes> live_bytes;

  static Snapshot of(const GraphAllocator& allocator, const std::vector<NullBufferType*>& types) {
    Snapshot s;
    for (BufferId id = 0; id < allocator.buffer_count(); ++id) {
      s.sizes.push_back(*allocator.buffer_size(id));
      std::vector<Bytes> chunk_sizes;
      for (Buffer* chunk : allocator.chunks(id)) chunk_sizes.push_back(chunk->size());
      s.chunk_sizes.push_back(std::move(chunk_sizes));
    }
    s.plan = allocator.plan();
    for (const NullBufferType* t : types) {
      s.live_buffers.push_back(t->live_buffers());
      s.live_bytes.push_back(t->live_bytes());
    }
    return s;
  }
};

void expect_same(const Snapshot& before, const Snapshot& after, const std::string& context) {
  EXPECT_EQ(before.sizes, after.sizes) << context;
  // A failed growth frees the old chunks first and allocates their sizes again: other buffer
  // objects, the same sizes.
  EXPECT_EQ(before.chunk_sizes, after.chunk_sizes) << context << ": the backend buffers changed";
  EXPECT_EQ(before.live_buffers, after.live_buffers) << context << ": buffers leaked or freed";
  EXPECT_EQ(before.live_bytes, after.live_bytes) << context;
  ASSERT_EQ(before.plan.has_value(), after.plan.has_value()) << context;
  if (before.plan) {
    EXPECT_EQ(before.plan->tensors, after.plan->tensors) << context << ": the plan changed";
    ASSERT_EQ(before.plan->buffers.size(), after.plan->buffers.size()) << context;
    for (std::size_t b = 0; b < before.plan->buffers.size(); ++b) {
      EXPECT_EQ(before.plan->buffers[b].chunk_sizes, after.plan->buffers[b].chunk_sizes) << context;
    }
  }
}

// alloc of `graph` works and puts every planned tensor at its chunk's base plus its offset.
void expect_alloc_works(GraphAllocator& allocator, Graph graph, const std::string& context) {
  ASSERT_FALSE(allocator.needs_reserve(graph)) << context;
  const Status s = allocator.alloc(graph);
  ASSERT_TRUE(s.is_ok()) << context << ": " << s.to_string();
  const Plan& plan = *allocator.plan();
  for (std::size_t t = 0; t < graph.tensors.size(); ++t) {
    const TensorPlacement& slot = plan.tensors[t];
    if (!slot.planned() || graph.tensors[t].is_view() || graph.tensors[t].has_memory) continue;
    const auto chunks = allocator.chunks(slot.buffer);
    ASSERT_LT(static_cast<std::size_t>(slot.chunk), chunks.size()) << context;
    EXPECT_EQ(graph.tensors[t].data,
              static_cast<void*>(chunks[static_cast<std::size_t>(slot.chunk)]->base() + slot.offset))
        << context << ": tensor " << t;
  }
}

GraphAllocatorOptions options_for(Strategy strategy) {
  GraphAllocatorOptions options;
  options.placement.strategy = strategy;
  options.placement.exact.time_limit_seconds = 0.01;
  return options;
}

class FailureInjection : public ::testing::TestWithParam<Strategy> {};

// The first reserve: nothing existed before, so nothing may exist after.
TEST_P(FailureInjection, FirstReserveFailsCleanlyAtEveryAllocation) {
  const TestGraph g = make_graph(40, 3);
  std::vector<std::size_t> needed;
  {
    Types types;
    GraphAllocator allocator(types.per_id(), options_for(GetParam()));
    ASSERT_TRUE(allocator.reserve(g.graph, g.assignment()).is_ok());
    for (NullBufferType* t : types.all()) needed.push_back(t->allocations());
  }
  ASSERT_GE(needed[0], 2u) << "the test wants several chunks per buffer";
  ASSERT_GE(needed[1], 2u);
  for (std::size_t which = 0; which < needed.size(); ++which) {
    for (std::size_t n = 1; n <= needed[which]; ++n) {
      const std::string context = "type " + std::to_string(which) + ", allocation " + std::to_string(n);
      Types types;
      GraphAllocator allocator(types.per_id(), options_for(GetParam()));
      const Snapshot before = Snapshot::of(allocator, types.all());
      types.all()[which]->fail_allocation(n);
      const Status s = allocator.reserve(g.graph, g.assignment());
      injected() += 1;
      EXPECT_EQ(s.code(), ErrorCode::kOutOfMemory) << context << ": " << s.to_string();
      expect_same(before, Snapshot::of(allocator, types.all()), context);
      EXPECT_TRUE(allocator.needs_reserve(g.graph)) << context;
      // And it works once the device does.
      types.all()[which]->fail_allocation(0);
      ASSERT_TRUE(allocator.reserve(g.graph, g.assignment()).is_ok()) << context;
      expect_alloc_works(allocator, g.graph, context);
    }
  }
}

// A reserve that must grow buffers that exist: the old buffers and plan survive the failure.
TEST_P(FailureInjection, GrowingReserveKeepsThePreviousBuffersAtEveryAllocation) {
  const TestGraph small = make_graph(16, 3);
  const TestGraph large = make_graph(64, 3);
  std::vector<std::size_t> needed;
  {
    Types types;
    GraphAllocator allocator(types.per_id(), options_for(GetParam()));
    ASSERT_TRUE(allocator.reserve(small.graph, small.assignment()).is_ok());
    std::vector<std::size_t> start;
    for (NullBufferType* t : types.all()) start.push_back(t->allocations());
    ASSERT_TRUE(allocator.reserve(large.graph, large.assignment()).is_ok());
    for (std::size_t i = 0; i < start.size(); ++i) needed.push_back(types.all()[i]->allocations() - start[i]);
  }
  ASSERT_GE(needed[0] + needed[1], 2u);
  for (std::size_t which = 0; which < needed.size(); ++which) {
    for (std::size_t n = 1; n <= needed[which]; ++n) {
      const std::string context =
          "type " + std::to_string(which) + ", allocation " + std::to_string(n) + " of the growth";
      Types types;
      GraphAllocator allocator(types.per_id(), options_for(GetParam()));
      ASSERT_TRUE(allocator.reserve(small.graph, small.assignment()).is_ok());
      const Snapshot before = Snapshot::of(allocator, types.all());
      NullBufferType* failing = types.all()[which];
      failing->fail_allocation(failing->allocations() + n);
      const Status s = allocator.reserve(large.graph, large.assignment());
      injected() += 1;
      EXPECT_EQ(s.code(), ErrorCode::kOutOfMemory) << context << ": " << s.to_string();
      EXPECT_NE(s.message().find("previous plan is kept"), std::string::npos) << s.message();
      expect_same(before, Snapshot::of(allocator, types.all()), context);
      expect_alloc_works(allocator, small.graph, context);
      failing->fail_allocation(0);
      ASSERT_TRUE(allocator.reserve(large.graph, large.assignment()).is_ok()) << context;
      expect_alloc_works(allocator, large.graph, context);
    }
  }
}

// alloc re-reserves by itself with one buffer id: a failure there is alloc's error, and the
// reservation it had stays usable.
TEST_P(FailureInjection, AllocsAutomaticReReserveFailsCleanlyAtEveryAllocation) {
  const TestGraph small = make_graph(16, 1);
  const TestGraph large = make_graph(64, 1);
  std::size_t needed = 0;
  {
    NullBufferType type(32, 300);
    GraphAllocator allocator({&type}, options_for(GetParam()));
    Graph g = small.graph;
    ASSERT_TRUE(allocator.alloc(g).is_ok());
    const std::size_t start = type.allocations();
    Graph l = large.graph;
    ASSERT_TRUE(allocator.alloc(l).is_ok());
    needed = type.allocations() - start;
  }
  ASSERT_GE(needed, 2u);
  for (std::size_t n = 1; n <= needed; ++n) {
    const std::string context = "allocation " + std::to_string(n) + " of alloc's re-reserve";
    NullBufferType type(32, 300);
    GraphAllocator allocator({&type}, options_for(GetParam()));
    Graph g = small.graph;
    ASSERT_TRUE(allocator.alloc(g).is_ok());
    const Snapshot before = Snapshot::of(allocator, {&type});
    type.fail_allocation(type.allocations() + n);
    Graph l = large.graph;
    const Status s = allocator.alloc(l);
    injected() += 1;
    EXPECT_EQ(s.code(), ErrorCode::kOutOfMemory) << context << ": " << s.to_string();
    expect_same(before, Snapshot::of(allocator, {&type}), context);
    expect_alloc_works(allocator, small.graph, context);
    type.fail_allocation(0);
    EXPECT_TRUE(allocator.alloc(l).is_ok()) << context;
  }
}

// measure plans only: it never allocates, so it cannot fail for a failing device.
TEST_P(FailureInjection, MeasureNeverAllocates) {
  const TestGraph g = make_graph(40, 3);
  Types types;
  types.a.fail_allocation(1);
  types.b.fail_allocation(1);
  GraphAllocator allocator(types.per_id(), options_for(GetParam()));
  auto sizes = allocator.measure(g.graph, g.assignment());
  ASSERT_TRUE(sizes.is_ok()) << sizes.status().to_string();
  EXPECT_EQ(types.a.allocations() + types.b.allocations(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Strategies, FailureInjection, ::testing::ValuesIn(all_strategies()),
                         testing::strategy_param_name);

// allocate_context_tensors splits the tensors into buffers of at most the max size; a failure
// at any of them frees the ones before, and leaves every tensor's data as it was.
TEST(FailureInjectionContext, AllocateContextTensorsFailsCleanlyAtEveryBuffer) {
  Graph graph;
  std::vector<TensorId> ids;
  for (int i = 0; i < 12; ++i) {
    ids.push_back(graph.add(graph.new_tensor("t" + std::to_string(i), DataType::F32, {10 + 7 * i})));
  }
  ids.push_back(graph.add(graph.new_view("v", Op::View, ids[3], 4, {2})));
  std::size_t needed = 0;
  {
    NullBufferType type(32, 200);
    Graph copy = graph;
    auto allocation = allocate_context_tensors(copy, ids, type);
    ASSERT_TRUE(allocation.is_ok());
    needed = type.allocations();
  }
  ASSERT_GE(needed, 3u);
  for (std::size_t n = 1; n <= needed; ++n) {
    NullBufferType type(32, 200);
    type.fail_allocation(n);
    Graph copy = graph;
    auto allocation = allocate_context_tensors(copy, ids, type);
    injected() += 1;
    ASSERT_FALSE(allocation.is_ok()) << "buffer " << n;
    EXPECT_EQ(allocation.status().code(), ErrorCode::kOutOfMemory);
    EXPECT_EQ(type.live_buffers(), 0u) << "buffer " << n;
    EXPECT_EQ(type.live_bytes(), 0u) << "buffer " << n;
    for (const Tensor& t : copy.tensors) EXPECT_EQ(t.data, nullptr) << "buffer " << n << ": " << t.name;
    type.fail_allocation(0);
    auto again = allocate_context_tensors(copy, ids, type);
    ASSERT_TRUE(again.is_ok()) << "buffer " << n;
    EXPECT_EQ(again->buffers.size(), needed);
  }
}

// The same through the C API: galloc_buffer_type_new_null's fail_nth.
TEST(FailureInjectionCApi, ReserveReportsOutOfMemoryAndKeepsTheBuffer) {
  auto build = [](galloc_graph* g, int64_t n) {
    galloc_tensor_desc d = galloc_tensor_desc_default();
    d.ne[0] = n;
    d.flags = GALLOC_FLAG_INPUT;
    int32_t x = -1;
    ASSERT_EQ(galloc_graph_add_leaf(g, &d, &x), GALLOC_OK);
    int32_t prev = x;
    for (int i = 0; i < 6; ++i) {
      d = galloc_tensor_desc_default();
      d.ne[0] = n + i;
      d.op = i % 2 ? "CONT" : "MUL_MAT";
      d.src[0] = prev;
      d.src[1] = x;
      d.flags = i == 5 ? GALLOC_FLAG_OUTPUT : 0;
      ASSERT_EQ(galloc_graph_add_node(g, &d, &prev), GALLOC_OK);
    }
  };
  // How many allocations the growth from the small graph to the large one makes.
  std::size_t needed = 0;
  for (std::size_t fail = 1; fail < 64 && needed == 0; ++fail) {
    galloc_buffer_type* type = galloc_buffer_type_new_null(16, 64, fail);
    galloc_allocator* a = nullptr;
    ASSERT_EQ(galloc_allocator_new(&type, 1, "ggml", &a), GALLOC_OK);
    galloc_graph* small = galloc_graph_new();
    galloc_graph* large = galloc_graph_new();
    build(small, 4);
    build(large, 40);
    const galloc_status first = galloc_allocator_reserve(a, small, nullptr, nullptr);
    if (first == GALLOC_OK) {
      size_t before = 0, after = 0;
      ASSERT_EQ(galloc_allocator_buffer_size(a, 0, &before), GALLOC_OK);
      const galloc_status grown = galloc_allocator_reserve(a, large, nullptr, nullptr);
      ASSERT_EQ(galloc_allocator_buffer_size(a, 0, &after), GALLOC_OK);
      if (grown == GALLOC_OK) {
        needed = fail;  // no failure hit the growth: every allocation of it came before `fail`
      } else {
        injected() += 1;
        EXPECT_EQ(grown, GALLOC_ERROR_OUT_OF_MEMORY);
        EXPECT_NE(std::string(galloc_last_error()).find("injected"), std::string::npos) << galloc_last_error();
        EXPECT_EQ(before, after) << "fail_nth " << fail;
        EXPECT_EQ(galloc_allocator_alloc(a, small), GALLOC_OK) << "fail_nth " << fail;
      }
    } else {
      injected() += 1;
      EXPECT_EQ(first, GALLOC_ERROR_OUT_OF_MEMORY);
      size_t size = 1;
      EXPECT_EQ(galloc_allocator_buffer_size(a, 0, &size), GALLOC_OK);
      EXPECT_EQ(size, 0u);
    }
    galloc_allocator_free(a);
    galloc_graph_free(small);
    galloc_graph_free(large);
    galloc_buffer_type_free(type);
  }
  EXPECT_GT(needed, 3u) << "the sweep reached an allocation count that no reserve made";
}

}  // namespace
}  // namespace galloc
