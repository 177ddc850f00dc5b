// Every strategy, on hand-made and random graphs: plans validate, `best` is never worse than
// `ggml`, and nothing goes below the lower bound.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <random>
#include <tuple>

#include "galloc/lifetimes.hpp"
#include "galloc/placement.hpp"
#include "galloc/plan.hpp"
#include "galloc/validator.hpp"
#include "placement_internal.hpp"  // best's cannot_be_beaten
#include "support/hand_made_lifetimes.hpp"
#include "support/random_graph.hpp"
#include "support/strategy_param.hpp"

namespace galloc {
namespace {

using detail::cannot_be_beaten;

constexpr GreedyOptions kGreedyVariants[] = {
    {GreedyOrder::kDecreasingSize, GapChoice::kBestFit},
    {GreedyOrder::kDecreasingSize, GapChoice::kLowestOffset},
    {GreedyOrder::kStartTime, GapChoice::kBestFit},
    {GreedyOrder::kStartTime, GapChoice::kLowestOffset},
    {GreedyOrder::kDecreasingSizeLateFirst, GapChoice::kBestFit},
};

std::string variant_name(const GreedyOptions& options) {
  const char* order = options.order == GreedyOrder::kDecreasingSize ? "by size"
                      : options.order == GreedyOrder::kStartTime    ? "by start"
                                                                    : "by size, late first";
  return std::string(order) + (options.gap == GapChoice::kBestFit ? ", best fit" : ", lowest offset");
}

// Greedy spelled out, in O(n^2): for each object in order, every placed object of a chunk that
// is live at some step of its interval, in offset order, and the gaps between them (a
// zero-size object splits a gap). place_greedy finds the same gaps through merged byte ranges
// in segment trees and must put every object exactly where this does.
Placement obvious_greedy(const Problem& lifetimes, const GreedyOptions& options) {
  struct Placed {
    std::size_t chunk;
    Offset begin;
    Offset end;
    Interval<Step> live;
  };
  Placement placement;
  placement.storage_address.resize(lifetimes.storages.size());
  placement.chunk_sizes.resize(lifetimes.allocators.size());
  for (std::size_t a = 0; a < lifetimes.allocators.size(); ++a) {
    std::vector<std::size_t> order;
    for (std::size_t s = 0; s < lifetimes.storages.size(); ++s) {
      if (static_cast<std::size_t>(lifetimes.storages[s].allocator) == a) order.push_back(s);
    }
    std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
      const StorageObject& sx = lifetimes.storages[x];
      const StorageObject& sy = lifetimes.storages[y];
      if (options.order != GreedyOrder::kStartTime && sx.size != sy.size) return sx.size > sy.size;
      if (options.order == GreedyOrder::kDecreasingSizeLateFirst) return sx.live.upper > sy.live.upper;
      return sx.live.lower < sy.live.lower;
    });
    const Bytes limit = lifetimes.allocators[a].max_chunk_size;
    std::vector<Placed> placed;
    std::vector<Bytes>& high = placement.chunk_sizes[a];
    for (std::size_t s : order) {
      const StorageObject& object = lifetimes.storages[s];
      std::optional<Offset> offset;
      std::size_t chunk = 0;
      for (; chunk < high.size() && !offset; ++chunk) {
        std::vector<Placed> overlapping;
        for (const Placed& p : placed) {
          if (p.chunk == chunk && p.live.lower < object.live.upper && object.live.lower < p.live.upper) {
            overlapping.push_back(p);
          }
        }
        std::sort(overlapping.begin(), overlapping.end(),
                  [](const Placed& x, const Placed& y) { return x.begin < y.begin; });
        Offset cursor = 0;
        std::optional<Bytes> smallest;
        for (const Placed& p : overlapping) {
          if (p.begin > cursor && p.begin - cursor >= object.size) {
            const Bytes gap = p.begin - cursor;
            if (options.gap == GapChoice::kLowestOffset) {
              offset = cursor;
              break;
            }
            if (!smallest || gap < *smallest) {
              smallest = gap;
              offset = cursor;
            }
          }
          cursor = std::max(cursor, p.end);
        }
        // a chunk made for an object above the max size offers that object's size
        const Bytes chunk_limit = std::max(limit, high[chunk]);
        if (!offset && cursor <= chunk_limit && object.size <= chunk_limit - cursor) offset = cursor;
        if (offset) break;
      }
      if (!offset) {
        high.push_back(0);
        offset = 0;
        chunk = high.size() - 1;
      }
      placed.push_back({chunk, *offset, *offset + object.size, object.live});
      high[chunk] = std::max(high[chunk], *offset + object.size);
      placement.storage_address[s] = {static_cast<ChunkId>(chunk), *offset};
    }
  }
  return placement;
}

// GraphProblem without a graph: up to three allocators, some with a small max size; objects of
// a few sizes (ties, exact fits, zero bytes, above the max size), short-lived ones among
// long-lived ones and ones live to the end.
GraphProblem random_lifetimes(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto uniform = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  GraphProblem lifetimes;
  const auto n_allocators = uniform(1, 3);
  for (std::int64_t a = 0; a < n_allocators; ++a) {
    const Bytes max_sizes[] = {kUnlimited, kUnlimited, 96, 160, 512};
    lifetimes.allocators.push_back({1, max_sizes[uniform(0, 4)]});
  }
  const auto steps = uniform(1, 300);
  lifetimes.events.resize(static_cast<std::size_t>(steps));
  const auto n = uniform(0, 150);
  for (std::int64_t i = 0; i < n; ++i) {
    const Bytes sizes[] = {0, 8, 16, 16, 24, 32, 32, 40, 64, 100, 200};
    StorageObject object;
    object.allocator = static_cast<AllocatorId>(uniform(0, n_allocators - 1));
    object.size = sizes[uniform(0, 10)];
    object.live.lower = uniform(0, steps - 1);
    const auto kind = uniform(0, 9);
    const Step longest = steps - object.live.lower;
    object.live.upper = object.live.lower + (kind < 6   ? std::min<Step>(longest, uniform(1, 6))
                                             : kind < 8 ? uniform(1, longest)
                                                        : longest);
    lifetimes.storages.push_back(object);
  }
  return lifetimes;
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
      EXPECT_GE(chunks_total(placement->chunk_sizes[a]), lower[a]) << "seed " << seed;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(All, EveryStrategy, ::testing::ValuesIn(all_strategies()), testing::strategy_param_name);

TEST(BestStrategy, NeverWorseThanGgmlPerBuffer) {
  for (std::uint64_t seed = 0; seed < 300; ++seed) {
    const auto c = testing::random_case(seed);
    auto types = c.make_buffer_types();
    auto lifetimes = analyze_lifetimes(c.graph, types.per_id, {c.node_buffer_ids, c.leaf_buffer_ids});
    ASSERT_TRUE(lifetimes.is_ok());
    const Placement ggml = place_ggml(*lifetimes);
    auto best = place(*lifetimes, {Strategy::kBest});
    for (std::size_t a = 0; a < ggml.chunk_sizes.size(); ++a) {
      EXPECT_LE(chunks_total(best->chunk_sizes[a]), chunks_total(ggml.chunk_sizes[a])) << "seed " << seed;
    }
  }
}

TEST(GreedyStrategy, PlacesEveryObjectWhereTheObviousAlgorithmDoes) {
  for (std::uint64_t seed = 0; seed < 400; ++seed) {
    GraphProblem lifetimes = random_lifetimes(seed);
    // Hand-made lifetimes need not have an event per step: intervals past the events.
    if (seed % 4 == 3) lifetimes.events.clear();
    for (const GreedyOptions& options : kGreedyVariants) {
      const Placement fast = place_greedy(lifetimes, options);
      const Placement obvious = obvious_greedy(lifetimes, options);
      ASSERT_EQ(fast.chunk_sizes, obvious.chunk_sizes) << "seed " << seed << ", " << variant_name(options);
      ASSERT_EQ(fast.storage_address, obvious.storage_address) << "seed " << seed << ", " << variant_name(options);
      const auto issues = validate_placement(lifetimes, fast);
      ASSERT_TRUE(issues.empty()) << "seed " << seed << ": " << issues.front().message;
    }
  }
  for (std::uint64_t seed = 0; seed < 150; ++seed) {
    const auto c = testing::random_case(seed);
    auto types = c.make_buffer_types();
    auto lifetimes =
        analyze_lifetimes(c.graph, types.per_id, {c.node_buffer_ids, c.leaf_buffer_ids}, {.defer_written_leafs = true});
    ASSERT_TRUE(lifetimes.is_ok());
    for (const GreedyOptions& options : kGreedyVariants) {
      const Placement fast = place_greedy(*lifetimes, options);
      const Placement obvious = obvious_greedy(*lifetimes, options);
      ASSERT_EQ(fast.chunk_sizes, obvious.chunk_sizes) << "graph seed " << seed << ", " << variant_name(options);
      ASSERT_EQ(fast.storage_address, obvious.storage_address)
          << "graph seed " << seed << ", " << variant_name(options);
    }
  }
}

// A zero-size object inside a gap splits it, as the sweep over sorted objects has always done:
//
//   steps      0   1   2..9        by start time, lowest offset:
//   A 32       ###############     A [0, 32)
//   B 64       ###                 B [32, 96), dead from step 1: a 64-byte gap between A and C
//   C 32       ###############     C [96, 128)
//   D 16           ###             D [32, 48)
//   Z  0           ###########     Z at 48, inside the gap once D is dead
//   E 64               #######     E would fit [32, 96) but for Z: [128, 192)
TEST(GreedyStrategy, AZeroSizeObjectSplitsAGap) {
  GraphProblem lifetimes;
  lifetimes.allocators.push_back({1, kUnlimited});
  lifetimes.events.resize(10);
  for (const auto& [size, lower, upper] :
       {std::tuple<Bytes, Step, Step>{32, 0, 10}, {64, 0, 1}, {32, 0, 10}, {16, 1, 2}, {0, 1, 10}, {64, 2, 10}}) {
    StorageObject object;
    object.size = size;
    object.live = {lower, upper};
    lifetimes.storages.push_back(object);
  }
  const GreedyOptions options{GreedyOrder::kStartTime, GapChoice::kLowestOffset};
  const Placement placement = place_greedy(lifetimes, options);
  const std::vector<Offset> expected{0, 32, 96, 32, 48, 128};
  for (std::size_t s = 0; s < expected.size(); ++s) EXPECT_EQ(placement.storage_address[s].offset, expected[s]) << s;
  EXPECT_EQ(placement.storage_address, obvious_greedy(lifetimes, options).storage_address);
}

// best stops trying candidates once it cannot be beaten; it must still never be larger than
// any of them.
TEST(BestStrategy, NeverWorseThanAnyGreedyVariantPerBuffer) {
  testing::RandomGraphOptions larger;
  larger.max_nodes = 300;
  larger.max_leafs = 30;
  for (std::uint64_t seed = 0; seed < 400; ++seed) {
    const auto c = seed < 300 ? testing::random_case(seed) : testing::random_case(seed, larger);
    auto types = c.make_buffer_types();
    auto lifetimes =
        analyze_lifetimes(c.graph, types.per_id, {c.node_buffer_ids, c.leaf_buffer_ids}, {.defer_written_leafs = true});
    ASSERT_TRUE(lifetimes.is_ok());
    auto best = place(*lifetimes, {Strategy::kBest});
    ASSERT_TRUE(best.is_ok());
    ASSERT_TRUE(validate_placement(*lifetimes, *best).empty()) << "seed " << seed;
    for (const GreedyOptions& options : kGreedyVariants) {
      const Placement greedy = place_greedy(*lifetimes, options);
      for (std::size_t a = 0; a < greedy.chunk_sizes.size(); ++a) {
        EXPECT_LE(chunks_total(best->chunk_sizes[a]), chunks_total(greedy.chunk_sizes[a]))
            << "seed " << seed << ", " << variant_name(options);
      }
    }
  }
}

TEST(BestStrategy, CannotBeBeatenOnlyAtTheLowerBoundInTheFewestChunks) {
  GraphProblem lifetimes;
  lifetimes.allocators = {{1, kUnlimited}, {1, 100}};
  const std::vector<Bytes> lower{64, 250};
  auto placement = [](std::vector<Bytes> first, std::vector<Bytes> second) {
    Placement p;
    p.chunk_sizes = {std::move(first), std::move(second)};
    return p;
  };
  EXPECT_TRUE(cannot_be_beaten(lifetimes, placement({64}, {100, 100, 50}), lower));
  EXPECT_FALSE(cannot_be_beaten(lifetimes, placement({72}, {100, 100, 50}), lower)) << "above the bound";
  EXPECT_FALSE(cannot_be_beaten(lifetimes, placement({32, 32}, {100, 100, 50}), lower)) << "two chunks, one would do";
  EXPECT_FALSE(cannot_be_beaten(lifetimes, placement({64}, {100, 50, 50, 50}), lower)) << "four chunks, three would do";
  EXPECT_FALSE(cannot_be_beaten(lifetimes, placement({64}, {200, 50}), lower)) << "a chunk above the max size";
  // Nothing to place: no chunks, lower bound 0.
  EXPECT_TRUE(cannot_be_beaten(lifetimes, placement({}, {}), {0, 0}));
  // A max size of 0 with only empty objects (found by fuzz_planner: it divided by the max size).
  lifetimes.allocators[1].max_chunk_size = 0;
  EXPECT_FALSE(cannot_be_beaten(lifetimes, placement({64}, {0, 0}), {64, 0})) << "two empty chunks, none would do";
}

// best_order lists the candidates in its own order: every heuristic of the registry, once,
// for problems on either side of the sizes where lowest-offset-first and greedy go first.
TEST(BestStrategy, TriesEveryHeuristicOnce) {
  std::vector<Strategy> heuristics;
  for (const NamedStrategy& entry : strategy_registry()) {
    if (entry.heuristic) heuristics.push_back(entry.strategy);
  }
  std::sort(heuristics.begin(), heuristics.end());
  for (const std::size_t n : {std::size_t{1}, detail::kLowestOffsetFirstUpTo, detail::kLowestOffsetFirstUpTo + 1,
                              detail::kGreedyFirstUpTo, detail::kGreedyFirstUpTo + 1}) {
    GraphProblem problem;
    problem.storages.resize(n);
    const Span<const Strategy> order = detail::best_order(problem);
    std::vector<Strategy> tried(order.begin(), order.end());
    std::sort(tried.begin(), tried.end());
    EXPECT_EQ(tried, heuristics) << n << " storage objects";
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
  EXPECT_EQ(chunks_total(place_ggml(*lifetimes).chunk_sizes[0]), 320u);
  const Placement greedy = place_greedy(*lifetimes);
  EXPECT_EQ(chunks_total(greedy.chunk_sizes[0]), 256u);
  EXPECT_TRUE(validate_placement(*lifetimes, greedy).empty());
  EXPECT_EQ(chunks_total(place(*lifetimes, {Strategy::kBest})->chunk_sizes[0]), 256u);
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
