// The source-slot helpers use SSE2 where there is one; the plain loops here are their oracle.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <random>

#include "galloc/graph.hpp"
#include "tensor_sources.hpp"

namespace galloc {
namespace {

TEST(TensorSources, MaskAndComparisonAgreeWithPlainLoops) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> pick(-1, 3);  // mostly a few ids, often none
  for (int round = 0; round < 5000; ++round) {
    Tensor tensor;
    std::array<TensorId, kMaxSources> other{};
    for (std::size_t s = 0; s < kMaxSources; ++s) {
      tensor.src[s] = pick(rng);
      other[s] = round % 2 == 0 ? tensor.src[s] : pick(rng);
    }
    std::uint32_t mask = 0;
    bool same = true;
    for (std::size_t s = 0; s < kMaxSources; ++s) {
      mask |= static_cast<std::uint32_t>(tensor.src[s] != kNoTensor) << s;
      same = same && tensor.src[s] == other[s];
    }
    ASSERT_EQ(detail::source_mask(tensor), mask) << "round " << round;
    ASSERT_EQ(detail::same_sources(tensor, other), same) << "round " << round;
  }
}

}  // namespace
}  // namespace galloc
