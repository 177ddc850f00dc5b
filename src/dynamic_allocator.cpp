#include "galloc/dynamic_allocator.hpp"

#include <algorithm>
#include <cstdint>

namespace galloc {

namespace {
constexpr Bytes kHalfAddressSpace = std::numeric_limits<Bytes>::max() / 2;
}

DynamicAllocator::DynamicAllocator(Bytes alignment, Bytes max_chunk_size)
    : alignment_(alignment == 0 ? 1 : alignment),
      max_chunk_size_(std::min(max_chunk_size, kHalfAddressSpace)) {}

void DynamicAllocator::reset() { chunks_.clear(); }

ChunkId DynamicAllocator::open_chunk(Bytes min_size) {
  Chunk chunk;
  chunk.blocks.push_back({0, std::max(min_size, max_chunk_size_)});
  chunks_.push_back(std::move(chunk));
  return static_cast<ChunkId>(chunks_.size() - 1);
}

ChunkAddress DynamicAllocator::allocate(Bytes size) {
  size = align_up(size, alignment_);

  // Best fit among every chunk's blocks except its last. As upstream, the best size is
  // tracked per chunk, so the last chunk with any fitting block wins; ties go to the later
  // block.
  int best_chunk = -1;
  int best_block = -1;
  for (int c = 0; c < chunk_count(); ++c) {
    const auto& blocks = chunks_[static_cast<std::size_t>(c)].blocks;
    Bytes best_size = std::numeric_limits<Bytes>::max();
    for (int i = 0; i + 1 < static_cast<int>(blocks.size()); ++i) {
      const FreeBlock& block = blocks[static_cast<std::size_t>(i)];
      if (block.size >= size && block.size <= best_size) {
        best_chunk = c;
        best_block = i;
        best_size = block.size;
      }
    }
  }

  if (best_block == -1) {
    // The last block of a chunk can grow the chunk. Prefer the block that needs the least new
    // memory; among blocks that need none, the one that leaves the least unused.
    std::int64_t best_reuse = std::numeric_limits<std::int64_t>::min();
    for (int c = 0; c < chunk_count(); ++c) {
      const Chunk& chunk = chunks_[static_cast<std::size_t>(c)];
      if (chunk.blocks.empty()) continue;
      const FreeBlock& block = chunk.blocks.back();
      // Wraps like upstream's size_t arithmetic, then reads as signed.
      const auto reuse = static_cast<std::int64_t>(chunk.high_water - block.offset - size);
      const bool better_reuse = best_reuse < 0 && reuse > best_reuse;
      const bool better_fit = reuse >= 0 && reuse < best_reuse;
      if (block.size >= size && (better_reuse || better_fit)) {
        best_chunk = c;
        best_block = static_cast<int>(chunk.blocks.size()) - 1;
        best_reuse = reuse;
      }
    }
  }

  if (best_block == -1) {
    best_chunk = open_chunk(size);
    best_block = 0;
  }

  Chunk& chunk = chunks_[static_cast<std::size_t>(best_chunk)];
  FreeBlock& block = chunk.blocks[static_cast<std::size_t>(best_block)];
  const ChunkAddress address{best_chunk, block.offset};
  block.offset += size;
  block.size -= size;
  if (block.size == 0) {
    chunk.blocks.erase(chunk.blocks.begin() + best_block);
  }
  chunk.high_water = std::max(chunk.high_water, address.offset + size);
  return address;
}

void DynamicAllocator::free(ChunkAddress address, Bytes size) {
  size = align_up(size, alignment_);
  auto& blocks = chunks_[static_cast<std::size_t>(address.chunk)].blocks;
  const Offset offset = address.offset;

  // Merge with the first block that touches the freed range, in address order (upstream's
  // scan: "ends at offset" is tested before "starts at offset + size" for each block).
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    FreeBlock& block = blocks[i];
    if (block.offset + block.size == offset) {
      block.size += size;
      if (i + 1 < blocks.size() && block.offset + block.size == blocks[i + 1].offset) {
        block.size += blocks[i + 1].size;
        blocks.erase(blocks.begin() + static_cast<std::ptrdiff_t>(i + 1));
      }
      return;
    }
    if (offset + size == block.offset) {
      block.offset = offset;
      block.size += size;
      if (i > 0 && blocks[i - 1].offset + blocks[i - 1].size == block.offset) {
        blocks[i - 1].size += block.size;
        blocks.erase(blocks.begin() + static_cast<std::ptrdiff_t>(i));
      }
      return;
    }
  }
  auto position = std::find_if(blocks.begin(), blocks.end(),
                               [&](const FreeBlock& b) { return b.offset >= offset; });
  blocks.insert(position, FreeBlock{offset, size});
}

Bytes DynamicAllocator::chunk_size(ChunkId chunk) const {
  return chunk >= 0 && chunk < chunk_count() ? chunks_[static_cast<std::size_t>(chunk)].high_water
                                             : 0;
}

std::vector<Bytes> DynamicAllocator::chunk_sizes() const {
  std::vector<Bytes> sizes;
  sizes.reserve(chunks_.size());
  for (const Chunk& chunk : chunks_) sizes.push_back(chunk.high_water);
  return sizes;
}

Bytes DynamicAllocator::total_size() const {
  Bytes total = 0;
  for (const Chunk& chunk : chunks_) total += chunk.high_water;
  return total;
}

std::vector<Interval<Offset>> DynamicAllocator::free_blocks(ChunkId chunk) const {
  std::vector<Interval<Offset>> result;
  if (chunk < 0 || chunk >= chunk_count()) return result;
  for (const FreeBlock& block : chunks_[static_cast<std::size_t>(chunk)].blocks) {
    result.push_back({block.offset, block.offset + block.size});
  }
  return result;
}

}  // namespace galloc
