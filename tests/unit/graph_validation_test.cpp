// validate_graph and the argument checks of analyze_lifetimes: every error is an
// kInvalidArgument whose message names what is wrong (the tensor by id and name, the index).
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "galloc/buffer.hpp"
#include "galloc/graph.hpp"
#include "galloc/lifetimes.hpp"

namespace galloc {
namespace {

// A small valid graph, edited by each case to break one rule:
//
//   a (leaf, 16 f32) --+--> b = scale(a) --> c = add(b, a) --> d = view_1d(c, 4, 16)
//                      +---------------------^
struct SmallGraph {
  Graph graph;
  TensorId a, b, c, d;
  SmallGraph() {
    a = graph.add_leaf(graph.new_tensor("a", DataType::F32, {16}));
    b = graph.add_node(graph.new_op("b", Op::Scale, DataType::F32, {16}, {a}));
    c = graph.add_node(graph.new_op("c", Op::Add, DataType::F32, {16}, {b, a}));
    d = graph.add_node(graph.new_view("d", Op::View, c, 16, {4}));
    graph[d].flags |= kFlagOutput;
  }
};

::testing::AssertionResult fails_with(const Status& status, const std::vector<std::string>& parts) {
  if (status.is_ok()) return ::testing::AssertionFailure() << "the graph passed";
  if (status.code() != ErrorCode::kInvalidArgument) {
    return ::testing::AssertionFailure() << "code is not invalid argument: " << status.to_string();
  }
  for (const std::string& part : parts) {
    if (status.message().find(part) == std::string::npos) {
      return ::testing::AssertionFailure() << "'" << status.message() << "' does not mention '" << part << "'";
    }
  }
  return ::testing::AssertionSuccess() << status.message();
}

TEST(ValidateGraph, AValidGraphPasses) {
  SmallGraph s;
  const Status status = validate_graph(s.graph);
  EXPECT_TRUE(status.is_ok()) << status.to_string();
  EXPECT_TRUE(validate_graph(Graph{}).is_ok());
}

TEST(ValidateGraph, DescribeTensorNamesIdAndName) {
  SmallGraph s;
  EXPECT_EQ(describe_tensor(s.graph, s.c), "tensor 2 (c)");
  s.graph[s.c].name.clear();
  EXPECT_EQ(describe_tensor(s.graph, s.c), "tensor 2");
  EXPECT_EQ(describe_tensor(s.graph, 99), "tensor 99");
}

TEST(ValidateGraph, SourceNotInTheGraph) {
  SmallGraph s;
  s.graph[s.c].src[1] = 99;
  EXPECT_TRUE(fails_with(validate_graph(s.graph), {"tensor 2 (c)", "source 1", "tensor 99", "not in the graph"}));
}

TEST(ValidateGraph, NegativeSourceIdOtherThanNone) {
  SmallGraph s;
  s.graph[s.b].src[0] = -7;
  EXPECT_TRUE(fails_with(validate_graph(s.graph), {"tensor 1 (b)", "source 0", "-7"}));
}

// b reads c, which is computed after it: a cycle b -> c -> b, or nodes out of order.
TEST(ValidateGraph, SourceComputedLater) {
  SmallGraph s;
  s.graph[s.b].src[1] = s.c;
  EXPECT_TRUE(
      fails_with(validate_graph(s.graph), {"tensor 1 (b)", "node 0", "tensor 2 (c)", "computed later", "node 1"}));
}

TEST(ValidateGraph, NodesListedOutOfOrder) {
  SmallGraph s;
  std::swap(s.graph.nodes[0], s.graph.nodes[1]);  // c before b
  EXPECT_TRUE(fails_with(validate_graph(s.graph), {"tensor 2 (c)", "tensor 1 (b)", "computed later"}));
}

TEST(ValidateGraph, SelfSource) {
  SmallGraph s;
  s.graph[s.c].src[2] = s.c;
  EXPECT_TRUE(fails_with(validate_graph(s.graph), {"tensor 2 (c)", "source 2", "itself"}));
}

TEST(ValidateGraph, ViewPastItsSource) {
  SmallGraph s;
  s.graph[s.d].view_offs = 56;  // 56 + 16 bytes > 64
  EXPECT_TRUE(fails_with(validate_graph(s.graph), {"tensor 3 (d)", "56", "tensor 2 (c)", "64 bytes"}));
}

TEST(ValidateGraph, ViewExactlyToTheEndOfItsSourcePasses) {
  SmallGraph s;
  s.graph[s.d].view_offs = 48;
  EXPECT_TRUE(validate_graph(s.graph).is_ok());
}

TEST(ValidateGraph, ViewOffsetOverflow) {
  SmallGraph s;
  s.graph[s.d].view_offs = std::numeric_limits<Bytes>::max() - 4;
  EXPECT_TRUE(fails_with(validate_graph(s.graph), {"tensor 3 (d)", "reaches past"}));
}

TEST(ValidateGraph, ViewOfAView) {
  SmallGraph s;
  Tensor e = s.graph.new_tensor("e", DataType::F32, {2});
  e.op = Op::View;
  e.src[0] = s.d;
  e.view_src = s.d;  // ggml would point at c, the root
  const TensorId id = s.graph.add_node(std::move(e));
  EXPECT_TRUE(
      fails_with(validate_graph(s.graph), {"tensor " + std::to_string(id) + " (e)", "tensor 3 (d)", "itself a view"}));
}

TEST(ValidateGraph, ViewOfItself) {
  SmallGraph s;
  s.graph[s.d].view_src = s.d;
  EXPECT_TRUE(fails_with(validate_graph(s.graph), {"tensor 3 (d)", "view of itself"}));
}

TEST(ValidateGraph, ViewSourceNotInTheGraph) {
  SmallGraph s;
  s.graph[s.d].view_src = 42;
  EXPECT_TRUE(fails_with(validate_graph(s.graph), {"tensor 3 (d)", "view source", "tensor 42"}));
}

TEST(ValidateGraph, NegativeNe) {
  SmallGraph s;
  s.graph[s.b].ne[2] = -1;
  EXPECT_TRUE(fails_with(validate_graph(s.graph), {"tensor 1 (b)", "ne[2]", "negative", "-1"}));
}

TEST(ValidateGraph, EmptyDimensionIsFine) {
  SmallGraph s;
  s.graph[s.b].ne[1] = 0;  // zero bytes, like ggml_nbytes gives
  EXPECT_TRUE(validate_graph(s.graph).is_ok());
  EXPECT_EQ(tensor_nbytes(s.graph[s.b]), 0u);
}

TEST(ValidateGraph, OverflowingSize) {
  SmallGraph s;
  Tensor& b = s.graph[s.b];
  b.ne = {std::int64_t{1} << 40, std::int64_t{1} << 30, 1, 1};
  b.nb = contiguous_strides(b.type, b.ne);  // 2^72 bytes
  EXPECT_TRUE(fails_with(validate_graph(s.graph), {"tensor 1 (b)", "overflows"}));
}

TEST(ValidateGraph, SizeAboveHalfTheAddressSpace) {
  SmallGraph s;
  Tensor& b = s.graph[s.b];
  b.type = DataType::I16;
  b.ne = {std::numeric_limits<std::int64_t>::max(), 1, 1, 1};
  b.nb = contiguous_strides(b.type, b.ne);  // 2^64 - 2 bytes: does not wrap, but too large
  EXPECT_TRUE(fails_with(validate_graph(s.graph), {"tensor 1 (b)", "overflows"}));
}

TEST(ValidateGraph, UnknownType) {
  SmallGraph s;
  s.graph[s.a].type = static_cast<DataType>(5);  // ggml's removed Q4_2
  EXPECT_TRUE(fails_with(validate_graph(s.graph), {"tensor 0 (a)", "unknown type 5"}));
}

TEST(ValidateGraph, UnknownOp) {
  SmallGraph s;
  s.graph[s.b].op = Op::Count;
  EXPECT_TRUE(fails_with(validate_graph(s.graph), {"tensor 1 (b)", "unknown op"}));
}

TEST(ValidateGraph, LeafOrNodeNotInTheGraph) {
  SmallGraph s;
  s.graph.leafs.push_back(17);
  EXPECT_TRUE(fails_with(validate_graph(s.graph), {"leaf 1", "tensor 17", "not in the graph"}));
  SmallGraph t;
  t.graph.nodes.push_back(-3);
  EXPECT_TRUE(fails_with(validate_graph(t.graph), {"node 3", "tensor -3", "not in the graph"}));
}

TEST(ValidateGraph, TensorListedTwice) {
  SmallGraph s;
  s.graph.nodes.push_back(s.b);
  EXPECT_TRUE(fails_with(validate_graph(s.graph), {"tensor 1 (b)", "listed twice"}));
  SmallGraph t;
  t.graph.nodes.insert(t.graph.nodes.begin(), t.a);  // a leaf and a node
  EXPECT_TRUE(fails_with(validate_graph(t.graph), {"tensor 0 (a)", "listed twice"}));
}

// ---------------------------------------------------------------------------------------------
// analyze_lifetimes: buffer types and buffer ids

TEST(AnalyzeLifetimesArguments, AValidCallPasses) {
  SmallGraph s;
  NullBufferType type;
  const std::vector<const BufferType*> types{&type, &type};
  const std::vector<BufferId> node_ids{0, 1, 1};
  const std::vector<BufferId> leaf_ids{1};
  auto result = analyze_lifetimes(s.graph, types, {node_ids, leaf_ids});
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  EXPECT_EQ(result->tensor_buffer[static_cast<std::size_t>(s.a)], 1);
}

TEST(AnalyzeLifetimesArguments, NoBufferTypes) {
  SmallGraph s;
  const std::vector<const BufferType*> types;
  auto result = analyze_lifetimes(s.graph, types);
  EXPECT_TRUE(fails_with(result.status(), {"no buffer types"}));
}

TEST(AnalyzeLifetimesArguments, NullBufferType) {
  SmallGraph s;
  NullBufferType type;
  const std::vector<const BufferType*> types{&type, nullptr};
  auto result = analyze_lifetimes(s.graph, types);
  EXPECT_TRUE(fails_with(result.status(), {"buffer type 1", "null"}));
}

TEST(AnalyzeLifetimesArguments, AlignmentNotAPowerOfTwo) {
  SmallGraph s;
  NullBufferType good(8);
  NullBufferType bad(12, kUnlimited, "odd");
  const std::vector<const BufferType*> types{&good, &bad};
  auto result = analyze_lifetimes(s.graph, types);
  EXPECT_TRUE(fails_with(result.status(), {"buffer type 1", "odd", "alignment 12", "power of two"}));
  NullBufferType zero(0, kUnlimited, "zero");
  const std::vector<const BufferType*> zero_types{&zero};
  EXPECT_TRUE(fails_with(analyze_lifetimes(s.graph, zero_types).status(), {"buffer type 0", "alignment 0"}));
}

TEST(AnalyzeLifetimesArguments, InvalidGraphIsReported) {
  SmallGraph s;
  s.graph[s.c].src[1] = 99;
  NullBufferType type;
  const std::vector<const BufferType*> types{&type};
  EXPECT_TRUE(fails_with(analyze_lifetimes(s.graph, types).status(), {"tensor 2 (c)", "tensor 99"}));
}

struct BadIdsCase {
  const char* label;
  std::vector<BufferId> node_ids;
  std::vector<BufferId> leaf_ids;
  std::vector<std::string> message_parts;
};

class AnalyzeLifetimesBadIds : public ::testing::TestWithParam<BadIdsCase> {};

TEST_P(AnalyzeLifetimesBadIds, AreRejectedWithTheIndex) {
  const BadIdsCase& c = GetParam();
  SmallGraph s;  // 3 nodes, 1 leaf
  NullBufferType type_a;
  NullBufferType type_b;
  const std::vector<const BufferType*> types{&type_a, &type_b};
  auto result = analyze_lifetimes(s.graph, types, {c.node_ids, c.leaf_ids});
  EXPECT_TRUE(fails_with(result.status(), c.message_parts));
}

std::string bad_ids_name(const ::testing::TestParamInfo<BadIdsCase>& param) { return param.param.label; }

INSTANTIATE_TEST_SUITE_P(
    AnalyzeLifetimesArguments, AnalyzeLifetimesBadIds,
    ::testing::Values(
        BadIdsCase{"NodeIdTooLarge", {0, 1, 2}, {}, {"node 2", "buffer id 2", "out of range", "2 buffer types"}},
        BadIdsCase{"NodeIdNegative", {-1, 0, 0}, {}, {"node 0", "buffer id -1", "out of range"}},
        BadIdsCase{"LeafIdTooLarge", {0, 0, 0}, {5}, {"leaf 0", "buffer id 5", "out of range"}},
        BadIdsCase{"LeafIdNegative", {}, {-2}, {"leaf 0", "buffer id -2"}},
        BadIdsCase{"TooFewNodeIds", {0, 0}, {}, {"node buffer ids", "2 given for 3 nodes"}},
        BadIdsCase{"TooManyNodeIds", {0, 0, 0, 0}, {}, {"node buffer ids", "4 given for 3 nodes"}},
        BadIdsCase{"TooManyLeafIds", {}, {0, 1}, {"leaf buffer ids", "2 given for 1 leafs"}}),
    bad_ids_name);

}  // namespace
}  // namespace galloc
