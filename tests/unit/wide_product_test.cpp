// detail::WideProduct (src/wide_product.hpp): the exact 64 x 64-bit product that ranks
// lowest-offset-first's objects, checked against the compiler's 128-bit integers.
#include "wide_product.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace galloc::detail {
namespace {

__extension__ typedef unsigned __int128 U128;  // gcc and clang on 64-bit targets

U128 exact(std::uint64_t a, std::uint64_t b) { return static_cast<U128>(a) * b; }

TEST(WideProduct, HalvesAreTheExactProduct) {
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  std::vector<std::uint64_t> values = {0, 1, 2, 0xffffffffu, 0x100000000u, 0x123456789abcdefu, kMax - 1, kMax};
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200; ++i) values.push_back(rng() >> (rng() % 64));
  for (std::uint64_t a : values) {
    for (std::uint64_t b : values) {
      const WideProduct product(a, b);
      const U128 want = exact(a, b);
      ASSERT_EQ(product.high(), static_cast<std::uint64_t>(want >> 64)) << a << " x " << b;
      ASSERT_EQ(product.low(), static_cast<std::uint64_t>(want)) << a << " x " << b;
    }
  }
}

TEST(WideProduct, OrdersAsTheExactProducts) {
  std::mt19937_64 rng(11);
  for (int i = 0; i < 20000; ++i) {
    // sizes up to 2^40 bytes, lifetimes up to 2^24 steps: products beyond a double's 53 bits
    const std::uint64_t a = rng() >> 24, b = rng() >> 40, c = rng() >> 24, d = rng() >> 40;
    ASSERT_EQ(WideProduct(a, b) > WideProduct(c, d), exact(a, b) > exact(c, d));
    ASSERT_EQ(WideProduct(a, b) != WideProduct(c, d), exact(a, b) != exact(c, d));
  }
  // equal products from different factors compare equal
  EXPECT_FALSE(WideProduct(6, 4) != WideProduct(8, 3));
  EXPECT_FALSE(WideProduct(6, 4) > WideProduct(8, 3));
}

}  // namespace
}  // namespace galloc::detail
