// Vocabulary types shared by every galloc component.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>

namespace galloc {

using Bytes = std::uint64_t;      // a size in bytes
using Offset = std::uint64_t;     // a byte offset inside one chunk of a buffer
using Step = std::int64_t;        // a position in the planner's event order
using TensorId = std::int32_t;    // index into Graph::tensors
using BufferId = std::int32_t;    // index into the graph allocator's buffer types
using ChunkId = std::int32_t;     // index of a backend buffer inside one (virtual) buffer
using StorageId = std::int32_t;   // index of a storage object produced by the liveness analysis
using AllocatorId = std::int32_t; // one per distinct buffer type: duplicates share an allocator

inline constexpr TensorId kNoTensor = -1;
inline constexpr Bytes kUnlimited = std::numeric_limits<Bytes>::max();

// Half-open interval [lower, upper), used for time (steps) and for address ranges.
template <typename T>
struct Interval {
  T lower{};
  T upper{};

  [[nodiscard]] constexpr bool empty() const { return upper <= lower; }
  [[nodiscard]] constexpr bool overlaps(const Interval& other) const {
    return lower < other.upper && other.lower < upper;
  }
  [[nodiscard]] constexpr bool contains(T point) const { return lower <= point && point < upper; }
  friend constexpr bool operator==(const Interval&, const Interval&) = default;
};

// Rounds `size` up to a multiple of `alignment` (a power of two, as ggml requires).
[[nodiscard]] constexpr Bytes align_up(Bytes size, Bytes alignment) {
  return alignment <= 1 ? size : (size + alignment - 1) / alignment * alignment;
}

[[nodiscard]] constexpr bool is_power_of_two(Bytes value) {
  return value != 0 && (value & (value - 1)) == 0;
}

}  // namespace galloc
