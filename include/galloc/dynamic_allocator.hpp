// Best-fit free-block allocator over chunks: ggml's ggml_dyn_tallocr without its limits.
//
// Semantics follow upstream ggml-alloc exactly (block choice, tie breaks, the reuse-factor
// rule for the last block of each chunk, coalescing on free), except that there is no cap on
// free blocks (ggml: 256, then abort) and none on chunks (ggml: 16, the last one unbounded).
#pragma once

#include <vector>

#include "galloc/types.hpp"

namespace galloc {

struct ChunkAddress {
  ChunkId chunk = -1;
  Offset offset = 0;
  friend bool operator==(const ChunkAddress&, const ChunkAddress&) = default;
};

class DynamicAllocator {
 public:
  // max_chunk_size: the buffer type's max size (kUnlimited for none); clamped to 2^63 - 1 as
  // ggml does, so offsets never overflow.
  DynamicAllocator(Bytes alignment, Bytes max_chunk_size);

  // Never fails: a request that fits no chunk opens a new one (larger than max_chunk_size
  // only when the request itself is).
  ChunkAddress allocate(Bytes size);
  // Returns [address, address + size) to the free list, merging with neighbours.
  void free(ChunkAddress address, Bytes size);
  void reset();

  [[nodiscard]] int chunk_count() const { return static_cast<int>(chunks_.size()); }
  // High-water mark of a chunk: the bytes a backend buffer for it needs (0 past the end).
  [[nodiscard]] Bytes chunk_size(ChunkId chunk) const;
  [[nodiscard]] std::vector<Bytes> chunk_sizes() const;
  [[nodiscard]] Bytes total_size() const;
  [[nodiscard]] Bytes alignment() const { return alignment_; }
  [[nodiscard]] Bytes max_chunk_size() const { return max_chunk_size_; }
  // Free blocks of a chunk, sorted by offset (for tests and diagnostics).
  [[nodiscard]] std::vector<Interval<Offset>> free_blocks(ChunkId chunk) const;

 private:
  struct FreeBlock {
    Offset offset;
    Bytes size;
  };
  struct Chunk {
    std::vector<FreeBlock> blocks;  // sorted by offset
    Bytes high_water = 0;
  };

  ChunkId open_chunk(Bytes min_size);

  Bytes alignment_;
  Bytes max_chunk_size_;
  std::vector<Chunk> chunks_;
};

}  // namespace galloc
