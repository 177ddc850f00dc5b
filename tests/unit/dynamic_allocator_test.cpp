// DynamicAllocator: ggml's ggml_dyn_tallocr (best fit over free blocks, the reuse-factor rule
// for the last block of each chunk, coalescing on free), without its 256-block and 16-chunk caps.
//
// Free blocks are written as "[begin,end)" per chunk, in address order; the last block of a
// chunk is its tail, which runs to the chunk's capacity (the max size, or the request that
// opened the chunk when that was larger).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <ostream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "dynamic_allocator_index.hpp"  // kIndexThreshold
#include "galloc/dynamic_allocator.hpp"

namespace galloc {

// Readable failure messages (gtest finds it by argument-dependent lookup).
void PrintTo(const ChunkAddress& address, std::ostream* out) {
  *out << "{chunk " << address.chunk << ", offset " << address.offset << "}";
}

namespace {

std::string blocks(const DynamicAllocator& allocator, ChunkId chunk) {
  std::string text;
  for (const Interval<Offset>& block : allocator.free_blocks(chunk)) {
    if (!text.empty()) text += " ";
    text += "[" + std::to_string(block.lower) + "," + std::to_string(block.upper) + ")";
  }
  return text;
}

ChunkAddress at(ChunkId chunk, Offset offset) { return {chunk, offset}; }

// ---------------------------------------------------------------------------------------------
// Best fit

// Free blocks of 16, 32 and 24 bytes between live ones; each request takes the smallest block
// that fits, wherever it is.
//
//   0    16   24        56   64      88   96
//   [free][B ][  free   ][D ][ free  ][F ][tail ...
TEST(DynamicAllocator, BestFitTakesTheSmallestBlockThatFits) {
  DynamicAllocator allocator(8, 1024);
  const ChunkAddress a = allocator.allocate(16);
  EXPECT_EQ(allocator.allocate(8), at(0, 16));
  const ChunkAddress c = allocator.allocate(32);
  EXPECT_EQ(allocator.allocate(8), at(0, 56));
  const ChunkAddress e = allocator.allocate(24);
  EXPECT_EQ(allocator.allocate(8), at(0, 88));
  allocator.free(a, 16);
  allocator.free(c, 32);
  allocator.free(e, 24);
  EXPECT_EQ(blocks(allocator, 0), "[0,16) [24,56) [64,88) [96,1024)");

  EXPECT_EQ(allocator.allocate(20), at(0, 64));  // the 24-byte block, not the 32
  EXPECT_EQ(allocator.allocate(12), at(0, 0));   // 16 after alignment: exact fit
  EXPECT_EQ(allocator.allocate(32), at(0, 24));  // the only block left that fits
  EXPECT_EQ(blocks(allocator, 0), "[96,1024)");
  // Nothing but the tail is left: it serves (and grows the chunk).
  EXPECT_EQ(allocator.allocate(40), at(0, 96));
  EXPECT_EQ(allocator.chunk_size(0), 136u);
}

// A free block in the middle is used before the tail, even when the tail would fit better.
TEST(DynamicAllocator, InnerBlocksBeforeTheTail) {
  DynamicAllocator allocator(8, 1024);
  const ChunkAddress a = allocator.allocate(64);
  allocator.allocate(8);
  allocator.free(a, 64);
  EXPECT_EQ(allocator.allocate(8), at(0, 0));
  EXPECT_EQ(allocator.chunk_size(0), 72u);
}

// Two inner blocks of the same size: the later one wins (ggml compares with <=).
TEST(DynamicAllocator, TiesGoToTheLaterBlock) {
  DynamicAllocator allocator(8, 1024);
  const ChunkAddress a = allocator.allocate(16);
  allocator.allocate(16);
  const ChunkAddress c = allocator.allocate(16);
  allocator.allocate(16);
  allocator.free(a, 16);
  allocator.free(c, 16);
  EXPECT_EQ(blocks(allocator, 0), "[0,16) [32,48) [64,1024)");
  EXPECT_EQ(allocator.allocate(16), at(0, 32));
  EXPECT_EQ(allocator.allocate(16), at(0, 0));
}

// The best size is tracked per chunk, as upstream does: the last chunk with any fitting inner
// block wins, even when an earlier chunk has a tighter one. Max size 32.
//
//   chunk 0: [free 8][b][free 8][d]        chunk 1: [free 16   ][f][free 8]
//   allocate(8) -> chunk 1 offset 0 (a global best fit would take chunk 0 offset 0)
TEST(DynamicAllocator, BestFitIsPerChunkAndTheLastChunkWins) {
  DynamicAllocator allocator(8, 32);
  const ChunkAddress a = allocator.allocate(8);
  allocator.allocate(8);
  const ChunkAddress c = allocator.allocate(8);
  allocator.allocate(8);
  const ChunkAddress e = allocator.allocate(16);
  allocator.allocate(8);
  const ChunkAddress g = allocator.allocate(8);
  ASSERT_EQ(e, at(1, 0));
  ASSERT_EQ(g, at(1, 24));
  allocator.free(a, 8);
  allocator.free(c, 8);
  allocator.free(e, 16);
  allocator.free(g, 8);
  EXPECT_EQ(blocks(allocator, 0), "[0,8) [16,24)");
  EXPECT_EQ(blocks(allocator, 1), "[0,16) [24,32)");
  EXPECT_EQ(allocator.allocate(8), at(1, 0));
}

// ---------------------------------------------------------------------------------------------
// Coalescing on free
//
//   0    16   32   48   64
//   [ A ][ B ][ C ][ D ][tail ...

class DynamicAllocatorCoalescing : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 4; ++i) blocks_.push_back(allocator_.allocate(16));
  }
  void release(int i) { allocator_.free(blocks_[static_cast<std::size_t>(i)], 16); }
  DynamicAllocator allocator_{8, 1024};
  std::vector<ChunkAddress> blocks_;
};

TEST_F(DynamicAllocatorCoalescing, NoNeighbourInsertsInAddressOrder) {
  release(2);
  release(0);
  EXPECT_EQ(blocks(allocator_, 0), "[0,16) [32,48) [64,1024)");
}

TEST_F(DynamicAllocatorCoalescing, MergesWithThePreviousBlock) {
  release(0);
  release(1);
  EXPECT_EQ(blocks(allocator_, 0), "[0,32) [64,1024)");
}

TEST_F(DynamicAllocatorCoalescing, MergesWithTheNextBlock) {
  release(1);
  release(0);
  EXPECT_EQ(blocks(allocator_, 0), "[0,32) [64,1024)");
}

TEST_F(DynamicAllocatorCoalescing, MergesWithBothNeighbours) {
  release(0);
  release(2);
  release(1);
  EXPECT_EQ(blocks(allocator_, 0), "[0,48) [64,1024)");
}

TEST_F(DynamicAllocatorCoalescing, MergesIntoTheTailWhichKeepsTheHighWaterMark) {
  release(3);
  EXPECT_EQ(blocks(allocator_, 0), "[48,1024)");
  release(1);
  release(2);
  EXPECT_EQ(blocks(allocator_, 0), "[16,1024)");
  release(0);
  EXPECT_EQ(blocks(allocator_, 0), "[0,1024)");
  EXPECT_EQ(allocator_.chunk_size(0), 64u);  // a chunk never shrinks
}

// A tensor's tail freed early (ggml_gallocr_free_extra_space) is a free like any other.
TEST_F(DynamicAllocatorCoalescing, PartialFreeOfATail) {
  allocator_.free({0, blocks_[1].offset + 8}, 8);  // the upper half of B
  EXPECT_EQ(blocks(allocator_, 0), "[24,32) [64,1024)");
  release(2);
  EXPECT_EQ(blocks(allocator_, 0), "[24,48) [64,1024)");
}

// ---------------------------------------------------------------------------------------------
// The last block of each chunk: the reuse factor high_water - offset - size

// reuse >= 0 (no new memory) beats reuse < 0 (the chunk grows), whatever the order. Max 32.
//
//   chunk 0: [X 24][tail 8]  high water 24: allocate(8) there grows it to 32 (reuse -8)
//   chunk 1: [tail 32]       high water 16 (Y freed): allocate(8) fits below it (reuse 8)
TEST(DynamicAllocator, TailWithinTheHighWaterBeatsATailThatGrows) {
  DynamicAllocator allocator(8, 32);
  EXPECT_EQ(allocator.allocate(24), at(0, 0));
  const ChunkAddress y = allocator.allocate(16);
  ASSERT_EQ(y, at(1, 0));
  allocator.free(y, 16);
  EXPECT_EQ(allocator.allocate(8), at(1, 0));
  EXPECT_EQ(allocator.chunk_sizes(), (std::vector<Bytes>{24, 16}));
}

// Among tails that need no new memory, the one that leaves the least unused wins (reuse 0
// beats reuse 8, though it comes later).
TEST(DynamicAllocator, SmallestNonNegativeReuseWins) {
  DynamicAllocator allocator(8, 32);
  const ChunkAddress x = allocator.allocate(24);
  const ChunkAddress y = allocator.allocate(16);
  ASSERT_EQ(y, at(1, 0));
  allocator.free(x, 24);  // chunk 0: tail [0,32), high water 24: reuse 24 - 0 - 16 = 8
  allocator.free(y, 16);  // chunk 1: tail [0,32), high water 16: reuse 16 - 0 - 16 = 0
  EXPECT_EQ(allocator.allocate(16), at(1, 0));
  EXPECT_EQ(allocator.chunk_sizes(), (std::vector<Bytes>{24, 16}));
}

// When every tail must grow its chunk, the one that grows least wins. Max 64.
//
//   chunk 0: tail [0,64), high water 24                 allocate(40): grows by 16 (reuse -16)
//   chunk 1: [Z 16][tail [16,64)], high water 48        allocate(40): grows by 8  (reuse -8)
TEST(DynamicAllocator, LeastGrowthWinsWhenEveryTailMustGrow) {
  DynamicAllocator allocator(8, 64);
  const ChunkAddress x = allocator.allocate(24);
  const ChunkAddress y = allocator.allocate(48);  // does not fit chunk 0's tail of 40
  ASSERT_EQ(y, at(1, 0));
  allocator.free(y, 48);
  EXPECT_EQ(allocator.allocate(16), at(1, 0));  // reuse 32 in chunk 1 beats -16 in chunk 0
  allocator.free(x, 24);
  EXPECT_EQ(blocks(allocator, 0), "[0,64)");
  EXPECT_EQ(blocks(allocator, 1), "[16,64)");
  EXPECT_EQ(allocator.allocate(40), at(1, 16));
  EXPECT_EQ(allocator.chunk_sizes(), (std::vector<Bytes>{24, 56}));
}

// With a 32-bit size_t, upstream's reuse wraps to 2^32 - growth and reads as non-negative when
// widened to int64_t, so when every tail must grow, the smallest 2^32 - growth wins: the tail
// that grows MOST (ggml commit 058128a6 on 32-bit ABIs). The same state as above: chunk 0
// grows by 16, chunk 1 by 8, and chunk 0 wins.
TEST(DynamicAllocator, WithA32BitSizeTheTailThatGrowsMostWins) {
  DynamicAllocator allocator(8, 64, 32);
  const ChunkAddress x = allocator.allocate(24);
  const ChunkAddress y = allocator.allocate(48);
  ASSERT_EQ(y, at(1, 0));
  allocator.free(y, 48);
  EXPECT_EQ(allocator.allocate(16), at(1, 0));
  allocator.free(x, 24);
  EXPECT_EQ(allocator.allocate(40), at(0, 0));
  EXPECT_EQ(allocator.chunk_sizes(), (std::vector<Bytes>{40, 48}));
}

// With a 32-bit size_t the chunks are capped at SIZE_MAX / 2 = 2^31 - 1, as upstream caps
// them there, and a 3 GiB plan takes two chunks (one allocation gets at most PTRDIFF_MAX).
TEST(DynamicAllocator, WithA32BitSizeChunksStayBelowTwoGiB) {
  constexpr Bytes kGiB = Bytes{1} << 30;
  DynamicAllocator allocator(32, kUnlimited, 32);
  EXPECT_EQ(allocator.max_chunk_size(), (Bytes{1} << 31) - 1);
  EXPECT_EQ(allocator.allocate(kGiB - 4096), at(0, 0));
  EXPECT_EQ(allocator.allocate(kGiB - 4096), at(0, kGiB - 4096));
  EXPECT_EQ(allocator.allocate(kGiB - 4096), at(1, 0));
  EXPECT_EQ(allocator.chunk_sizes(), (std::vector<Bytes>{2 * (kGiB - 4096), kGiB - 4096}));
}

// Equal growth: the earlier chunk keeps it (a later one must be strictly better).
TEST(DynamicAllocator, EqualReuseGoesToTheEarlierChunk) {
  DynamicAllocator allocator(8, 32);
  EXPECT_EQ(allocator.allocate(24), at(0, 0));  // chunk 0 tail [24,32), high water 24
  EXPECT_EQ(allocator.allocate(16), at(1, 0));  // chunk 1 tail [16,32), high water 16
  EXPECT_EQ(allocator.allocate(8), at(0, 24));  // both grow by 8
  EXPECT_EQ(allocator.chunk_sizes(), (std::vector<Bytes>{32, 16}));
}

// ---------------------------------------------------------------------------------------------
// Chunks and the max size

TEST(DynamicAllocator, OpensAChunkWhenNoneHasRoom) {
  DynamicAllocator allocator(8, 32);
  EXPECT_EQ(allocator.chunk_count(), 0);
  EXPECT_EQ(allocator.allocate(24), at(0, 0));
  EXPECT_EQ(allocator.allocate(16), at(1, 0));  // chunk 0's tail has 8 bytes
  EXPECT_EQ(allocator.allocate(8), at(0, 24));
  EXPECT_EQ(allocator.chunk_count(), 2);
  EXPECT_EQ(allocator.chunk_sizes(), (std::vector<Bytes>{32, 16}));
  EXPECT_EQ(allocator.total_size(), 48u);
  for (Bytes size : allocator.chunk_sizes()) EXPECT_LE(size, allocator.max_chunk_size());
}

// A request above the max size gets a chunk of exactly its size, with no tail; the next
// request needs another chunk. Freed, the big block serves requests like any tail.
TEST(DynamicAllocator, ARequestLargerThanTheMaxSizeGetsItsOwnChunk) {
  DynamicAllocator allocator(8, 32);
  const ChunkAddress big = allocator.allocate(48);
  EXPECT_EQ(big, at(0, 0));
  EXPECT_EQ(blocks(allocator, 0), "");
  EXPECT_EQ(allocator.allocate(8), at(1, 0));
  EXPECT_EQ(allocator.chunk_sizes(), (std::vector<Bytes>{48, 8}));
  allocator.free(big, 48);
  EXPECT_EQ(blocks(allocator, 0), "[0,48)");
  EXPECT_EQ(allocator.allocate(40), at(0, 0));  // reuse 48 - 0 - 40 = 8 >= 0
  EXPECT_EQ(allocator.chunk_sizes(), (std::vector<Bytes>{48, 8}));
}

TEST(DynamicAllocator, UnlimitedMaxSizeIsClampedToHalfTheAddressSpace) {
  const DynamicAllocator allocator(8, kUnlimited, 64);
  EXPECT_EQ(allocator.max_chunk_size(), kUnlimited / 2);
  const DynamicAllocator small(8, 100);
  EXPECT_EQ(small.max_chunk_size(), 100u);
}

TEST(DynamicAllocator, ChunkQueriesOutOfRange) {
  DynamicAllocator allocator(8, 32);
  allocator.allocate(8);
  EXPECT_EQ(allocator.chunk_size(1), 0u);
  EXPECT_EQ(allocator.chunk_size(-1), 0u);
  EXPECT_TRUE(allocator.free_blocks(1).empty());
  EXPECT_TRUE(allocator.free_blocks(-1).empty());
}

TEST(DynamicAllocator, ResetForgetsEverything) {
  DynamicAllocator allocator(8, 32);
  allocator.allocate(24);
  allocator.allocate(24);
  ASSERT_EQ(allocator.chunk_count(), 2);
  allocator.reset();
  EXPECT_EQ(allocator.chunk_count(), 0);
  EXPECT_EQ(allocator.total_size(), 0u);
  EXPECT_EQ(allocator.allocate(16), at(0, 0));
}

// ---------------------------------------------------------------------------------------------
// Alignment

TEST(DynamicAllocator, SizesAreRoundedUpToTheAlignment) {
  DynamicAllocator allocator(16, 1024);
  EXPECT_EQ(allocator.alignment(), 16u);
  const ChunkAddress a = allocator.allocate(5);
  EXPECT_EQ(a, at(0, 0));
  EXPECT_EQ(allocator.allocate(1), at(0, 16));
  EXPECT_EQ(allocator.allocate(16), at(0, 32));
  EXPECT_EQ(allocator.chunk_size(0), 48u);
  allocator.free(a, 5);  // frees the 16 bytes it took
  EXPECT_EQ(blocks(allocator, 0), "[0,16) [48,1024)");
  EXPECT_EQ(allocator.allocate(0), at(0, 0));  // 0 bytes: a zero-size block is taken
  EXPECT_EQ(allocator.allocate(9), at(0, 0));
}

TEST(DynamicAllocator, AlignmentZeroMeansNone) {
  DynamicAllocator allocator(0, 1024);
  EXPECT_EQ(allocator.alignment(), 1u);
  EXPECT_EQ(allocator.allocate(3), at(0, 0));
  EXPECT_EQ(allocator.allocate(5), at(0, 3));
  EXPECT_EQ(allocator.chunk_size(0), 8u);
}

// ---------------------------------------------------------------------------------------------
// No fixed limits (ggml: 256 free blocks per chunk, then abort; 16 chunks, the last unbounded)

TEST(DynamicAllocator, MoreThan256FreeBlocks) {
  DynamicAllocator allocator(8, kUnlimited);
  constexpr int kCount = 600;
  std::vector<ChunkAddress> addresses;
  for (int i = 0; i < kCount; ++i) addresses.push_back(allocator.allocate(8));
  std::set<Offset> freed;
  for (int i = 0; i < kCount; i += 2) {
    allocator.free(addresses[static_cast<std::size_t>(i)], 8);
    freed.insert(addresses[static_cast<std::size_t>(i)].offset);
  }
  EXPECT_EQ(allocator.free_blocks(0).size(), kCount / 2 + 1u);  // + the tail
  std::set<Offset> reused;
  for (int i = 0; i < kCount / 2; ++i) {
    const ChunkAddress address = allocator.allocate(8);
    EXPECT_EQ(address.chunk, 0);
    reused.insert(address.offset);
  }
  EXPECT_EQ(reused, freed);
  EXPECT_EQ(allocator.free_blocks(0).size(), 1u);
  EXPECT_EQ(allocator.chunk_size(0), kCount * 8u);
}

TEST(DynamicAllocator, MoreThan16Chunks) {
  DynamicAllocator allocator(8, 8);
  constexpr int kCount = 40;
  std::vector<ChunkAddress> addresses;
  for (int i = 0; i < kCount; ++i) {
    addresses.push_back(allocator.allocate(8));
    EXPECT_EQ(addresses.back(), at(i, 0));
  }
  EXPECT_EQ(allocator.chunk_count(), kCount);
  EXPECT_EQ(allocator.chunk_sizes(), std::vector<Bytes>(kCount, 8));
  EXPECT_EQ(allocator.total_size(), kCount * 8u);
  for (const ChunkAddress& address : addresses) allocator.free(address, 8);
  // Every chunk's tail fits exactly (reuse 0): the first one keeps it.
  EXPECT_EQ(allocator.allocate(8), at(0, 0));
  EXPECT_EQ(allocator.chunk_count(), kCount);
}

// ---------------------------------------------------------------------------------------------
// The search trees against upstream's scans
//
// ReferenceDynamicAllocator is the array-and-scan allocator as it was before the search trees
// (a line-for-line port of ggml_dyn_tallocr without its caps, checked against stock ggml by
// tests/differential). Random operation sequences must give the same addresses, free blocks
// and chunk sizes from both.

class ReferenceDynamicAllocator {
 public:
  ReferenceDynamicAllocator(Bytes alignment, Bytes max_chunk_size)
      : alignment_(alignment == 0 ? 1 : alignment),
        max_chunk_size_(std::min(max_chunk_size, std::numeric_limits<Bytes>::max() / 2)) {}

  ChunkAddress allocate(Bytes size) {
    size = align_up(size, alignment_);
    int best_chunk = -1;
    int best_block = -1;
    for (int c = 0; c < static_cast<int>(chunks_.size()); ++c) {
      const auto& blocks = chunks_[static_cast<std::size_t>(c)].blocks;
      Bytes best_size = std::numeric_limits<Bytes>::max();
      for (int i = 0; i + 1 < static_cast<int>(blocks.size()); ++i) {
        const Block& block = blocks[static_cast<std::size_t>(i)];
        if (block.size >= size && block.size <= best_size) {
          best_chunk = c;
          best_block = i;
          best_size = block.size;
        }
      }
    }
    if (best_block == -1) {
      std::int64_t best_reuse = std::numeric_limits<std::int64_t>::min();
      for (int c = 0; c < static_cast<int>(chunks_.size()); ++c) {
        const Chunk& chunk = chunks_[static_cast<std::size_t>(c)];
        if (chunk.blocks.empty()) continue;
        const Block& block = chunk.blocks.back();
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
      Chunk chunk;
      chunk.blocks.push_back({0, std::max(size, max_chunk_size_)});
      chunks_.push_back(std::move(chunk));
      best_chunk = static_cast<int>(chunks_.size()) - 1;
      best_block = 0;
    }
    Chunk& chunk = chunks_[static_cast<std::size_t>(best_chunk)];
    Block& block = chunk.blocks[static_cast<std::size_t>(best_block)];
    const ChunkAddress address{best_chunk, block.offset};
    block.offset += size;
    block.size -= size;
    if (block.size == 0) chunk.blocks.erase(chunk.blocks.begin() + best_block);
    chunk.high_water = std::max(chunk.high_water, address.offset + size);
    return address;
  }

  void free(ChunkAddress address, Bytes size) {
    size = align_up(size, alignment_);
    auto& blocks = chunks_[static_cast<std::size_t>(address.chunk)].blocks;
    const Offset offset = address.offset;
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      Block& block = blocks[i];
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
    auto position = std::find_if(blocks.begin(), blocks.end(), [&](const Block& b) { return b.offset >= offset; });
    blocks.insert(position, Block{offset, size});
  }

  [[nodiscard]] int chunk_count() const { return static_cast<int>(chunks_.size()); }
  [[nodiscard]] std::vector<Bytes> chunk_sizes() const {
    std::vector<Bytes> sizes;
    for (const Chunk& chunk : chunks_) sizes.push_back(chunk.high_water);
    return sizes;
  }
  // In array order, which is address order except after odd input (empty blocks).
  [[nodiscard]] std::vector<Interval<Offset>> free_blocks(ChunkId chunk) const {
    std::vector<Interval<Offset>> result;
    for (const Block& block : chunks_[static_cast<std::size_t>(chunk)].blocks) {
      result.push_back({block.offset, block.offset + block.size});
    }
    return result;
  }

 private:
  struct Block {
    Offset offset;
    Bytes size;
  };
  struct Chunk {
    std::vector<Block> blocks;
    Bytes high_water = 0;
  };
  Bytes alignment_;
  Bytes max_chunk_size_;
  std::vector<Chunk> chunks_;
};

// What a random sequence draws from.
struct OracleProfile {
  Bytes alignment;
  Bytes max_chunk_size;
  std::vector<Bytes> sizes;     // requests (a few distinct values give ties)
  int live_target;              // live ranges kept about this many
  double zero_free_chance;      // frees of 0 bytes: empty blocks, the arrays' odd case
  double double_free_chance;    // frees of free memory: overlapping blocks
  double wild_free_chance = 0;  // frees of any range, allocated or not, up to 2^64
};

struct LiveRange {
  ChunkAddress address;
  Bytes size;
};

struct OracleStats {
  int sequences = 0;
  int indexed_sequences = 0;  // sequences that used the search trees at some point
  int fallbacks = 0;          // from the trees back to the scans
};

void compare_state(const ReferenceDynamicAllocator& reference, const DynamicAllocator& allocator,
                   const std::string& where) {
  ASSERT_EQ(reference.chunk_sizes(), allocator.chunk_sizes()) << where;
  for (ChunkId c = 0; c < reference.chunk_count(); ++c) {
    ASSERT_EQ(reference.free_blocks(c), allocator.free_blocks(c)) << where << " chunk " << c;
  }
}

// One random sequence; every allocation's address is compared, the whole state every few
// operations and at the end.
void run_oracle_sequence(const OracleProfile& profile, std::uint64_t seed, int operations, OracleStats& stats) {
  std::mt19937_64 rng(seed);
  ReferenceDynamicAllocator reference(profile.alignment, profile.max_chunk_size);
  DynamicAllocator allocator(profile.alignment, profile.max_chunk_size);
  std::vector<LiveRange> live;
  std::vector<LiveRange> freed;  // for double frees
  bool was_indexed = false;
  auto chance = [&](double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; };
  auto pick = [&](std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng); };
  const Bytes alignment = std::max<Bytes>(profile.alignment, 1);

  // Bursts: allocate up to the target, then free at random down to half of it, which leaves
  // many holes at once (a best-fit allocator under steady churn keeps few).
  bool growing = true;
  for (int op = 0; op < operations; ++op) {
    const std::string where = "seed " + std::to_string(seed) + " op " + std::to_string(op);
    if (static_cast<int>(live.size()) >= profile.live_target) growing = false;
    if (static_cast<int>(live.size()) <= profile.live_target / 2) growing = true;
    const bool grow = live.empty() || chance(growing ? 0.85 : 0.1);
    const bool indexed_before = allocator.indexed();
    if (grow) {
      const Bytes size = profile.sizes[pick(profile.sizes.size())];
      const ChunkAddress expected = reference.allocate(size);
      const ChunkAddress got = allocator.allocate(size);
      ASSERT_EQ(expected, got) << where << " allocate(" << size << ")";
      live.push_back({got, align_up(size, alignment)});
    } else if (chance(profile.zero_free_chance)) {
      const LiveRange& range = live[pick(live.size())];
      const Offset at = range.address.offset + (chance(0.5) ? 0 : range.size);
      reference.free({range.address.chunk, at}, 0);
      allocator.free({range.address.chunk, at}, 0);
    } else if (chance(profile.wild_free_chance)) {
      // Anything at all: ranges past the high water or the capacity, ends past 2^64. Upstream
      // only does arithmetic on them; where the result is a well-formed list the trees keep it.
      const ChunkId chunk = static_cast<ChunkId>(pick(static_cast<std::size_t>(reference.chunk_count())));
      const Bytes limit = Bytes{1} << (rng() % 64);
      const Offset at = chance(0.5) ? rng() % limit : rng();
      const Bytes size = chance(0.5) ? rng() % limit : rng();
      reference.free({chunk, at}, size);
      allocator.free({chunk, at}, size);
    } else if (!freed.empty() && chance(profile.double_free_chance)) {
      const LiveRange& range = freed[pick(freed.size())];
      reference.free(range.address, range.size);
      allocator.free(range.address, range.size);
    } else {
      // Free a live range whole, or an aligned piece of it (ggml frees a tensor's tail early;
      // the rest stays live).
      const std::size_t i = pick(live.size());
      LiveRange range = live[i];
      live[i] = live.back();
      live.pop_back();
      const Bytes units = range.size / alignment;
      if (units >= 2 && chance(0.3)) {
        const Bytes cut = (1 + pick(static_cast<std::size_t>(units - 1))) * alignment;
        LiveRange head{range.address, cut};
        LiveRange tail{{range.address.chunk, range.address.offset + cut}, range.size - cut};
        if (chance(0.5)) std::swap(head, tail);
        live.push_back(tail);  // stays live
        range = head;
      }
      reference.free(range.address, range.size);
      allocator.free(range.address, range.size);
      freed.push_back(range);
    }
    if (indexed_before && !allocator.indexed()) ++stats.fallbacks;
    if (allocator.indexed()) was_indexed = true;
    if (op % 16 == 0) {
      compare_state(reference, allocator, where);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
  compare_state(reference, allocator, "seed " + std::to_string(seed) + " at the end");
  ++stats.sequences;
  if (was_indexed) ++stats.indexed_sequences;
}

// Requests of a few sizes, many equal (ties), small chunks (many of them).
std::vector<Bytes> small_sizes(std::mt19937_64& rng, Bytes alignment) {
  std::vector<Bytes> sizes;
  const int distinct = 2 + static_cast<int>(rng() % 12);
  for (int i = 0; i < distinct; ++i) sizes.push_back((1 + rng() % 8) * alignment - rng() % alignment);
  return sizes;
}

TEST(DynamicAllocatorOracle, ManyBlocksInOneChunkMatchTheScans) {
  OracleStats stats;
  std::mt19937_64 rng(1);
  for (int s = 0; s < 60; ++s) {
    const Bytes alignment = Bytes{1} << (rng() % 6);
    const OracleProfile profile{alignment, kUnlimited, small_sizes(rng, alignment), 600, 0, 0};
    run_oracle_sequence(profile, 1000 + static_cast<std::uint64_t>(s), 3000, stats);
    if (HasFatalFailure()) return;
  }
  EXPECT_EQ(stats.sequences, 60);
  EXPECT_GE(stats.indexed_sequences, 50);  // the trees, not the scans, were compared
}

TEST(DynamicAllocatorOracle, ManyChunksMatchTheScans) {
  OracleStats stats;
  std::mt19937_64 rng(2);
  for (int s = 0; s < 60; ++s) {
    const Bytes alignment = Bytes{1} << (rng() % 5);
    // A max size of a few requests: hundreds of chunks, tails of every reuse sign, requests
    // above the max size (chunks without a tail).
    const Bytes max_size = alignment * (1 + rng() % 24);
    const OracleProfile profile{alignment, max_size, small_sizes(rng, alignment), 300, 0, 0};
    run_oracle_sequence(profile, 2000 + static_cast<std::uint64_t>(s), 3000, stats);
    if (HasFatalFailure()) return;
  }
  EXPECT_EQ(stats.sequences, 60);
  EXPECT_GE(stats.indexed_sequences, 50);
}

// Requests near 2^62, 2^63 and 2^64: the reuse factor wraps and reads with either sign,
// as upstream's size_t arithmetic does; chunks opened by huge requests exceed 2^63.
TEST(DynamicAllocatorOracle, HugeSizesWrapLikeUpstream) {
  OracleStats stats;
  std::mt19937_64 rng(3);
  for (int s = 0; s < 60; ++s) {
    const Bytes alignment = Bytes{1} << (rng() % 4);
    std::vector<Bytes> sizes = small_sizes(rng, alignment);
    for (Bytes base :
         {Bytes{1} << 62, Bytes{1} << 63, (Bytes{1} << 63) + (Bytes{1} << 62), std::numeric_limits<Bytes>::max()}) {
      sizes.push_back(base - rng() % 64 * alignment);
      sizes.push_back(base - rng() % 64 * alignment);
    }
    const Bytes max_size = (s % 3 == 0)   ? kUnlimited
                           : (s % 3 == 1) ? (Bytes{1} << 62) + rng() % 4096
                                          : alignment * (1 + rng() % 16);
    const OracleProfile profile{alignment, max_size, sizes, 200, 0, 0, s % 2 == 0 ? 0.01 : 0.0};
    run_oracle_sequence(profile, 3000 + static_cast<std::uint64_t>(s), 2000, stats);
    if (HasFatalFailure()) return;
  }
  EXPECT_EQ(stats.sequences, 60);
  EXPECT_GE(stats.indexed_sequences, 40);
}

// Frees of 0 bytes and of free memory make lists the trees do not model (empty and
// overlapping blocks): the allocator falls back to the scans and indexes again once the
// lists are well formed. Results stay the scans'.
TEST(DynamicAllocatorOracle, OddFreesFallBackToTheScans) {
  OracleStats stats;
  std::mt19937_64 rng(4);
  for (int s = 0; s < 60; ++s) {
    const Bytes alignment = Bytes{1} << (rng() % 4);
    const Bytes max_size = s % 2 == 0 ? kUnlimited : alignment * (1 + rng() % 24);
    std::vector<Bytes> sizes = small_sizes(rng, alignment);
    if (s % 4 == 0) sizes.push_back(0);  // 0-byte tensors, freed as 0 bytes
    const OracleProfile profile{alignment, max_size, sizes, 500, 0.002, 0.001};
    run_oracle_sequence(profile, 4000 + static_cast<std::uint64_t>(s), 3000, stats);
    if (HasFatalFailure()) return;
  }
  EXPECT_EQ(stats.sequences, 60);
  EXPECT_GE(stats.indexed_sequences, 30);
  EXPECT_GE(stats.fallbacks, 30);
}

// The mode switches themselves: past the threshold the trees take over; a 0-byte free that
// touches no block (an empty block upstream) sends the allocator back to the scans.
TEST(DynamicAllocatorOracle, IndexesPastTheThresholdAndFallsBackOnAnEmptyBlock) {
  DynamicAllocator allocator(8, kUnlimited);
  ReferenceDynamicAllocator reference(8, kUnlimited);
  std::vector<ChunkAddress> addresses;
  for (std::size_t i = 0; i < 2 * detail::kIndexThreshold + 2; ++i) {
    addresses.push_back(allocator.allocate(8));
    ASSERT_EQ(reference.allocate(8), addresses.back());
  }
  EXPECT_FALSE(allocator.indexed());  // one block, the tail
  for (std::size_t i = 0; i < addresses.size(); i += 2) {
    allocator.free(addresses[i], 8);
    reference.free(addresses[i], 8);
  }
  EXPECT_TRUE(allocator.indexed());
  compare_state(reference, allocator, "indexed");
  // Inside a live block: touches nothing.
  allocator.free({0, addresses[1].offset + 4}, 0);
  reference.free({0, addresses[1].offset + 4}, 0);
  EXPECT_FALSE(allocator.indexed());
  compare_state(reference, allocator, "after the empty block");
  for (int i = 0; i < 40; ++i) ASSERT_EQ(reference.allocate(8), allocator.allocate(8));
  compare_state(reference, allocator, "after refilling");
}

// A reuse factor of exactly INT64_MIN is never taken upstream (it is not > the initial best),
// so the request opens a chunk. Chunk 130, freed: one block [0, 2^64 - 8), high water the
// same; a request of 2^63 - 8 gives reuse 2^64 - 8 - (2^63 - 8) = 2^63, INT64_MIN as signed.
TEST(DynamicAllocatorOracle, AReuseOfInt64MinIsNeverTaken) {
  DynamicAllocator allocator(8, 64);
  ReferenceDynamicAllocator reference(8, 64);
  for (int i = 0; i < 130; ++i) ASSERT_EQ(reference.allocate(64), allocator.allocate(64));
  const Bytes huge = std::numeric_limits<Bytes>::max() - 7;
  const ChunkAddress big = allocator.allocate(huge);
  ASSERT_EQ(reference.allocate(huge), big);
  allocator.free(big, huge);
  reference.free(big, huge);
  ASSERT_TRUE(allocator.indexed());  // 131 chunks
  const Bytes request = (Bytes{1} << 63) - 8;
  EXPECT_EQ(reference.allocate(request), at(131, 0));
  EXPECT_EQ(allocator.allocate(request), at(131, 0));
  // One byte less is reuse INT64_MIN + 8 (negative, the largest there is): chunk 130 serves.
  EXPECT_EQ(reference.allocate(request - 8), at(130, 0));
  EXPECT_EQ(allocator.allocate(request - 8), at(130, 0));
  compare_state(reference, allocator, "end");
}

// The reuse factor wraps to a positive number when a block larger than 2^63 starts below the
// high water and the request exceeds the distance by more than 2^63 (only frees of memory
// that was never allocated make such a block). Upstream reads it as reuse >= 0 and takes it.
// Chunk 130 is full (high water 64); freeing [0, 2^63 + 128) there leaves one block, and a
// request of 2^63 + 80 has reuse 64 - (2^63 + 80) mod 2^64 = 2^63 - 16. Chunk 131 (high
// water 2000) gets the same block at 1000: reuse 2^63 + 920, negative, and loses.
TEST(DynamicAllocatorOracle, AReuseThatWrapsToPositiveIsTaken) {
  DynamicAllocator allocator(8, 64);
  ReferenceDynamicAllocator reference(8, 64);
  for (int i = 0; i < 131; ++i) ASSERT_EQ(reference.allocate(64), allocator.allocate(64));
  ASSERT_EQ(reference.allocate(2000), at(131, 0));
  ASSERT_EQ(allocator.allocate(2000), at(131, 0));
  const Bytes block = (Bytes{1} << 63) + 128;
  for (ChunkAddress address : {at(131, 1000), at(130, 0)}) {
    allocator.free(address, block);
    reference.free(address, block);
  }
  ASSERT_TRUE(allocator.indexed());
  const Bytes request = (Bytes{1} << 63) + 80;
  EXPECT_EQ(reference.allocate(request), at(130, 0));
  EXPECT_EQ(allocator.allocate(request), at(130, 0));
  compare_state(reference, allocator, "end");
}

// Adjacent free blocks are well formed (the trees keep them) though only odd input makes
// them: an empty block inside a live range stops the merge when the range is freed. A 0-byte
// free where they meet then merges them, as upstream's "ends here" branch does.
//
//   [P 0,8) [L 8,24) [Q 24,32) [S] [H ...]: free P and Q, 0 bytes at 16 (inside L: an empty
//   block), then L: P grows to [0,24) and does not reach Q past the empty block; allocate(0)
//   takes the empty block (the smallest inner one).
TEST(DynamicAllocatorOracle, AZeroByteFreeMergesAdjacentBlocks) {
  DynamicAllocator allocator(8, kUnlimited);
  ReferenceDynamicAllocator reference(8, kUnlimited);
  auto both_allocate = [&](Bytes size) {
    const ChunkAddress address = allocator.allocate(size);
    EXPECT_EQ(reference.allocate(size), address);
    return address;
  };
  auto both_free = [&](ChunkAddress address, Bytes size) {
    allocator.free(address, size);
    reference.free(address, size);
  };
  const ChunkAddress p = both_allocate(8);
  const ChunkAddress l = both_allocate(16);
  const ChunkAddress q = both_allocate(8);
  both_allocate(8);
  std::vector<ChunkAddress> holes;
  for (std::size_t i = 0; i < 2 * detail::kIndexThreshold; ++i) holes.push_back(both_allocate(8));
  both_free(p, 8);
  both_free(q, 8);
  both_free({0, 16}, 0);
  both_free(l, 16);
  EXPECT_EQ(blocks(allocator, 0).substr(0, 22), "[0,24) [16,16) [24,32)");
  EXPECT_EQ(both_allocate(0), at(0, 16));
  EXPECT_EQ(blocks(allocator, 0).substr(0, 13), "[0,24) [24,32");
  for (std::size_t i = 0; i < holes.size(); i += 2) both_free(holes[i], 8);
  ASSERT_TRUE(allocator.indexed());
  both_free({0, 24}, 0);
  EXPECT_TRUE(allocator.indexed());
  EXPECT_EQ(blocks(allocator, 0).substr(0, 7), "[0,32) ");
  compare_state(reference, allocator, "end");
}

TEST(DynamicAllocatorOracle, CopiesAreIndependent) {
  DynamicAllocator allocator(8, kUnlimited);
  std::vector<ChunkAddress> addresses;
  for (int i = 0; i < 400; ++i) addresses.push_back(allocator.allocate(8));
  for (std::size_t i = 0; i < addresses.size(); i += 2) allocator.free(addresses[i], 8);
  ASSERT_TRUE(allocator.indexed());
  DynamicAllocator copy = allocator;
  EXPECT_EQ(copy.allocate(8), allocator.allocate(8));
  EXPECT_EQ(copy.free_blocks(0), allocator.free_blocks(0));
  copy.allocate(8);
  EXPECT_NE(copy.free_blocks(0), allocator.free_blocks(0));
}

}  // namespace
}  // namespace galloc
