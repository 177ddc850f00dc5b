// Vocabulary types shared by every galloc component.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

namespace galloc {

using Bytes = std::uint64_t;       // a size in bytes
using Offset = std::uint64_t;      // a byte offset inside one chunk of a buffer
using Step = std::int64_t;         // a position in the planner's event order
using TensorId = std::int32_t;     // index into Graph::tensors
using BufferId = std::int32_t;     // index into the graph allocator's buffer types
using ChunkId = std::int32_t;      // index of a backend buffer inside one (virtual) buffer
using StorageId = std::int32_t;    // index of a storage object produced by the liveness analysis
using AllocatorId = std::int32_t;  // one per distinct buffer type: duplicates share an allocator

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
  friend constexpr bool operator==(const Interval& a, const Interval& b) {
    return a.lower == b.lower && a.upper == b.upper;
  }
  friend constexpr bool operator!=(const Interval& a, const Interval& b) { return !(a == b); }
};

// A view of contiguous elements, the part of std::span that galloc uses. The core also builds
// as C++17 (the amalgamated ggml drop-in), which has no std::span; anything with data() and
// size() converts, std::span and std::vector included.
template <typename T>
class Span {
 public:
  constexpr Span() = default;
  constexpr Span(T* data, std::size_t size) : data_(data), size_(size) {}
  template <typename Container,
            typename = std::enable_if_t<!std::is_same_v<std::decay_t<Container>, Span> &&
                                        std::is_convertible_v<decltype(std::declval<Container&>().data()), T*>>>
  constexpr Span(Container&& container)  // NOLINT(google-explicit-constructor): as std::span
      : data_(container.data()), size_(static_cast<std::size_t>(container.size())) {}

  [[nodiscard]] constexpr T* data() const { return data_; }
  [[nodiscard]] constexpr std::size_t size() const { return size_; }
  [[nodiscard]] constexpr bool empty() const { return size_ == 0; }
  [[nodiscard]] constexpr T* begin() const { return data_; }
  [[nodiscard]] constexpr T* end() const { return data_ + size_; }
  [[nodiscard]] constexpr T& operator[](std::size_t i) const { return data_[i]; }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

// Rounds `size` up to a multiple of `alignment` (a power of two, as ggml requires).
[[nodiscard]] constexpr Bytes align_up(Bytes size, Bytes alignment) {
  return alignment <= 1 ? size : (size + alignment - 1) / alignment * alignment;
}

[[nodiscard]] constexpr bool is_power_of_two(Bytes value) { return value != 0 && (value & (value - 1)) == 0; }

}  // namespace galloc
