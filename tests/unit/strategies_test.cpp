// Every strategy, on hand-made and random graphs: plans validate, `best` is never worse than
// `ggml`, and nothing goes below the lower bound.
#include <gtest/gtest.h>

#include "galloc/lifetimes.hpp"
#include "galloc/placement.hpp"
#include "galloc/plan.hpp"
#include "support/random_graph.hpp"

namespace galloc {
namespace {

Bytes total(const std::vector<Bytes>& chunks) {
  Bytes sum = 0;
  for (Bytes c : chunks) sum += c;
  return sum;
}

class EveryStrategy : public ::testing::TestWithParam<Strategy> {};

// Random graphs with several buffer types, small max sizes and odd alignments.
TEST_P(EveryStrategy, RandomGraphsGiveValidPlansAboveTheLowerBound) {
  for (std::uint64_t seed = 0; seed < 300; ++seed) {
    const auto c = testing::random_case(seed);
    auto types = c.make_buffer_types();
    auto lifetimes = analyze_lifetimes(c.graph, types.per_id, {c.node_buffer_ids, c.leaf_buffer_ids});
    ASSERT_TRUE(lifetimes.is_ok()) << "seed " << seed << ": " << lifetimes.status().to_string();
    auto placement = place(*lifetimes, {GetParam()});
    ASSERT_TRUE(placement.is_ok());
    const auto issues = validate_placement(*lifetimes, *placement);
    ASSERT_TRUE(issues.empty()) << "seed " << seed << ": " << issues.front().message;
    const auto lower = live_lower_bound(*lifetimes);
    for (std::size_t a = 0; a < lower.size(); ++a) {
      EXPECT_GE(total(placement->chunk_sizes[a]), lower[a]) << "seed " << seed;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(All, EveryStrategy, ::testing::ValuesIn(all_strategies()),
                         [](const auto& param_info) { return std::string(strategy_name(param_info.param)); });

TEST(BestStrategy, NeverWorseThanGgmlPerBuffer) {
  for (std::uint64_t seed = 0; seed < 300; ++seed) {
    const auto c = testing::random_case(seed);
    auto types = c.make_buffer_types();
    auto lifetimes = analyze_lifetimes(c.graph, types.per_id, {c.node_buffer_ids, c.leaf_buffer_ids});
    ASSERT_TRUE(lifetimes.is_ok());
    const Placement ggml = place_ggml(*lifetimes);
    auto best = place(*lifetimes, {Strategy::kBest});
    for (std::size_t a = 0; a < ggml.chunk_sizes.size(); ++a) {
      EXPECT_LE(total(best->chunk_sizes[a]), total(ggml.chunk_sizes[a])) << "seed " << seed;
    }
  }
}

// Online best fit leaves a hole that the next, larger tensor cannot use:
//
//   step      A(64)  B(128)  C(128)          ggml:    A [0,64) B [64,192) C [192,320)
//   B = cont(A)  ####  ######                 offline: B [0,128) C [128,256) A [128,192)
//   C = cont(B)        ######  ######
//
// A and C are never live together, so A can sit where C goes later.
TEST(GreedyStrategy, AvoidsTheFragmentationOfOnlineBestFit) {
  Graph g;
  const TensorId a = g.add_leaf(g.new_tensor("A", DataType::F32, {16}));
  g[a].flags |= kFlagInput;
  const TensorId b = g.add_node(g.new_op("B", Op::Cont, DataType::F32, {32}, {a}));
  const TensorId c = g.add_node(g.new_op("C", Op::Cont, DataType::F32, {32}, {b}));
  g[c].flags |= kFlagOutput;
  NullBufferType type(64);
  const std::vector<const BufferType*> types{&type};
  auto lifetimes = analyze_lifetimes(g, types);
  ASSERT_TRUE(lifetimes.is_ok());
  EXPECT_EQ(live_lower_bound(*lifetimes)[0], 256u);
  EXPECT_EQ(total(place_ggml(*lifetimes).chunk_sizes[0]), 320u);
  const Placement greedy = place_greedy(*lifetimes);
  EXPECT_EQ(total(greedy.chunk_sizes[0]), 256u);
  EXPECT_TRUE(validate_placement(*lifetimes, greedy).empty());
  EXPECT_EQ(total(place(*lifetimes, {Strategy::kBest})->chunk_sizes[0]), 256u);
}

// With a max size, the offline planner packs into chunks no larger than the max, except a
// chunk for a single storage object above it.
TEST(GreedyStrategy, RespectsMaxChunkSize) {
  Graph g;
  std::vector<TensorId> inputs;
  for (int i = 0; i < 5; ++i) {
    inputs.push_back(g.add_leaf(g.new_tensor("in" + std::to_string(i), DataType::F32, {16})));
    g[inputs.back()].flags |= kFlagInput;
  }
  const TensorId big = g.add_node(g.new_op("big", Op::Concat, DataType::F32, {64}, {inputs[0], inputs[1]}));
  g[big].flags |= kFlagOutput;
  NullBufferType type(8, 128);
  const std::vector<const BufferType*> types{&type};
  auto lifetimes = analyze_lifetimes(g, types);
  ASSERT_TRUE(lifetimes.is_ok());
  const Placement greedy = place_greedy(*lifetimes);
  EXPECT_TRUE(validate_placement(*lifetimes, greedy).empty());
  for (Bytes chunk : greedy.chunk_sizes[0]) EXPECT_TRUE(chunk <= 128 || chunk == 256) << chunk;
}

TEST(StrategyNames, RoundTripAndUnknownNamesAreErrors) {
  for (Strategy s : all_strategies()) EXPECT_EQ(*strategy_from_name(strategy_name(s)), s);
  auto unknown = strategy_from_name("fastest");
  ASSERT_FALSE(unknown.is_ok());
  EXPECT_NE(unknown.status().message().find("ggml"), std::string::npos) << "lists the known names";
}

}  // namespace
}  // namespace galloc
