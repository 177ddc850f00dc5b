// DynamicAllocator: ggml's ggml_dyn_tallocr (best fit over free blocks, the reuse-factor rule
// for the last block of each chunk, coalescing on free), without its 256-block and 16-chunk caps.
//
// Free blocks are written as "[begin,end)" per chunk, in address order; the last block of a
// chunk is its tail, which runs to the chunk's capacity (the max size, or the request that
// opened the chunk when that was larger).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "galloc/dynamic_allocator.hpp"

namespace galloc {
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
  const DynamicAllocator allocator(8, kUnlimited);
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

}  // namespace
}  // namespace galloc
