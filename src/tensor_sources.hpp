// Visiting the set source slots of a tensor. A node has 10 slots and nearly always uses one to
// three, and the planner walks every node's sources several times per reserve, so the empty
// slots are skipped with a bit mask instead of being tested one by one.
#pragma once

#include <array>
#include <cstdint>

#include "galloc/graph.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace galloc::detail {

static_assert(kMaxSources == 10 && kNoTensor == -1, "source_mask assumes ggml's 10 slots and -1 for none");

// Bit s is set when src[s] is a tensor.
[[nodiscard]] inline std::uint32_t source_mask(const Tensor& tensor) {
  const TensorId* src = tensor.src.data();
#if defined(__SSE2__)
  const __m128i none = _mm_set1_epi32(kNoTensor);
  const __m128i low = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
  const __m128i high = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 4));
  const auto empty_low = static_cast<std::uint32_t>(_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(low, none))));
  const auto empty_high = static_cast<std::uint32_t>(_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(high, none))));
  const std::uint32_t empty = empty_low | empty_high << 4 | static_cast<std::uint32_t>(src[8] == kNoTensor) << 8 |
                              static_cast<std::uint32_t>(src[9] == kNoTensor) << 9;
  return ~empty & 0x3ffu;
#else
  std::uint32_t mask = 0;
  for (int s = 0; s < kMaxSources; ++s) mask |= static_cast<std::uint32_t>(src[s] != kNoTensor) << s;
  return mask;
#endif
}

// True when the tensor's 10 source slots hold exactly `src`. Branch-free: alloc compares every
// node on every call and nearly always finds them equal.
[[nodiscard]] inline bool same_sources(const Tensor& tensor, const std::array<TensorId, kMaxSources>& src) {
  const TensorId* mine = tensor.src.data();
#if defined(__SSE2__)
  const __m128i low = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(mine)),
                                    _mm_loadu_si128(reinterpret_cast<const __m128i*>(src.data())));
  const __m128i high = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(mine + 4)),
                                     _mm_loadu_si128(reinterpret_cast<const __m128i*>(src.data() + 4)));
  const __m128i both = _mm_or_si128(low, high);
  const std::uint32_t rest =
      static_cast<std::uint32_t>(mine[8] ^ src[8]) | static_cast<std::uint32_t>(mine[9] ^ src[9]);
  return _mm_movemask_epi8(_mm_cmpeq_epi8(both, _mm_setzero_si128())) == 0xffff && rest == 0;
#else
  std::uint32_t differs = 0;
  for (int s = 0; s < kMaxSources; ++s)
    differs |= static_cast<std::uint32_t>(mine[s] ^ src[static_cast<std::size_t>(s)]);
  return differs == 0;
#endif
}

// The index of the lowest set bit of a non-zero mask (std::countr_zero, which C++17 lacks).
[[nodiscard]] inline int lowest_set_bit(std::uint32_t mask) { return __builtin_ctz(mask); }

// Calls f(slot, source) for every set slot, in slot order.
template <typename F>
inline void for_each_source(const Tensor& tensor, F&& f) {
  for (std::uint32_t mask = source_mask(tensor); mask != 0; mask &= mask - 1) {
    const int slot = lowest_set_bit(mask);
    f(slot, tensor.src[static_cast<std::size_t>(slot)]);
  }
}

}  // namespace galloc::detail
