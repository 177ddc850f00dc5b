#include "galloc/dynamic_allocator.hpp"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <limits>
#include <map>
#include <set>

#include "dynamic_allocator_index.hpp"

namespace galloc {

namespace {
constexpr Bytes kSignBit = Bytes{1} << 63;
}  // namespace

// ---------------------------------------------------------------------------------------------
// Indexed mode
//
// Why the trees give upstream's answers. A free list is well formed when its blocks are
// non-empty, sorted by offset, disjoint and end below 2^64; every free list upstream builds
// from valid calls is (allocations carve blocks from the front, frees of allocated memory
// merge with neighbours). On a well-formed list:
//
// - First loop (every block of every chunk but the chunk's last, best size reset per chunk,
//   `<=`): the result is the highest chunk with an inner block of >= size bytes and, in it,
//   the smallest such block, the highest offset among equals. HighestFitTree finds the chunk;
//   `inner` (ordered by size, then offset descending) the block.
// - Second loop (the last block of each chunk, reuse = (int64)(high water - offset - size)):
//   best starts at INT64_MIN; while it is negative any larger reuse replaces it, once it is
//   >= 0 only a smaller non-negative one does. So: if some eligible chunk (last block >= size)
//   has reuse >= 0, the smallest such reuse, the earliest chunk among equals; otherwise the
//   largest reuse, the earliest chunk among equals, unless that is INT64_MIN (never taken).
//   With distance = high water - offset (mod 2^64), reuse read unsigned is distance - size
//   (mod 2^64), and reuse >= 0 means that is below 2^63. TailTree orders the chunks by
//   (distance, chunk) and prunes by the last block's size, which answers both cases with a
//   few descents (best_tail).
// - free: on a well-formed list the first block in address order that touches the freed
//   range is the one ending at its start if any, else the one starting at its end, and
//   upstream's merge checks look at that block's neighbours in the array, which are the map
//   neighbours. A free that would make the list malformed (0 bytes touching nothing, an
//   overlap with free memory, an end past 2^64) is not modelled: the allocator goes back to
//   the arrays and upstream's scan.
class DynamicAllocator::Index {
 public:
  // nullptr when the arrays are not well formed.
  static std::unique_ptr<Index> build(const std::vector<std::vector<FreeBlock>>& arrays,
                                      const std::vector<Bytes>& high_water) {
    auto index = std::make_unique<Index>();
    index->grow(high_water.size());
    for (std::size_t c = 0; c < arrays.size(); ++c) {
      const std::vector<FreeBlock>& blocks = arrays[c];
      Chunk& chunk = index->chunks_[c];
      for (std::size_t i = 0; i < blocks.size(); ++i) {
        const FreeBlock& block = blocks[i];
        if (block.size == 0 || block.size > std::numeric_limits<Offset>::max() - block.offset) {
          return nullptr;
        }
        if (i > 0 && blocks[i - 1].offset + blocks[i - 1].size > block.offset) return nullptr;
        chunk.by_offset.emplace_hint(chunk.by_offset.end(), block.offset, block.size);
        if (i + 1 < blocks.size()) chunk.inner.insert(block);
      }
      index->refresh(static_cast<ChunkId>(c), high_water[c]);
    }
    return index;
  }

  [[nodiscard]] std::vector<std::vector<FreeBlock>> to_arrays(std::size_t& count) const {
    std::vector<std::vector<FreeBlock>> arrays(chunks_.size());
    count = 0;
    for (std::size_t c = 0; c < chunks_.size(); ++c) {
      arrays[c].reserve(chunks_[c].by_offset.size());
      for (const auto& [offset, size] : chunks_[c].by_offset) arrays[c].push_back({offset, size});
      count += arrays[c].size();
    }
    return arrays;
  }

  [[nodiscard]] std::vector<Interval<Offset>> free_blocks(ChunkId chunk) const {
    std::vector<Interval<Offset>> result;
    for (const auto& [offset, size] : chunks_[static_cast<std::size_t>(chunk)].by_offset) {
      result.push_back({offset, offset + size});
    }
    return result;
  }

  ChunkAddress allocate(Bytes size, Bytes max_chunk_size, std::vector<Bytes>& high_water) {
    // Inner blocks are never empty, so a threshold of 1 finds them all for a 0-byte request.
    const std::int64_t fit = inner_fit_.highest_at_least(std::max<Bytes>(size, 1));
    if (fit >= 0) {
      const auto c = static_cast<ChunkId>(fit);
      Chunk& chunk = chunks_[static_cast<std::size_t>(c)];
      const auto best = chunk.inner.lower_bound(FreeBlock{std::numeric_limits<Offset>::max(), size});
      return take(c, chunk.by_offset.find(best->offset), size, high_water);
    }
    const int tail = best_tail(size);
    if (tail != detail::TailTree::kNone) {
      Chunk& chunk = chunks_[static_cast<std::size_t>(tail)];
      return take(tail, std::prev(chunk.by_offset.end()), size, high_water);
    }
    const auto c = static_cast<ChunkId>(chunks_.size());
    grow(chunks_.size() + 1);
    high_water.push_back(0);
    Chunk& chunk = chunks_.back();
    insert_block(chunk, 0, std::max(size, max_chunk_size));
    return take(c, chunk.by_offset.begin(), size, high_water);
  }

  // false: the free would make the list malformed; nothing changed.
  bool free(ChunkAddress address, Bytes size, Bytes high_water) {
    Chunk& chunk = chunks_[static_cast<std::size_t>(address.chunk)];
    Blocks& blocks = chunk.by_offset;
    const Offset offset = address.offset;
    const auto next = blocks.lower_bound(offset);
    const auto prev = next == blocks.begin() ? blocks.end() : std::prev(next);
    const bool prev_touches = prev != blocks.end() && prev->first + prev->second == offset;

    if (size == 0) {
      // Upstream grows the block ending here by nothing and merges it with a next block that
      // touches it; a block starting here stays as it is; touching none, it would insert an
      // empty block.
      if (prev_touches) {
        if (next != blocks.end() && next->first == offset) {
          const Bytes merged = prev->second + next->second;
          erase_block(chunk, next);
          resize_block(chunk, prev, prev->first, merged);
          refresh(address.chunk, high_water);
        }
        return true;
      }
      return next != blocks.end() && next->first == offset;
    }

    if (size > std::numeric_limits<Offset>::max() - offset) return false;
    const Offset end = offset + size;
    if (next != blocks.end() && next->first < end) return false;
    if (prev != blocks.end() && prev->first + prev->second > offset) return false;
    const bool next_touches = next != blocks.end() && next->first == end;
    if (prev_touches) {
      const Bytes merged = prev->second + size + (next_touches ? next->second : 0);
      if (next_touches) erase_block(chunk, next);
      resize_block(chunk, prev, prev->first, merged);
    } else if (next_touches) {
      resize_block(chunk, next, offset, next->second + size);
    } else {
      insert_block(chunk, offset, size);
    }
    refresh(address.chunk, high_water);
    return true;
  }

 private:
  using Blocks = std::map<Offset, Bytes>;
  // Upstream's first-loop preference: the smallest size, the highest offset among equals.
  struct SmallestThenLast {
    bool operator()(const FreeBlock& a, const FreeBlock& b) const {
      return a.size != b.size ? a.size < b.size : a.offset > b.offset;
    }
  };
  struct Chunk {
    Blocks by_offset;
    std::set<FreeBlock, SmallestThenLast> inner;  // every block but the last
  };

  void grow(std::size_t chunks) {
    chunks_.resize(chunks);
    inner_fit_.resize(chunks);
    tails_.resize(chunks);
  }

  static bool is_last(const Chunk& chunk, Blocks::const_iterator it) { return std::next(it) == chunk.by_offset.end(); }

  static void insert_block(Chunk& chunk, Offset offset, Bytes size) {
    Blocks& blocks = chunk.by_offset;
    if (blocks.empty() || offset > blocks.rbegin()->first) {
      if (!blocks.empty()) chunk.inner.insert({blocks.rbegin()->first, blocks.rbegin()->second});
      blocks.emplace_hint(blocks.end(), offset, size);
    } else {
      blocks.emplace(offset, size);
      chunk.inner.insert({offset, size});
    }
  }

  static void erase_block(Chunk& chunk, Blocks::iterator it) {
    Blocks& blocks = chunk.by_offset;
    if (is_last(chunk, it)) {
      blocks.erase(it);
      if (!blocks.empty()) chunk.inner.erase({blocks.rbegin()->first, blocks.rbegin()->second});
    } else {
      chunk.inner.erase({it->first, it->second});
      blocks.erase(it);
    }
  }

  // The block keeps its place in address order (callers move its start only within the gap
  // before it).
  static void resize_block(Chunk& chunk, Blocks::iterator it, Offset offset, Bytes size) {
    Blocks& blocks = chunk.by_offset;
    if (!is_last(chunk, it)) {
      chunk.inner.erase({it->first, it->second});
      chunk.inner.insert({offset, size});
    }
    if (offset == it->first) {
      it->second = size;
      return;
    }
    const auto hint = std::next(it);
    auto node = blocks.extract(it);
    node.key() = offset;
    node.mapped() = size;
    blocks.insert(hint, std::move(node));
  }

  ChunkAddress take(ChunkId c, Blocks::iterator it, Bytes size, std::vector<Bytes>& high_water) {
    Chunk& chunk = chunks_[static_cast<std::size_t>(c)];
    const Offset offset = it->first;
    if (it->second == size) {
      erase_block(chunk, it);
    } else {
      resize_block(chunk, it, offset + size, it->second - size);
    }
    Bytes& water = high_water[static_cast<std::size_t>(c)];
    water = std::max(water, offset + size);
    refresh(c, water);
    return {c, offset};
  }

  // Brings the trees up to date with chunk c's blocks and high water.
  void refresh(ChunkId c, Bytes high_water) {
    const Chunk& chunk = chunks_[static_cast<std::size_t>(c)];
    inner_fit_.set(static_cast<std::size_t>(c), chunk.inner.empty() ? 0 : chunk.inner.rbegin()->size);
    if (chunk.by_offset.empty()) {
      if (tails_.contains(c)) tails_.erase(c);
      return;
    }
    const auto& [offset, size] = *chunk.by_offset.rbegin();
    const Bytes distance = high_water - offset;
    if (tails_.contains(c)) {
      if (tails_.distance(c) == distance && tails_.size(c) == size) return;
      tails_.erase(c);
    }
    tails_.insert(c, distance, size);
  }

  // Upstream's second loop (see the comment above the class).
  [[nodiscard]] int best_tail(Bytes size) const {
    constexpr int kNone = detail::TailTree::kNone;
    // Smallest non-negative reuse: the first distance at or after size, else (wrapping) the
    // smallest distance below it.
    int c = tails_.first_from(size, size);
    if (c != kNone && tails_.distance(c) - size < kSignBit) return c;
    c = tails_.first_from(0, size);
    if (c == kNone) return kNone;
    if (tails_.distance(c) < size && tails_.distance(c) - size < kSignBit) return c;
    // Every reuse is negative: the largest is the last distance below size, else (wrapping)
    // the largest distance.
    int top = tails_.last_before(size, size);
    if (top == kNone) top = tails_.last(size);
    const Bytes distance = tails_.distance(top);
    if (distance - size == kSignBit) return kNone;
    return tails_.first_from(distance, size);
  }

  std::vector<Chunk> chunks_;
  detail::HighestFitTree inner_fit_;
  detail::TailTree tails_;
};

// ---------------------------------------------------------------------------------------------

// Linear mode: upstream's scans over its arrays, line for line.

[[gnu::always_inline]] inline ChunkAddress DynamicAllocator::allocate_by_scan(Bytes size) {
  // Best fit among every chunk's blocks except its last. As upstream, the best size is
  // tracked per chunk, so the last chunk with any fitting block wins; ties go to the later
  // block.
  int best_chunk = -1;
  int best_block = -1;
  for (int c = 0; c < chunk_count(); ++c) {
    const auto& blocks = scan_blocks_[static_cast<std::size_t>(c)];
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
      const auto& blocks = scan_blocks_[static_cast<std::size_t>(c)];
      if (blocks.empty()) continue;
      const FreeBlock& block = blocks.back();
      // Wraps like upstream's size_t arithmetic, then reads as int64_t: with a 32-bit size_t
      // every reuse reads as non-negative.
      const auto reuse =
          static_cast<std::int64_t>((high_water_[static_cast<std::size_t>(c)] - block.offset - size) & size_mask_);
      const bool better_reuse = best_reuse < 0 && reuse > best_reuse;
      const bool better_fit = reuse >= 0 && reuse < best_reuse;
      if (block.size >= size && (better_reuse || better_fit)) {
        best_chunk = c;
        best_block = static_cast<int>(blocks.size()) - 1;
        best_reuse = reuse;
      }
    }
  }

  if (best_block == -1) {
    scan_blocks_.push_back({FreeBlock{0, std::max(size, max_chunk_size_)}});
    high_water_.push_back(0);
    scan_size_ += 2;
    best_chunk = chunk_count() - 1;
    best_block = 0;
  }

  auto& blocks = scan_blocks_[static_cast<std::size_t>(best_chunk)];
  FreeBlock& block = blocks[static_cast<std::size_t>(best_block)];
  const ChunkAddress address{best_chunk, block.offset};
  block.offset += size;
  block.size -= size;
  if (block.size == 0) {
    blocks.erase(blocks.begin() + best_block);
    --scan_size_;
  }
  Bytes& water = high_water_[static_cast<std::size_t>(best_chunk)];
  water = std::max(water, address.offset + size);
  return address;
}

[[gnu::always_inline]] inline void DynamicAllocator::free_by_scan(ChunkAddress address, Bytes size) {
  auto& blocks = scan_blocks_[static_cast<std::size_t>(address.chunk)];
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
        --scan_size_;
      }
      return;
    }
    if (offset + size == block.offset) {
      block.offset = offset;
      block.size += size;
      if (i > 0 && blocks[i - 1].offset + blocks[i - 1].size == block.offset) {
        blocks[i - 1].size += block.size;
        blocks.erase(blocks.begin() + static_cast<std::ptrdiff_t>(i));
        --scan_size_;
      }
      return;
    }
  }
  auto position = std::find_if(blocks.begin(), blocks.end(), [&](const FreeBlock& b) { return b.offset >= offset; });
  blocks.insert(position, FreeBlock{offset, size});
  ++scan_size_;
}

DynamicAllocator::DynamicAllocator(Bytes alignment, Bytes max_chunk_size, int size_bits)
    : alignment_(alignment == 0 ? 1 : alignment),
      alignment_is_power_of_two_(is_power_of_two(alignment_)),
      size_mask_(size_bits >= 64 ? std::numeric_limits<Bytes>::max() : (Bytes{1} << size_bits) - 1),
      max_chunk_size_(std::min(max_chunk_size, size_mask_ / 2)) {}

DynamicAllocator::DynamicAllocator(const DynamicAllocator& other)
    : alignment_(other.alignment_),
      alignment_is_power_of_two_(other.alignment_is_power_of_two_),
      size_mask_(other.size_mask_),
      max_chunk_size_(other.max_chunk_size_),
      high_water_(other.high_water_),
      scan_blocks_(other.scan_blocks_),
      scan_size_(other.scan_size_),
      index_retry_countdown_(other.index_retry_countdown_),
      index_(other.index_ ? std::make_unique<Index>(*other.index_) : nullptr) {}

DynamicAllocator::DynamicAllocator(DynamicAllocator&& other) noexcept = default;

DynamicAllocator& DynamicAllocator::operator=(const DynamicAllocator& other) {
  if (this != &other) *this = DynamicAllocator(other);
  return *this;
}

DynamicAllocator& DynamicAllocator::operator=(DynamicAllocator&& other) noexcept = default;

DynamicAllocator::~DynamicAllocator() = default;

void DynamicAllocator::reset() {
  high_water_.clear();
  scan_blocks_.clear();
  scan_size_ = 0;
  index_retry_countdown_ = 0;
  index_.reset();
}

// The scans are inlined here and everything else is out of line, behind one test: a typical
// graph's calls take a few nanoseconds, so a call or a branch more shows.
ChunkAddress DynamicAllocator::allocate(Bytes size) {
  size = aligned(size);
  if (scan_size_ > detail::kIndexThreshold) return allocate_past_threshold(size);
  return allocate_by_scan(size);
}

void DynamicAllocator::free(ChunkAddress address, Bytes size) {
  if (address.chunk < 0 || address.chunk >= chunk_count()) return;
  size = aligned(size);
  if (scan_size_ > detail::kIndexThreshold) {
    free_past_threshold(address, size);
    return;
  }
  free_by_scan(address, size);
}

ChunkAddress DynamicAllocator::allocate_past_threshold(Bytes size) {
  if (!index_) try_index();
  if (index_) return index_->allocate(size, max_chunk_size_, high_water_);
  return allocate_by_scan(size);
}

void DynamicAllocator::free_past_threshold(ChunkAddress address, Bytes size) {
  if (!index_) try_index();
  if (index_) {
    if (index_->free(address, size, high_water_[static_cast<std::size_t>(address.chunk)])) return;
    unindex();
  }
  free_by_scan(address, size);
}

void DynamicAllocator::try_index() {
  // The trees model 64-bit wrap-around (see Index); a narrower size_t keeps upstream's scans.
  if (size_mask_ != std::numeric_limits<Bytes>::max()) return;
  if (index_retry_countdown_ > 0) {
    --index_retry_countdown_;
    return;
  }
  index_ = Index::build(scan_blocks_, high_water_);
  if (!index_) {
    // Malformed lists are rare and may heal; checking again after as many calls as there are
    // blocks and chunks keeps the checks' cost below the scans'.
    index_retry_countdown_ = scan_size_;
    return;
  }
  scan_blocks_.clear();
  scan_size_ = kIndexed;
}

void DynamicAllocator::unindex() {
  std::size_t blocks = 0;
  scan_blocks_ = index_->to_arrays(blocks);
  index_.reset();
  scan_size_ = blocks + high_water_.size();
  index_retry_countdown_ = scan_size_;
}

// ---------------------------------------------------------------------------------------------

Bytes DynamicAllocator::chunk_size(ChunkId chunk) const {
  return chunk >= 0 && chunk < chunk_count() ? high_water_[static_cast<std::size_t>(chunk)] : 0;
}

std::vector<Bytes> DynamicAllocator::chunk_sizes() const { return high_water_; }

Bytes DynamicAllocator::total_size() const {
  Bytes total = 0;
  for (Bytes size : high_water_) total += size;
  return total;
}

std::vector<Interval<Offset>> DynamicAllocator::free_blocks(ChunkId chunk) const {
  std::vector<Interval<Offset>> result;
  if (chunk < 0 || chunk >= chunk_count()) return result;
  if (index_) return index_->free_blocks(chunk);
  for (const FreeBlock& block : scan_blocks_[static_cast<std::size_t>(chunk)]) {
    result.push_back({block.offset, block.offset + block.size});
  }
  return result;
}

}  // namespace galloc
