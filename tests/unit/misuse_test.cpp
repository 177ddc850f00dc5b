// Misuse: a graph that changes between reserve and alloc while keeping every size (upstream
// ggml reuses its stale plan then: ggml_gallocr_needs_realloc compares sizes only, llama.cpp
// issue 28448, "identity change at fixed position"), and wrong ids and NULL handles in the C
// API. Every case must be detected and answered with a status, never with a stale placement.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "galloc/galloc.h"
#include "galloc/galloc.hpp"
#include "galloc/validator.hpp"

namespace galloc {
namespace {

// Five tensors of 256 bytes; `late_reader` picks what d reads besides c:
//
//   x (input) -> a = mul_mat(x) -> b = mul_mat(a) -> c = mul_mat(b) -> d = add(c, late_reader)
//
// late_reader = b: a dies once b is computed, and c takes a's memory.
// late_reader = a: the same ops, counts and sizes, but a lives until d, so c must not take a's
// memory: the plan made for the first graph is wrong for the second.
struct Chain {
  Graph graph;
  TensorId x, a, b, c, d;
};

Chain make_chain(bool d_reads_a) {
  Chain t;
  Graph& g = t.graph;
  t.x = g.add_leaf(g.new_tensor("x", DataType::F32, {64}));
  g[t.x].flags |= kFlagInput;
  t.a = g.add_node(g.new_op("a", Op::MulMat, DataType::F32, {64}, {t.x}));
  t.b = g.add_node(g.new_op("b", Op::MulMat, DataType::F32, {64}, {t.a}));
  t.c = g.add_node(g.new_op("c", Op::MulMat, DataType::F32, {64}, {t.b}));
  t.d = g.add_node(g.new_op("d", Op::Add, DataType::F32, {64}, {t.c, d_reads_a ? t.a : t.b}));
  g[t.d].flags |= kFlagOutput;
  return t;
}

// The placement `plan` gives the storage objects of `lifetimes` (each at the slot of its first
// tensor): what alloc would do if it trusted a plan made for another graph.
Placement placement_from_plan(const GraphProblem& lifetimes, const Plan& plan) {
  Placement p;
  for (const StorageObject& s : lifetimes.storages) {
    const TensorPlacement& slot = plan.tensors[static_cast<std::size_t>(s.first_tensor)];
    p.storage_address.push_back({slot.chunk, slot.offset});
  }
  p.chunk_sizes.resize(lifetimes.allocators.size());
  for (const BufferPlan& b : plan.buffers) {
    if (!b.shared) p.chunk_sizes[static_cast<std::size_t>(b.allocator)] = b.chunk_sizes;
  }
  return p;
}

TEST(Misuse, StalePlanWouldOverlapForAGraphWithTheSameSizes) {
  const Chain first = make_chain(false);
  const Chain second = make_chain(true);
  ASSERT_EQ(first.graph.tensors.size(), second.graph.tensors.size());
  for (std::size_t i = 0; i < first.graph.tensors.size(); ++i) {
    ASSERT_EQ(tensor_nbytes(first.graph.tensors[i]), tensor_nbytes(second.graph.tensors[i]));
    ASSERT_EQ(first.graph.tensors[i].op, second.graph.tensors[i].op);
  }
  NullBufferType type(64);
  const std::vector<const BufferType*> types{&type};
  PlacementOptions ggml;
  ggml.strategy = Strategy::kGgml;
  auto planned_first = plan_graph(first.graph, types, {}, ggml);
  auto planned_second = plan_graph(second.graph, types, {}, ggml);
  ASSERT_TRUE(planned_first.is_ok() && planned_second.is_ok());
  // The first plan puts c where a was; for the second graph that overlaps a while it lives.
  EXPECT_EQ(planned_first->plan.tensors[static_cast<std::size_t>(first.c)].offset,
            planned_first->plan.tensors[static_cast<std::size_t>(first.a)].offset);
  const auto issues = validate_placement(planned_second->lifetimes,
                                         placement_from_plan(planned_second->lifetimes, planned_first->plan));
  ASSERT_FALSE(issues.empty()) << "the test graphs no longer show the hazard";
  EXPECT_EQ(issues.front().kind, PlacementIssueKind::kOverlap);
}

TEST(Misuse, SameSizesOtherStructureIsDetectedAndReReservedWithOneBufferId) {
  NullBufferType type(64);
  GraphAllocator allocator({&type}, {.placement = {.strategy = Strategy::kGgml}});
  Chain first = make_chain(false);
  ASSERT_TRUE(allocator.reserve(first.graph).is_ok());
  const Bytes size_before = *allocator.buffer_size(0);

  Chain second = make_chain(true);
  EXPECT_TRUE(allocator.needs_reserve(second.graph));
  ASSERT_TRUE(allocator.alloc(second.graph).is_ok());
  // Re-reserved: the plan is the second graph's own, and c is not where a is.
  const Plan& plan = *allocator.plan();
  EXPECT_NE(plan.tensors[static_cast<std::size_t>(second.c)].offset,
            plan.tensors[static_cast<std::size_t>(second.a)].offset);
  EXPECT_NE(second.graph[second.c].data, second.graph[second.a].data);
  EXPECT_GT(*allocator.buffer_size(0), size_before);  // a and c live together now
  EXPECT_FALSE(allocator.needs_reserve(second.graph));
  // And back: the first graph fits the larger reservation, but it is another structure.
  EXPECT_TRUE(allocator.needs_reserve(first.graph));
}

TEST(Misuse, SameSizesOtherStructureFailsWithSeveralBufferIds) {
  NullBufferType a(64, kUnlimited, "A");
  NullBufferType b(64, kUnlimited, "B");
  GraphAllocator allocator({&a, &b}, {.placement = {.strategy = Strategy::kGgml}});
  Chain first = make_chain(false);
  const std::vector<BufferId> node_ids{0, 1, 0, 1};
  const std::vector<BufferId> leaf_ids{1};
  ASSERT_TRUE(allocator.reserve(first.graph, {node_ids, leaf_ids}).is_ok());
  ASSERT_TRUE(allocator.alloc(first.graph).is_ok());
  const Plan plan_before = *allocator.plan();
  const std::size_t allocations = a.allocations() + b.allocations();

  Chain second = make_chain(true);
  EXPECT_TRUE(allocator.needs_reserve(second.graph));
  const Status s = allocator.alloc(second.graph);
  EXPECT_EQ(s.code(), ErrorCode::kFailedPrecondition) << s.to_string();
  EXPECT_NE(s.message().find("reserve"), std::string::npos) << s.message();
  for (const Tensor& t : second.graph.tensors) EXPECT_EQ(t.data, nullptr) << t.name << " was placed anyway";
  EXPECT_EQ(allocator.plan()->tensors, plan_before.tensors);
  EXPECT_EQ(a.allocations() + b.allocations(), allocations);
  // The graph it was reserved for still allocs.
  EXPECT_TRUE(allocator.alloc(first.graph).is_ok());
}

// The MoE case of issue 28448: the router picks other experts, so the node at a fixed position
// is another tensor (another id) of the same op and size.
TEST(Misuse, AnotherTensorAtTheSamePositionIsDetected) {
  auto build = [](bool swap) {
    Graph g;
    const TensorId x = g.add_leaf(g.new_tensor("x", DataType::F32, {64}));
    g[x].flags |= kFlagInput;
    // Two expert outputs, created in one order, listed as nodes in the order the router gives.
    const TensorId e0 = g.add(g.new_op("expert0", Op::MulMat, DataType::F32, {64}, {x}));
    const TensorId e1 = g.add(g.new_op("expert1", Op::MulMat, DataType::F32, {64}, {x}));
    g.nodes.push_back(swap ? e1 : e0);
    g.nodes.push_back(swap ? e0 : e1);
    const TensorId first = swap ? e1 : e0;
    const TensorId scaled = g.add_node(g.new_op("scaled", Op::Scale, DataType::F32, {64}, {first}));
    const TensorId out = g.add_node(g.new_op("out", Op::Add, DataType::F32, {64}, {scaled, swap ? e0 : e1}));
    g[out].flags |= kFlagOutput;
    return g;
  };
  NullBufferType type(64);
  GraphAllocator allocator({&type});
  Graph routed = build(false);
  ASSERT_TRUE(allocator.reserve(routed).is_ok());
  EXPECT_FALSE(allocator.needs_reserve(build(false)));
  EXPECT_TRUE(allocator.needs_reserve(build(true)));
}

// ggml PR 13222's trigger: a tensor that had data at reserve has none at alloc.
TEST(Misuse, LosingExistingMemoryIsDetected) {
  NullBufferType type(64);
  GraphAllocator allocator({&type});
  Chain with_memory = make_chain(false);
  with_memory.graph[with_memory.x].has_memory = true;
  ASSERT_TRUE(allocator.reserve(with_memory.graph).is_ok());
  EXPECT_FALSE(allocator.plan()->tensors[static_cast<std::size_t>(with_memory.x)].planned());
  Chain without = make_chain(false);
  EXPECT_TRUE(allocator.needs_reserve(without.graph));
  ASSERT_TRUE(allocator.alloc(without.graph).is_ok());
  EXPECT_TRUE(allocator.plan()->tensors[static_cast<std::size_t>(without.x)].planned());
  EXPECT_NE(without.graph[without.x].data, nullptr);
}

TEST(Misuse, WrongIdsAndBufferTypesAreErrors) {
  NullBufferType type(64);
  NullBufferType odd(3);  // not a power of two
  Chain t = make_chain(false);
  {
    GraphAllocator allocator({&type, &type});
    EXPECT_EQ(allocator.reserve(t.graph, {std::vector<BufferId>{0, 1, 2, 0}, {}}).code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(allocator.reserve(t.graph, {std::vector<BufferId>{0, -1, 0, 0}, {}}).code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(allocator.reserve(t.graph, {std::vector<BufferId>{0, 1}, {}}).code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(allocator.reserve(t.graph, {{}, std::vector<BufferId>{5}}).code(), ErrorCode::kInvalidArgument);
    EXPECT_FALSE(allocator.plan().has_value());
    EXPECT_EQ(allocator.buffer_size(-1).status().code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(allocator.buffer_size(2).status().code(), ErrorCode::kInvalidArgument);
    EXPECT_TRUE(allocator.chunks(-1).empty());
    EXPECT_TRUE(allocator.chunks(7).empty());
    EXPECT_EQ(type.allocations(), 0u);
  }
  {
    GraphAllocator allocator({&odd});
    EXPECT_EQ(allocator.reserve(t.graph).code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(allocator.measure(t.graph).status().code(), ErrorCode::kInvalidArgument);
  }
  {
    GraphAllocator allocator({nullptr});
    EXPECT_EQ(allocator.reserve(t.graph).code(), ErrorCode::kInvalidArgument);
  }
  {
    GraphAllocator allocator(std::vector<const BufferType*>{});
    EXPECT_EQ(allocator.reserve(t.graph).code(), ErrorCode::kInvalidArgument);
    Graph g = t.graph;
    EXPECT_NE(allocator.alloc(g).code(), ErrorCode::kOk);
  }
  {
    // A graph that stops being valid after the reserve: a source out of range.
    GraphAllocator allocator({&type});
    ASSERT_TRUE(allocator.reserve(t.graph).is_ok());
    Graph broken = t.graph;
    broken[t.d].src[1] = 99;
    EXPECT_TRUE(allocator.needs_reserve(broken));
    EXPECT_EQ(allocator.alloc(broken).code(), ErrorCode::kInvalidArgument);
    EXPECT_TRUE(allocator.alloc(t.graph).is_ok());
  }
}

// ---------------------------------------------------------------------------------------------
// The C API

class CApiMisuse : public ::testing::Test {
 protected:
  void SetUp() override {
    type_ = galloc_buffer_type_new_null(64, 0, 0);
    ASSERT_NE(type_, nullptr);
    graph_ = galloc_graph_new();
    galloc_tensor_desc d = galloc_tensor_desc_default();
    d.ne[0] = 64;
    d.flags = GALLOC_FLAG_INPUT;
    ASSERT_EQ(galloc_graph_add_leaf(graph_, &d, &x_), GALLOC_OK);
    d = galloc_tensor_desc_default();
    d.ne[0] = 64;
    d.op = "SCALE";
    d.src[0] = x_;
    d.flags = GALLOC_FLAG_OUTPUT;
    ASSERT_EQ(galloc_graph_add_node(graph_, &d, &y_), GALLOC_OK);
    ASSERT_EQ(galloc_allocator_new(&type_, 1, "ggml", &allocator_), GALLOC_OK);
  }
  void TearDown() override {
    galloc_allocator_free(allocator_);
    galloc_graph_free(graph_);
    galloc_buffer_type_free(type_);
  }
  static void expect_error(galloc_status status, galloc_status expected, const char* what) {
    EXPECT_EQ(status, expected) << what;
    EXPECT_STRNE(galloc_last_error(), "") << what << ": no message";
  }

  galloc_buffer_type* type_ = nullptr;
  galloc_graph* graph_ = nullptr;
  galloc_allocator* allocator_ = nullptr;
  int32_t x_ = -1, y_ = -1;
};

TEST_F(CApiMisuse, NullHandlesAreInvalidArguments) {
  const galloc_tensor_desc d = galloc_tensor_desc_default();
  int32_t id = 0, n = 0;
  size_t size = 0;
  void* data = nullptr;
  const galloc_status bad = GALLOC_ERROR_INVALID_ARGUMENT;
  expect_error(galloc_graph_add_node(nullptr, &d, &id), bad, "add_node(NULL graph)");
  expect_error(galloc_graph_add_leaf(graph_, nullptr, &id), bad, "add_leaf(NULL desc)");
  expect_error(galloc_graph_add_tensor(nullptr, nullptr, nullptr), bad, "add_tensor(NULL, NULL)");
  expect_error(galloc_graph_counts(nullptr, &n, &n, &n), bad, "counts(NULL)");
  expect_error(galloc_graph_tensor_data(nullptr, 0, &data), bad, "tensor_data(NULL graph)");
  expect_error(galloc_graph_tensor_data(graph_, 0, nullptr), bad, "tensor_data(NULL out)");
  expect_error(galloc_allocator_reserve(nullptr, graph_, nullptr, nullptr), bad, "reserve(NULL allocator)");
  expect_error(galloc_allocator_reserve(allocator_, nullptr, nullptr, nullptr), bad, "reserve(NULL graph)");
  expect_error(galloc_allocator_measure(allocator_, graph_, nullptr, nullptr, nullptr), bad, "measure(NULL sizes)");
  expect_error(galloc_allocator_measure(nullptr, graph_, nullptr, nullptr, &size), bad, "measure(NULL allocator)");
  expect_error(galloc_allocator_alloc(nullptr, graph_), bad, "alloc(NULL allocator)");
  expect_error(galloc_allocator_alloc(allocator_, nullptr), bad, "alloc(NULL graph)");
  expect_error(galloc_allocator_buffer_size(nullptr, 0, &size), bad, "buffer_size(NULL allocator)");
  expect_error(galloc_allocator_buffer_size(allocator_, 0, nullptr), bad, "buffer_size(NULL out)");
  expect_error(galloc_allocator_tensor_placement(nullptr, 0, nullptr, nullptr, nullptr), bad, "tensor_placement(NULL)");
  galloc_allocator* a = reinterpret_cast<galloc_allocator*>(0x1);
  expect_error(galloc_allocator_new(nullptr, 1, nullptr, &a), bad, "allocator_new(NULL types)");
  EXPECT_EQ(a, nullptr) << "a failed allocator_new must clear its out-pointer";
  galloc_buffer_type* null_type = nullptr;
  expect_error(galloc_allocator_new(&null_type, 1, nullptr, &a), bad, "allocator_new({NULL})");
  expect_error(galloc_allocator_new(&type_, 1, nullptr, nullptr), bad, "allocator_new(NULL out)");
  // Freeing NULL is a no-op, as free() is.
  galloc_graph_free(nullptr);
  galloc_allocator_free(nullptr);
  galloc_buffer_type_free(nullptr);
}

TEST_F(CApiMisuse, WrongIdsAreErrors) {
  size_t size = 1;
  void* data = nullptr;
  const galloc_status bad = GALLOC_ERROR_INVALID_ARGUMENT;
  expect_error(galloc_graph_tensor_data(graph_, -1, &data), bad, "tensor_data(-1)");
  expect_error(galloc_graph_tensor_data(graph_, 2, &data), bad, "tensor_data(n)");
  expect_error(galloc_allocator_tensor_placement(allocator_, 0, nullptr, nullptr, nullptr),
               GALLOC_ERROR_FAILED_PRECONDITION, "tensor_placement before reserve");
  ASSERT_EQ(galloc_allocator_reserve(allocator_, graph_, nullptr, nullptr), GALLOC_OK);
  expect_error(galloc_allocator_tensor_placement(allocator_, 2, nullptr, nullptr, nullptr), bad, "tensor_placement(n)");
  expect_error(galloc_allocator_tensor_placement(allocator_, -5, nullptr, nullptr, nullptr), bad,
               "tensor_placement(-5)");
  expect_error(galloc_allocator_buffer_size(allocator_, 1, &size), bad, "buffer_size(1 of 1)");
  expect_error(galloc_allocator_buffer_size(allocator_, -1, &size), bad, "buffer_size(-1)");
  const int32_t node_ids[] = {3};
  expect_error(galloc_allocator_reserve(allocator_, graph_, node_ids, nullptr), bad, "reserve(node id 3 of 1)");
  const int32_t leaf_ids[] = {-1};
  expect_error(galloc_allocator_reserve(allocator_, graph_, nullptr, leaf_ids), bad, "reserve(leaf id -1)");
  // A node whose source is not in the graph is accepted by add (ids are checked at planning)
  // and rejected by reserve, measure and alloc.
  galloc_tensor_desc d = galloc_tensor_desc_default();
  d.op = "ADD";
  d.src[0] = y_;
  d.src[1] = 1234;
  int32_t z = -1;
  ASSERT_EQ(galloc_graph_add_node(graph_, &d, &z), GALLOC_OK);
  expect_error(galloc_allocator_reserve(allocator_, graph_, nullptr, nullptr), bad, "reserve(bad source)");
  expect_error(galloc_allocator_measure(allocator_, graph_, nullptr, nullptr, &size), bad, "measure(bad source)");
  expect_error(galloc_allocator_alloc(allocator_, graph_), bad, "alloc(bad source)");
}

TEST_F(CApiMisuse, BadNamesAndCountsAreErrors) {
  galloc_tensor_desc d = galloc_tensor_desc_default();
  int32_t id = -1;
  const galloc_status bad = GALLOC_ERROR_INVALID_ARGUMENT;
  d.type = "f33";
  expect_error(galloc_graph_add_node(graph_, &d, &id), bad, "unknown type");
  d.type = nullptr;
  expect_error(galloc_graph_add_node(graph_, &d, &id), bad, "NULL type");
  d = galloc_tensor_desc_default();
  d.op = "ADDD";
  expect_error(galloc_graph_add_node(graph_, &d, &id), bad, "unknown op");
  d.op = nullptr;
  expect_error(galloc_graph_add_node(graph_, &d, &id), bad, "NULL op");
  int32_t n_tensors = 0;
  ASSERT_EQ(galloc_graph_counts(graph_, &n_tensors, nullptr, nullptr), GALLOC_OK);
  EXPECT_EQ(n_tensors, 2) << "a rejected tensor was added";

  galloc_allocator* a = nullptr;
  expect_error(galloc_allocator_new(&type_, 0, nullptr, &a), bad, "n_types 0");
  expect_error(galloc_allocator_new(&type_, -3, nullptr, &a), bad, "n_types -3");
  expect_error(galloc_allocator_new(&type_, 1, "fastest", &a), bad, "unknown strategy");
  EXPECT_EQ(a, nullptr);
  EXPECT_EQ(galloc_buffer_type_new_cpu(3, 0), nullptr);
  EXPECT_STRNE(galloc_last_error(), "");
  EXPECT_EQ(galloc_buffer_type_new_null(0, 0, 0), nullptr);
  EXPECT_STREQ(galloc_status_name(GALLOC_OK), "ok");
  EXPECT_STREQ(galloc_status_name(static_cast<galloc_status>(7)), "unknown status");
}

// The stale-plan case through the C API, with two buffer ids: alloc refuses.
TEST_F(CApiMisuse, ChangedStructureWithSeveralBufferIdsNeedsAReserve) {
  galloc_allocator* two = nullptr;
  galloc_buffer_type* types[] = {type_, type_};
  ASSERT_EQ(galloc_allocator_new(types, 2, "ggml", &two), GALLOC_OK);
  const int32_t node_ids[] = {1};
  const int32_t leaf_ids[] = {0};
  ASSERT_EQ(galloc_allocator_reserve(two, graph_, node_ids, leaf_ids), GALLOC_OK);
  ASSERT_EQ(galloc_allocator_alloc(two, graph_), GALLOC_OK);
  // The same sizes: y = scale(x) becomes y2 = scale(x) listed after a new node of the same
  // size, so the node at position 0 is another tensor.
  galloc_graph* changed = galloc_graph_new();
  galloc_tensor_desc d = galloc_tensor_desc_default();
  d.ne[0] = 64;
  d.flags = GALLOC_FLAG_INPUT;
  int32_t x = -1, y = -1;
  ASSERT_EQ(galloc_graph_add_leaf(changed, &d, &x), GALLOC_OK);
  d.flags = 0;
  int32_t unused = -1;
  ASSERT_EQ(galloc_graph_add_tensor(changed, &d, &unused), GALLOC_OK);
  d.op = "SCALE";
  d.src[0] = x;
  d.flags = GALLOC_FLAG_OUTPUT;
  ASSERT_EQ(galloc_graph_add_node(changed, &d, &y), GALLOC_OK);
  expect_error(galloc_allocator_alloc(two, changed), GALLOC_ERROR_FAILED_PRECONDITION, "alloc of a changed graph");
  void* data = reinterpret_cast<void*>(0x1);
  ASSERT_EQ(galloc_graph_tensor_data(changed, y, &data), GALLOC_OK);
  EXPECT_EQ(data, nullptr);
  EXPECT_EQ(galloc_allocator_alloc(two, graph_), GALLOC_OK);
  galloc_graph_free(changed);
  galloc_allocator_free(two);
}

// A moved-from allocator holds nothing: every call says so instead of crashing.
TEST(Misuse, MovedFromAllocatorReportsIt) {
  CpuBufferType cpu;
  GraphAllocator first({&cpu});
  Chain t = make_chain(false);
  ASSERT_TRUE(first.reserve(t.graph).is_ok());
  GraphAllocator second = std::move(first);
  // NOLINTBEGIN(bugprone-use-after-move): what this test is about
  const Status reserved = first.reserve(t.graph);
  EXPECT_EQ(reserved.code(), ErrorCode::kFailedPrecondition);
  EXPECT_NE(reserved.message().find("moved from"), std::string::npos) << reserved.message();
  EXPECT_EQ(first.alloc(t.graph).code(), ErrorCode::kFailedPrecondition);
  EXPECT_FALSE(first.measure(t.graph).is_ok());
  EXPECT_FALSE(first.buffer_size(0).is_ok());
  EXPECT_EQ(first.buffer_count(), 0);
  EXPECT_FALSE(first.plan().has_value());
  EXPECT_TRUE(first.chunks(0).empty());
  EXPECT_TRUE(first.needs_reserve(t.graph));
  first.reset_buffers();
  EXPECT_EQ(first.check_allocation().code(), ErrorCode::kFailedPrecondition);
  // NOLINTEND(bugprone-use-after-move)
  EXPECT_TRUE(second.alloc(t.graph).is_ok());
}

}  // namespace
}  // namespace galloc
