#include "galloc/extents.hpp"

#include <gtest/gtest.h>

namespace galloc {
namespace {

StorageObject storage_of(Bytes size, Interval<Step> live, std::vector<TailFree> tails = {}) {
  StorageObject storage;
  storage.size = size;
  storage.live = live;
  storage.tail_frees = std::move(tails);
  return storage;
}

TEST(SplitAtTailFrees, WithoutTailFreesTheStorageIsOneExtent) {
  std::vector<StorageExtent> parts;
  split_at_tail_frees(storage_of(64, {2, 7}), 128, parts);
  ASSERT_EQ(parts.size(), 1u);
  EXPECT_EQ(parts[0].steps, (Interval<Step>{2, 7}));
  EXPECT_EQ(parts[0].bytes, (Interval<Offset>{128, 192}));
}

TEST(SplitAtTailFrees, EachTailFreeEndsTheBytesAboveItFirst) {
  std::vector<StorageExtent> parts = {{{9, 9}, {9, 9}}, {{9, 9}, {9, 9}}};  // cleared first
  // bytes [32, 64) die at step 4, [16, 32) at step 5, the head [0, 16) at step 8
  split_at_tail_frees(storage_of(64, {1, 8}, {{4, 32}, {5, 16}}), 100, parts);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0].steps, (Interval<Step>{1, 8}));
  EXPECT_EQ(parts[0].bytes, (Interval<Offset>{100, 116}));
  EXPECT_EQ(parts[1].steps, (Interval<Step>{1, 4}));
  EXPECT_EQ(parts[1].bytes, (Interval<Offset>{132, 164}));
  EXPECT_EQ(parts[2].steps, (Interval<Step>{1, 5}));
  EXPECT_EQ(parts[2].bytes, (Interval<Offset>{116, 132}));
}

TEST(SplitAtTailFrees, PartsWithoutBytesAreEmptyButKeepTheirIndex) {
  std::vector<StorageExtent> parts;
  // the second tail free begins above the first: it frees nothing; the third frees the rest
  split_at_tail_frees(storage_of(64, {0, 6}, {{2, 32}, {3, 48}, {4, 0}}), 0, parts);
  ASSERT_EQ(parts.size(), 4u);
  EXPECT_TRUE(parts[0].empty());
  EXPECT_EQ(parts[1].bytes, (Interval<Offset>{32, 64}));
  EXPECT_TRUE(parts[2].empty());
  EXPECT_EQ(parts[3].steps, (Interval<Step>{0, 4}));
  EXPECT_EQ(parts[3].bytes, (Interval<Offset>{0, 32}));
}

TEST(SplitAtTailFrees, AStorageLiveAtNoStepHasOnlyEmptyParts) {
  std::vector<StorageExtent> parts;
  split_at_tail_frees(storage_of(64, {3, 3}, {{3, 32}}), 0, parts);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_TRUE(parts[0].empty());
  EXPECT_TRUE(parts[1].empty());
}

}  // namespace
}  // namespace galloc
