// Best-fit free-block allocator over chunks: ggml's ggml_dyn_tallocr without its limits.
//
// Semantics follow upstream ggml-alloc exactly (block choice, tie breaks, the reuse-factor
// rule for the last block of each chunk, coalescing on free), except that there is no cap on
// free blocks (ggml: 256, then abort) and none on chunks (ggml: 16, the last one unbounded).
//
// Without the caps upstream's scans are O(blocks + chunks) per call. Small free lists keep
// upstream's arrays and scans (the fastest for the few blocks a typical graph has); past a
// threshold of blocks + chunks (src/dynamic_allocator_index.hpp) the allocator moves to
// search trees that give the same answers in O(log n) (src/dynamic_allocator.cpp explains
// why they agree). Free lists that only odd input produces (empty or overlapping free
// blocks: frees of 0 bytes or of free memory) stay with the arrays, where upstream's
// behaviour is defined by its scans.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "galloc/problem.hpp"
#include "galloc/types.hpp"

namespace galloc {

class DynamicAllocator {
 public:
  // max_chunk_size: the buffer type's max size (kUnlimited for none); clamped to SIZE_MAX / 2
  // as ggml does, so offsets never overflow. size_bits: the width of ggml's size_t, in which
  // upstream computes its choice between chunks (and so wraps); by default the width on the
  // machine galloc runs on, which is where the drop-in's ggml runs.
  static constexpr int kHostSizeBits = static_cast<int>(sizeof(std::size_t) * 8);
  DynamicAllocator(Bytes alignment, Bytes max_chunk_size, int size_bits = kHostSizeBits);
  DynamicAllocator(const DynamicAllocator& other);
  DynamicAllocator(DynamicAllocator&& other) noexcept;
  DynamicAllocator& operator=(const DynamicAllocator& other);
  DynamicAllocator& operator=(DynamicAllocator&& other) noexcept;
  ~DynamicAllocator();

  // Never fails: a request that fits no chunk opens a new one (larger than max_chunk_size
  // only when the request itself is).
  ChunkAddress allocate(Bytes size);
  // Returns [address, address + size) to the free list, merging with neighbours. A chunk
  // that does not exist is ignored.
  void free(ChunkAddress address, Bytes size);
  void reset();

  [[nodiscard]] int chunk_count() const { return static_cast<int>(high_water_.size()); }
  // High-water mark of a chunk: the bytes a backend buffer for it needs (0 past the end).
  [[nodiscard]] Bytes chunk_size(ChunkId chunk) const;
  [[nodiscard]] std::vector<Bytes> chunk_sizes() const;
  [[nodiscard]] Bytes total_size() const;
  [[nodiscard]] Bytes alignment() const { return alignment_; }
  [[nodiscard]] Bytes max_chunk_size() const { return max_chunk_size_; }
  // Free blocks of a chunk, sorted by offset (for tests and diagnostics).
  [[nodiscard]] std::vector<Interval<Offset>> free_blocks(ChunkId chunk) const;
  // Whether the search trees are in use (for tests and diagnostics).
  [[nodiscard]] bool indexed() const { return index_ != nullptr; }

 private:
  struct FreeBlock {
    Offset offset;
    Bytes size;
  };
  class Index;  // the search trees, src/dynamic_allocator.cpp

  // align_up without its division for the powers of two that ggml uses (the same result,
  // wrap-around included).
  [[nodiscard]] Bytes aligned(Bytes size) const {
    return alignment_is_power_of_two_ ? (size + alignment_ - 1) & ~(alignment_ - 1) : align_up(size, alignment_);
  }
  ChunkAddress allocate_by_scan(Bytes size);
  void free_by_scan(ChunkAddress address, Bytes size);
  ChunkAddress allocate_past_threshold(Bytes size);
  void free_past_threshold(ChunkAddress address, Bytes size);
  // Linear to indexed once the lists are large and well formed; indexed to linear on input
  // the trees do not model.
  void try_index();
  void unindex();

  static constexpr std::size_t kIndexed = std::numeric_limits<std::size_t>::max();

  Bytes alignment_;
  bool alignment_is_power_of_two_;
  Bytes size_mask_;  // SIZE_MAX of the size_t that upstream computes in
  Bytes max_chunk_size_;
  std::vector<Bytes> high_water_;  // per chunk, in both modes
  // Linear mode: per chunk, upstream's array of free blocks, sorted by offset.
  std::vector<std::vector<FreeBlock>> scan_blocks_;
  // Free blocks + chunks in linear mode, kIndexed in indexed mode: past the threshold,
  // calls take the out-of-line path.
  std::size_t scan_size_ = 0;
  // Calls left before the next attempt to index a free list found malformed.
  std::size_t index_retry_countdown_ = 0;
  std::unique_ptr<Index> index_;  // non-null: indexed mode
};

}  // namespace galloc
