// validate_placement on hand-made placements: each PlacementIssueKind is found, and good
// placements (tail frees included) pass.
//
// Drawings are time x address grids: a row per step, a column per 8 bytes, a letter per
// storage object, '.' for free bytes. Live intervals are half-open: a storage whose interval
// ends at step t is gone in row t.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "galloc/lifetimes.hpp"
#include "galloc/placement.hpp"
#include "galloc/plan.hpp"
#include "galloc/validator.hpp"
#include "support/random_graph.hpp"

namespace galloc {
namespace {

// Storage objects and their addresses, written down directly.
class Problem {
 public:
  explicit Problem(Bytes alignment = 8, Bytes max_size = kUnlimited) { add_allocator(alignment, max_size); }

  AllocatorId add_allocator(Bytes alignment, Bytes max_size) {
    lifetimes_.allocators.push_back({alignment, max_size});
    lifetimes_.buffer_allocator.push_back(static_cast<AllocatorId>(lifetimes_.allocators.size() - 1));
    placement_.chunk_sizes.emplace_back();
    return static_cast<AllocatorId>(lifetimes_.allocators.size() - 1);
  }
  void set_chunks(std::vector<Bytes> sizes, AllocatorId allocator = 0) {
    placement_.chunk_sizes[static_cast<std::size_t>(allocator)] = std::move(sizes);
  }
  // `size` bytes at chunk:offset, live over steps [from, to).
  StorageId add(Bytes size, Step from, Step to, ChunkId chunk, Offset offset, std::vector<TailFree> tails = {},
                AllocatorId allocator = 0) {
    StorageObject storage;
    storage.allocator = allocator;
    storage.size = size;
    storage.live = {from, to};
    storage.tail_frees = std::move(tails);
    lifetimes_.storages.push_back(std::move(storage));
    placement_.storage_address.push_back({chunk, offset});
    return static_cast<StorageId>(lifetimes_.storages.size() - 1);
  }
  [[nodiscard]] std::vector<PlacementIssue> validate() const { return validate_placement(lifetimes_, placement_); }
  Placement& placement() { return placement_; }

 private:
  GraphProblem lifetimes_;
  Placement placement_;
};

std::vector<PlacementIssueKind> kinds(const std::vector<PlacementIssue>& issues) {
  std::vector<PlacementIssueKind> result;
  for (const PlacementIssue& issue : issues) result.push_back(issue.kind);
  return result;
}

std::string describe(const std::vector<PlacementIssue>& issues) {
  std::string text;
  for (const PlacementIssue& issue : issues) text += issue.message + "\n";
  return text;
}

using Kinds = std::vector<PlacementIssueKind>;

// ---------------------------------------------------------------------------------------------
// Good placements

//        0       16      32
//   0    A A     B B
//   1    A A     B B
//   2    C C     B B      A ends at 2, C starts at 2: the same bytes, one after the other
//   3    C C D D          B ends at 3
TEST(ValidatePlacement, AcceptsReuseOverTime) {
  Problem p;
  p.add(16, 0, 2, 0, 0);   // A
  p.add(16, 0, 3, 0, 16);  // B
  p.add(16, 2, 4, 0, 0);   // C
  p.add(16, 3, 4, 0, 16);  // D
  p.set_chunks({32});
  EXPECT_TRUE(p.validate().empty()) << describe(p.validate());
}

TEST(ValidatePlacement, AcceptsAdjacentAddresses) {
  Problem p;
  p.add(16, 0, 4, 0, 0);
  p.add(8, 0, 4, 0, 16);
  p.add(8, 0, 4, 0, 24);
  p.set_chunks({32});
  EXPECT_TRUE(p.validate().empty()) << describe(p.validate());
}

TEST(ValidatePlacement, AcceptsAnEmptyProblem) {
  Problem p;
  EXPECT_TRUE(p.validate().empty());
}

// The same bytes at the same time, but in other chunks or other allocators: no overlap.
TEST(ValidatePlacement, ChunksAndAllocatorsAreSeparateAddressSpaces) {
  Problem p(8, 32);
  const AllocatorId other = p.add_allocator(8, kUnlimited);
  p.add(32, 0, 4, 0, 0);
  p.add(32, 0, 4, 1, 0);
  p.add(32, 0, 4, 0, 0, {}, other);
  p.set_chunks({32, 32});
  p.set_chunks({32}, other);
  EXPECT_TRUE(p.validate().empty()) << describe(p.validate());
}

// Zero-size storage objects occupy no bytes.
TEST(ValidatePlacement, ZeroSizeStoragesNeverOverlap) {
  Problem p;
  p.add(16, 0, 4, 0, 0);
  p.add(0, 1, 3, 0, 8);
  p.set_chunks({16});
  EXPECT_TRUE(p.validate().empty()) << describe(p.validate());
}

// A storage object above the max size is allowed a chunk of its own size.
TEST(ValidatePlacement, AChunkAboveTheMaxSizeForOneLargeStorageIsFine) {
  Problem p(8, 32);
  p.add(48, 0, 2, 0, 0);
  p.add(16, 0, 2, 1, 0);
  p.set_chunks({48, 16});
  EXPECT_TRUE(p.validate().empty()) << describe(p.validate());
}

// ---------------------------------------------------------------------------------------------
// Tail frees: bytes [begin, size) of a storage die at the tail's step, before the rest.
//
//        0       16      32
//   0    A A A A                 A: 32 bytes, live [0,4); its tail [16,32) dies at step 2
//   1    A A A A
//   2    A A B B                 B takes the freed tail from step 2
//   3    A A B B

TEST(ValidatePlacement, AFreedTailMayBeReused) {
  Problem p;
  p.add(32, 0, 4, 0, 0, {{2, 16}});  // A
  p.add(16, 2, 4, 0, 16);            // B
  p.set_chunks({32});
  EXPECT_TRUE(p.validate().empty()) << describe(p.validate());
}

TEST(ValidatePlacement, ATailIsLiveUntilItsStep) {
  Problem p;
  const StorageId a = p.add(32, 0, 4, 0, 0, {{2, 16}});
  const StorageId b = p.add(16, 1, 4, 0, 16);  // one step early
  p.set_chunks({32});
  const auto issues = p.validate();
  ASSERT_EQ(kinds(issues), (Kinds{PlacementIssueKind::kOverlap})) << describe(issues);
  EXPECT_EQ(std::min(issues[0].storage, issues[0].other), a);
  EXPECT_EQ(std::max(issues[0].storage, issues[0].other), b);
}

TEST(ValidatePlacement, TheHeadStaysLiveAfterTheTailIsFreed) {
  Problem p;
  p.add(32, 0, 4, 0, 0, {{2, 16}});
  p.add(16, 2, 4, 0, 8);  // reaches into A's head [0,16)
  p.set_chunks({32});
  EXPECT_EQ(kinds(p.validate()), (Kinds{PlacementIssueKind::kOverlap})) << describe(p.validate());
}

// Two tail frees: [48,64) at step 2, then [16,48) at step 4.
//
//        0       16      32      48      64
//   0-1  A A     A A     A A     A A
//   2-3  A A     A A     A A     B B
//   4-5  A A     C C     C C     B B
TEST(ValidatePlacement, SeveralTailFrees) {
  Problem p;
  p.add(64, 0, 6, 0, 0, {{2, 48}, {4, 16}});
  p.add(16, 2, 6, 0, 48);
  p.add(32, 4, 6, 0, 16);
  p.set_chunks({64});
  EXPECT_TRUE(p.validate().empty()) << describe(p.validate());

  Problem early;
  early.add(64, 0, 6, 0, 0, {{2, 48}, {4, 16}});
  early.add(16, 2, 6, 0, 48);
  early.add(32, 3, 6, 0, 16);  // [16,48) is still A's at step 3
  early.set_chunks({64});
  EXPECT_EQ(kinds(early.validate()), (Kinds{PlacementIssueKind::kOverlap}));
}

// ---------------------------------------------------------------------------------------------
// Each kind of issue

//        0       16      32
//   0    A A
//   1    A X B                   B at [8,24) while A at [0,16) is live
//   2        B B
TEST(ValidatePlacement, FindsOverlap) {
  Problem p;
  const StorageId a = p.add(16, 0, 2, 0, 0);
  const StorageId b = p.add(16, 1, 3, 0, 8);
  p.set_chunks({24});
  const auto issues = p.validate();
  ASSERT_EQ(kinds(issues), (Kinds{PlacementIssueKind::kOverlap})) << describe(issues);
  EXPECT_EQ(issues[0].storage, b);
  EXPECT_EQ(issues[0].other, a);
  EXPECT_NE(issues[0].message.find("storage 1"), std::string::npos) << issues[0].message;
  EXPECT_NE(issues[0].message.find("storage 0"), std::string::npos) << issues[0].message;
}

TEST(ValidatePlacement, FindsOverlapAtTheSameAddress) {
  Problem p;
  p.add(16, 0, 2, 0, 0);
  p.add(16, 0, 2, 0, 0);
  p.set_chunks({16});
  EXPECT_EQ(kinds(p.validate()), (Kinds{PlacementIssueKind::kOverlap}));
}

// A small storage inside a large one, far from where the large one starts.
TEST(ValidatePlacement, FindsOverlapInsideALargeStorage) {
  Problem p;
  p.add(8, 0, 4, 0, 0);
  p.add(256, 0, 4, 0, 8);
  p.add(8, 1, 2, 0, 200);
  p.set_chunks({264});
  EXPECT_EQ(kinds(p.validate()), (Kinds{PlacementIssueKind::kOverlap})) << describe(p.validate());
}

TEST(ValidatePlacement, FindsBadAlignment) {
  Problem p(16);
  p.add(16, 0, 2, 0, 0);
  const StorageId b = p.add(16, 0, 2, 0, 24);
  p.set_chunks({40});
  const auto issues = p.validate();
  ASSERT_EQ(kinds(issues), (Kinds{PlacementIssueKind::kBadAlignment})) << describe(issues);
  EXPECT_EQ(issues[0].storage, b);
  EXPECT_NE(issues[0].message.find("aligned to 16"), std::string::npos) << issues[0].message;
}

TEST(ValidatePlacement, FindsOutOfChunk) {
  Problem p;
  p.add(16, 0, 2, 0, 0);
  const StorageId b = p.add(32, 0, 2, 0, 16);
  p.set_chunks({40});  // b ends at 48
  const auto issues = p.validate();
  ASSERT_EQ(kinds(issues), (Kinds{PlacementIssueKind::kOutOfChunk})) << describe(issues);
  EXPECT_EQ(issues[0].storage, b);
}

TEST(ValidatePlacement, FindsMissingAddress) {
  Problem p;
  p.add(16, 0, 2, 0, 0);
  const StorageId b = p.add(16, 0, 2, -1, 0);
  const StorageId c = p.add(16, 0, 2, 3, 0);
  p.set_chunks({16});
  const auto issues = p.validate();
  ASSERT_EQ(kinds(issues), (Kinds{PlacementIssueKind::kMissingAddress, PlacementIssueKind::kMissingAddress}))
      << describe(issues);
  EXPECT_EQ(issues[0].storage, b);
  EXPECT_EQ(issues[1].storage, c);
}

TEST(ValidatePlacement, FindsAPlacementForOtherLifetimes) {
  Problem p;
  p.add(16, 0, 2, 0, 0);
  p.set_chunks({16});
  p.placement().storage_address.pop_back();
  EXPECT_EQ(kinds(p.validate()), (Kinds{PlacementIssueKind::kMissingAddress}));

  Problem q;
  q.add(16, 0, 2, 0, 0);
  q.placement().chunk_sizes.clear();
  EXPECT_EQ(kinds(q.validate()), (Kinds{PlacementIssueKind::kMissingAddress}));
}

TEST(ValidatePlacement, FindsChunkTooLarge) {
  Problem p(8, 32);
  p.add(16, 0, 2, 0, 0);
  p.add(16, 0, 2, 0, 16);
  p.set_chunks({48});  // above the max, and no single storage needs it
  const auto issues = p.validate();
  ASSERT_EQ(kinds(issues), (Kinds{PlacementIssueKind::kChunkTooLarge})) << describe(issues);
  EXPECT_NE(issues[0].message.find("max size 32"), std::string::npos) << issues[0].message;
}

TEST(ValidatePlacement, ReportsSeveralIssues) {
  Problem p(8, 32);
  p.add(16, 0, 2, 0, 4);   // misaligned
  p.add(16, 0, 2, 0, 40);  // past the chunk
  p.add(16, 1, 2, 0, 8);   // overlaps the first
  p.set_chunks({40});      // above the max
  auto found = kinds(p.validate());
  std::sort(found.begin(), found.end());
  EXPECT_EQ(found, (Kinds{PlacementIssueKind::kBadAlignment, PlacementIssueKind::kOutOfChunk,
                          PlacementIssueKind::kOverlap, PlacementIssueKind::kChunkTooLarge}))
      << describe(p.validate());
}

// ---------------------------------------------------------------------------------------------
// On placements of real lifetimes: valid as made, and every corruption is found.

TEST(ValidatePlacement, RealPlacementsPassAndCorruptionsAreFound) {
  int overlaps_made = 0;
  for (std::uint64_t seed = 0; seed < 40; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const testing::RandomCase c = testing::random_case(seed);
    const auto types = c.make_buffer_types();
    auto lifetimes = analyze_lifetimes(c.graph, types.per_id, {c.node_buffer_ids, c.leaf_buffer_ids});
    ASSERT_TRUE(lifetimes.is_ok()) << lifetimes.status().to_string();
    const Placement good = place_ggml(*lifetimes);
    ASSERT_TRUE(validate_placement(*lifetimes, good).empty());

    // Move a storage object onto another one of the same allocator that is live with it.
    const auto& storages = lifetimes->storages;
    bool done = false;
    for (std::size_t i = 0; i < storages.size() && !done; ++i) {
      for (std::size_t j = 0; j < storages.size() && !done; ++j) {
        if (i == j || storages[i].allocator != storages[j].allocator) continue;
        if (storages[i].size == 0 || storages[j].size == 0) continue;
        if (!storages[i].live.overlaps(storages[j].live)) continue;
        Placement bad = good;
        bad.storage_address[i] = good.storage_address[j];
        const auto a = static_cast<std::size_t>(storages[i].allocator);
        auto& chunk = bad.chunk_sizes[a][static_cast<std::size_t>(bad.storage_address[i].chunk)];
        chunk = std::max(chunk, bad.storage_address[i].offset + storages[i].size);
        const auto found = kinds(validate_placement(*lifetimes, bad));
        EXPECT_NE(std::find(found.begin(), found.end(), PlacementIssueKind::kOverlap), found.end())
            << "storages " << i << " and " << j;
        ++overlaps_made;
        done = true;
      }
    }
  }
  EXPECT_GT(overlaps_made, 20);
}

}  // namespace
}  // namespace galloc
