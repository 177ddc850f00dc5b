// Lowest-offset-first placement: storage objects go in non-decreasing offset order, each at
// the lowest offset above every placed object it is live with. Among the objects that could
// go lowest, a static order decides (see static_ranks). This is the first descent of
// MiniMalloc's canonical search (src/strategies/exact.cpp) in its "TAW" order, without the
// backtracking and the section checks. On the zoo the exact search reaches the live lower
// bound on its first descent, without backtracking; this reaches it too, without a search's
// tables.
//
// How: every waiting object has the lowest offset it could take, the top of the placed
// objects over its lifetime (the skyline); each pick takes the lowest, then raises the skyline
// over the placed object's lifetime. Two pickers do that (see below): one scans every waiting
// object, kept up to date, in vector code; the other, for large counts, keeps them in a lazy
// heap over a max-segment tree of the skyline.
//
// Tail frees (a storage whose in-place successor is smaller frees its tail first) are
// honoured: the skyline holds each storage's staircase, as validate_placement checks it, so
// an object allocated after a tail free may go where the tail was.
//
// Chunks: objects that would end past the max chunk size wait for the next chunk, where the
// same procedure runs on them alone. An object larger than the max size opens a chunk of its
// own size, as in ggml, and other objects may use that chunk while it is dead (greedy gives
// it a chunk that nothing else uses).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "galloc/placement.hpp"
#include "placement_internal.hpp"
#include "wide_product.hpp"

namespace galloc {

namespace {

using Item = std::uint32_t;  // an index into one allocator's items

// Range "raise to at least v" and range maximum over [0, size), without lazy propagation: a
// node's `raised` applies to its whole range, its `highest` is the maximum inside it.
class SkylineTree {
 public:
  explicit SkylineTree(std::size_t size) {
    while (leaves_ < size) leaves_ *= 2;
    raised_.assign(2 * leaves_, 0);
    highest_.assign(2 * leaves_, 0);
  }

  void clear() {
    std::fill(raised_.begin(), raised_.end(), 0);
    std::fill(highest_.begin(), highest_.end(), 0);
  }

  // Leaf values for a plain range-maximum tree (no raises), then build the inner nodes.
  void assign_leaves(const std::vector<Bytes>& values) {
    std::copy(values.begin(), values.end(), highest_.begin() + static_cast<std::ptrdiff_t>(leaves_));
    for (std::size_t node = leaves_ - 1; node >= 1; --node) {
      highest_[node] = std::max(highest_[2 * node], highest_[2 * node + 1]);
    }
  }

  void raise(std::size_t lower, std::size_t upper, Bytes value) {
    if (lower >= upper) return;
    std::size_t l = lower + leaves_;
    std::size_t r = upper + leaves_;
    const std::size_t first = l;
    const std::size_t last = r - 1;
    for (; l < r; l /= 2, r /= 2) {
      if (l & 1) apply(l++, value);
      if (r & 1) apply(--r, value);
    }
    // Every ancestor of the two ends holds part of the range.
    for (std::size_t node = first / 2; node >= 1; node /= 2) highest_[node] = std::max(highest_[node], value);
    for (std::size_t node = last / 2; node >= 1; node /= 2) highest_[node] = std::max(highest_[node], value);
  }

  [[nodiscard]] Bytes highest(std::size_t lower, std::size_t upper) const {
    if (lower >= upper) return 0;
    std::size_t l = lower + leaves_;
    std::size_t r = upper + leaves_;
    Bytes result = 0;
    // A raise on a node that only partly covers the range is on an ancestor of one of its ends.
    for (std::size_t node = l / 2; node >= 1; node /= 2) result = std::max(result, raised_[node]);
    for (std::size_t node = (r - 1) / 2; node >= 1; node /= 2) result = std::max(result, raised_[node]);
    for (; l < r; l /= 2, r /= 2) {
      if (l & 1) result = std::max(result, highest_[l++]);
      if (r & 1) result = std::max(result, highest_[--r]);
    }
    return result;
  }

 private:
  void apply(std::size_t node, Bytes value) {
    raised_[node] = std::max(raised_[node], value);
    highest_[node] = std::max(highest_[node], value);
  }

  std::size_t leaves_ = 1;
  std::vector<Bytes> raised_;
  std::vector<Bytes> highest_;
};

struct Candidate {
  Offset offset;  // the lowest offset the item could take when last looked at
  Item rank;      // its place in the static order (0 first)
  Item item;
};

// A binary min-heap of candidates by (offset, rank), with "replace the top", which a raised
// candidate needs (one sift instead of a pop and a push).
class CandidateHeap {
 public:
  void assign(std::vector<Candidate> candidates) {
    heap_ = std::move(candidates);
    for (std::size_t i = heap_.size() / 2; i-- > 0;) sift_down(i, heap_[i]);
  }
  [[nodiscard]] bool empty() const { return heap_.empty(); }
  [[nodiscard]] const Candidate& top() const { return heap_.front(); }
  void pop() {
    const Candidate last = heap_.back();
    heap_.pop_back();
    if (!heap_.empty()) sift_down(0, last);
  }
  void replace_top(const Candidate& candidate) { sift_down(0, candidate); }

 private:
  // Without branches: which of two children is smaller is a coin toss for the predictor.
  static bool before(const Candidate& x, const Candidate& y) {
    return (x.offset < y.offset) | ((x.offset == y.offset) & (x.rank < y.rank));
  }
  // Puts `moving` at `hole` or below it, moving smaller children up.
  void sift_down(std::size_t hole, const Candidate moving) {
    const std::size_t size = heap_.size();
    while (true) {
      std::size_t child = 2 * hole + 1;
      if (child >= size) break;
      if (child + 1 < size) child += static_cast<std::size_t>(before(heap_[child + 1], heap_[child]));
      if (!before(heap_[child], moving)) break;
      heap_[hole] = heap_[child];
      hole = child;
    }
    heap_[hole] = moving;
  }

  std::vector<Candidate> heap_;
};

struct ItemInfo {
  StorageId storage;
  std::size_t lower;  // live steps [lower, upper)
  std::size_t upper;
  Bytes size;
};

// The static order, as MiniMalloc's: the most bytes live at one step of the object's
// lifetime first (it sits in the tightest part of the problem), then the larger area (size
// times lifetime) and the longer lifetime, in the order asked for.
std::vector<Item> static_ranks(const Problem& problem, AllocatorId allocator, const std::vector<ItemInfo>& items,
                               LowestOffsetOrder order) {
  const auto steps = static_cast<std::size_t>(problem.step_count());
  std::vector<Bytes> live_at(steps, 0);
  Bytes live = 0;
  for (std::size_t t = 0; t < steps; ++t) {
    const LifetimeEvent& event = problem.events[t];
    if (problem.storages[static_cast<std::size_t>(event.storage)].allocator == allocator) {
      live = event.kind == LifetimeEvent::Kind::kAllocate ? live + event.size : live - event.size;
    }
    live_at[t] = live;
  }
  SkylineTree busiest(steps);
  busiest.assign_leaves(live_at);

  struct Key {
    Bytes busiest;
    detail::WideProduct area;
    std::size_t width;
    Item item;
  };
  std::vector<Key> keys;
  keys.reserve(items.size());
  for (Item i = 0; i < items.size(); ++i) {
    const ItemInfo& info = items[i];
    const std::size_t width = info.upper - info.lower;
    keys.push_back({busiest.highest(info.lower, info.upper), detail::WideProduct(info.size, width), width, i});
  }
  const bool area_first = order == LowestOffsetOrder::kBusiestThenArea;
  std::sort(keys.begin(), keys.end(), [area_first](const Key& x, const Key& y) {
    if (x.busiest != y.busiest) return x.busiest > y.busiest;
    if (area_first && x.area != y.area) return x.area > y.area;
    if (x.width != y.width) return x.width > y.width;
    if (x.area != y.area) return x.area > y.area;
    return x.item < y.item;
  });
  std::vector<Item> rank(items.size());
  for (Item r = 0; r < keys.size(); ++r) rank[keys[r].item] = r;
  return rank;
}

using ScanKey = std::int32_t;  // an offset in units of the alignment, or a step
constexpr ScanKey kNever = std::numeric_limits<ScanKey>::max();
constexpr std::size_t kBlock = 8;

struct ScanLowest {
  ScanKey key;
  std::size_t index;  // the first object at it
};

// On x86-64 the scan is also built for AVX2 and picked at load time: 8 lanes with native
// 32-bit min and max, where the baseline (SSE2) has 4 and emulates them. The one-file drop-in
// defines GALLOC_NO_TARGET_CLONES: the load-time pick needs an ifunc, which not every
// platform an app targets has.
#if defined(__GNUC__) && defined(__x86_64__) && defined(__ELF__) && !defined(GALLOC_NO_TARGET_CLONES)
#define GALLOC_ALSO_FOR_AVX2 __attribute__((target_clones("avx2", "default")))
#else
#define GALLOC_ALSO_FOR_AVX2
#endif

// Raises the objects that overlap steps [raise_lower, raise_upper) to at least raise_top;
// returns the lowest key and the first object at it. Whole blocks with a minimum (and the
// block it was first seen in) per lane and no branches, which g++ turns into vector code at
// -O2 (the pointers must not alias for that).
GALLOC_ALSO_FOR_AVX2 ScanLowest raise_blocks_and_find_lowest(const ScanKey* __restrict lower,
                                                             const ScanKey* __restrict upper, ScanKey* __restrict key,
                                                             std::size_t size, ScanKey raise_lower, ScanKey raise_upper,
                                                             ScanKey raise_top) {
  ScanKey lowest[kBlock];
  ScanKey block_of_lowest[kBlock] = {};
  std::fill(std::begin(lowest), std::end(lowest), kNever);
  for (std::size_t block = 0; block < size; block += kBlock) {
    for (std::size_t lane = 0; lane < kBlock; ++lane) {
      const std::size_t k = block + lane;
      const bool overlaps = (lower[k] < raise_upper) & (raise_lower < upper[k]);
      const ScanKey raised = overlaps ? std::max(key[k], raise_top) : key[k];
      key[k] = raised;
      block_of_lowest[lane] = raised < lowest[lane] ? static_cast<ScanKey>(block) : block_of_lowest[lane];
      lowest[lane] = std::min(lowest[lane], raised);
    }
  }
  ScanLowest result{kNever, size};
  for (std::size_t lane = 0; lane < kBlock; ++lane) {
    const std::size_t index = static_cast<std::size_t>(block_of_lowest[lane]) + lane;
    if (lowest[lane] < result.key || (lowest[lane] == result.key && index < result.index)) {
      result = {lowest[lane], index};
    }
  }
  return result;
}

// The two ways to find the next object to place: the waiting object with the lowest
// (offset it could take, rank). Both give the same sequence; they differ in cost.
//
// Scanning keeps every waiting object's lowest offset up to date: each placement raises every
// waiting object it overlaps, and the same pass finds the lowest for the next pick. That is a
// pass over all waiting objects per placement, but one the compiler turns into vector code:
// offsets are kept in units of the alignment (every offset is a multiple of it) as 32-bit
// integers, in flat arrays of whole blocks. It is cheaper than the lazy heap below except on
// small problems, most where the heap looks at each object many times (measure both with
// galloc_strategy_bench before changing which one a problem gets).
class ScanningPicker {
 public:
  using Key = ScanKey;

  // Whether offsets and steps fit the keys: every offset lies below the sum of the objects'
  // aligned sizes.
  static bool fits(const std::vector<ItemInfo>& items, const std::vector<std::pair<Item, Item>>& order,
                   std::size_t steps, Bytes alignment) {
    constexpr auto kMax = static_cast<Bytes>(std::numeric_limits<Key>::max());
    if (steps >= kMax) return false;
    constexpr Bytes kMaxBytes = std::numeric_limits<Bytes>::max();
    const Bytes limit = alignment > kMaxBytes / kMax ? kMaxBytes : kMax * alignment;
    Bytes bytes = 0;
    for (const auto& [rank, i] : order) {
      if (items[i].size > limit - bytes) return false;
      bytes += items[i].size;
    }
    return bytes / alignment + order.size() < kMax;  // aligning a size adds less than one unit
  }

  // `order` holds (rank, item) pairs; the picker keeps the items in rank order so that the
  // first of equal offsets is the lowest rank.
  void start(const std::vector<ItemInfo>& items, std::vector<std::pair<Item, Item>>& order, Bytes alignment) {
    std::sort(order.begin(), order.end());
    alignment_ = alignment;
    raises_.clear();
    lower_.clear();  // every slot padding, then the first count_ filled in
    upper_.clear();
    key_.clear();
    item_.clear();
    count_ = order.size();
    pad_to_blocks();
    for (std::size_t k = 0; k < count_; ++k) {
      const Item i = order[k].second;
      lower_[k] = static_cast<Key>(items[i].lower);
      upper_[k] = static_cast<Key>(items[i].upper);
      key_[k] = 0;
      item_[k] = i;
    }
  }

  // The next object and the lowest offset it can take, removed from the waiting ones. The
  // raises since the last pick are applied on the way: the last in the pass that finds the
  // lowest.
  bool pop(Item& item, Offset& offset) {
    if (count_ == 0) return false;
    const Raise none{0, 0, 0};
    for (std::size_t r = 0; r + 1 < raises_.size(); ++r) raise_and_find_lowest(raises_[r]);
    const ScanLowest lowest = raise_and_find_lowest(raises_.empty() ? none : raises_.back());
    raises_.clear();
    item = item_[lowest.index];
    offset = static_cast<Offset>(lowest.key) * alignment_;
    // Turned into padding where it stands, so a pick moves nothing; the arrays are compacted
    // once a fifth of them is padding, so a scan passes at most a quarter more than it must.
    make_padding(lowest.index);
    --count_;
    if (key_.size() >= count_ + count_ / 4 + kBlock) compact();
    return true;
  }

  // The skyline rose to `top` (a multiple of the alignment) over steps [lower, upper).
  void raise(std::size_t lower, std::size_t upper, Offset top) {
    raises_.push_back({static_cast<Key>(lower), static_cast<Key>(upper), static_cast<Key>(top / alignment_)});
  }

 private:
  struct Raise {
    Key lower;
    Key upper;
    Key top;
  };

  // Padding lives at no step, so no raise reaches it, and it is never the lowest (every real
  // key is below kNever, as fits() makes sure). The arrays hold whole blocks.
  void make_padding(std::size_t k) {
    lower_[k] = 0;
    upper_[k] = 0;
    key_[k] = kNever;
  }
  void pad_to_blocks() {
    const std::size_t size = (count_ + kBlock - 1) / kBlock * kBlock;
    lower_.resize(size, 0);
    upper_.resize(size, 0);
    key_.resize(size, kNever);
    item_.resize(size, 0);
  }
  // Moves the waiting objects to the front, in rank order, and cuts the padding back.
  void compact() {
    std::size_t kept = 0;
    for (std::size_t k = 0; k < key_.size(); ++k) {
      if (key_[k] == kNever) continue;
      lower_[kept] = lower_[k];
      upper_[kept] = upper_[k];
      key_[kept] = key_[k];
      item_[kept] = item_[k];
      ++kept;
    }
    for (std::size_t k = kept; k < key_.size(); ++k) make_padding(k);
    pad_to_blocks();
  }

  ScanLowest raise_and_find_lowest(const Raise& raise) {
    return raise_blocks_and_find_lowest(lower_.data(), upper_.data(), key_.data(), key_.size(), raise.lower,
                                        raise.upper, raise.top);
  }

  Bytes alignment_ = 1;
  std::size_t count_ = 0;  // waiting objects; the arrays hold padding among and after them
  // In rank order: each waiting object's live steps [lower, upper), lowest offset and item.
  std::vector<Key> lower_;
  std::vector<Key> upper_;
  std::vector<Key> key_;
  std::vector<Item> item_;
  std::vector<Raise> raises_;  // since the last pick
};

// The lazy way, for many objects: a max-segment tree over steps holds the skyline, and every
// waiting object sits in a heap under the lowest offset it could take when last looked at.
// That offset only rises, so the top of the heap is checked against the skyline and pushed
// back if it has risen: each placement costs a tree update, not one heap operation per object
// it overlaps, but an object may be looked at again after every placement that raises it.
class LazyHeapPicker {
 public:
  explicit LazyHeapPicker(std::size_t steps) : skyline_(steps) {}

  void start(const std::vector<ItemInfo>& items, const std::vector<std::pair<Item, Item>>& order) {
    items_ = &items;
    skyline_.clear();
    std::vector<Candidate> candidates;
    candidates.reserve(order.size());
    for (const auto& [rank, i] : order) candidates.push_back({0, rank, i});
    heap_.assign(std::move(candidates));
  }

  bool pop(Item& item, Offset& offset) {
    while (!heap_.empty()) {
      Candidate candidate = heap_.top();
      const ItemInfo& info = (*items_)[candidate.item];
      const Offset lowest = skyline_.highest(info.lower, info.upper);
      if (lowest > candidate.offset) {
        // Raised since: wait again at the new height.
        candidate.offset = lowest;
        heap_.replace_top(candidate);
        continue;
      }
      heap_.pop();
      item = candidate.item;
      offset = lowest;
      return true;
    }
    return false;
  }

  void raise(std::size_t lower, std::size_t upper, Offset top) { skyline_.raise(lower, upper, top); }

 private:
  SkylineTree skyline_;
  CandidateHeap heap_;
  const std::vector<ItemInfo>* items_ = nullptr;
};

// Places the waiting items of one chunk, lowest offset first; those that would pass `limit`
// go to `next_chunk`. Returns the chunk's size.
template <typename Picker>
Bytes place_one_chunk(const Problem& problem, const std::vector<ItemInfo>& items, Bytes alignment, Bytes limit,
                      ChunkId chunk, Picker& picker, Placement& placement, std::vector<Item>& next_chunk) {
  Bytes high = 0;
  Item i = 0;
  Offset lowest = 0;
  while (picker.pop(i, lowest)) {
    const ItemInfo& item = items[i];
    if (lowest > limit || item.size > limit - lowest) {
      next_chunk.push_back(i);
      continue;
    }
    placement.storage_address[static_cast<std::size_t>(item.storage)] = {chunk, lowest};
    high = std::max(high, lowest + item.size);
    // The staircase: the full size until the first tail free, then less at each.
    std::size_t from = item.lower;
    Bytes bytes = item.size;
    for (const TailFree& tail : problem.storages[static_cast<std::size_t>(item.storage)].tail_frees) {
      const auto step =
          static_cast<std::size_t>(std::clamp<Step>(tail.step, static_cast<Step>(from), static_cast<Step>(item.upper)));
      if (from < step) picker.raise(from, step, align_up(lowest + bytes, alignment));
      from = step;
      bytes = std::min(bytes, tail.begin);
    }
    if (from < item.upper) picker.raise(from, item.upper, align_up(lowest + bytes, alignment));
  }
  return high;
}

}  // namespace

Placement place_lowest_offset_first(const Problem& problem, const LowestOffsetOptions& options) {
  return detail::place_lowest_offset_first(problem, options, detail::kScanUpTo);
}

Placement detail::place_lowest_offset_first(const Problem& problem, const LowestOffsetOptions& options,
                                            std::size_t scan_up_to) {
  Placement placement;
  placement.storage_address.resize(problem.storages.size(), {0, 0});
  placement.chunk_sizes.resize(problem.allocators.size());
  const auto steps = static_cast<std::size_t>(std::max<Step>(0, problem.step_count()));

  ScanningPicker scanning;
  std::optional<LazyHeapPicker> lazy_heap;   // built when first needed: its tree spans every step
  std::vector<std::pair<Item, Item>> order;  // (rank, item) of the items for the current chunk
  std::vector<ItemInfo> items;               // the current allocator's objects live at some step
  std::vector<StorageId> loose;              // and those live at no step, or empty
  const std::vector<std::vector<StorageId>> ids_of = detail::storages_by_allocator(problem);
  for (std::size_t a = 0; a < problem.allocators.size(); ++a) {
    const Bytes alignment = std::max<Bytes>(1, problem.allocators[a].alignment);
    items.clear();
    items.reserve(ids_of[a].size());
    loose.clear();
    for (StorageId s : ids_of[a]) {
      const StorageObject& object = problem.storages[static_cast<std::size_t>(s)];
      const auto lower = static_cast<std::size_t>(std::clamp<Step>(object.live.lower, 0, static_cast<Step>(steps)));
      const auto upper = static_cast<std::size_t>(std::clamp<Step>(object.live.upper, 0, static_cast<Step>(steps)));
      if (object.size == 0 || upper <= lower) {
        loose.push_back(s);
      } else {
        items.push_back({s, lower, upper, object.size});
      }
    }
    const std::vector<Item> rank = static_ranks(problem, static_cast<AllocatorId>(a), items, options.order);
    const Bytes max_size = problem.allocators[a].max_chunk_size;

    std::vector<Bytes> chunks;
    std::vector<Item> waiting(items.size());  // items for the current chunk
    for (Item i = 0; i < items.size(); ++i) waiting[i] = i;
    std::vector<Item> next_chunk;
    while (!waiting.empty()) {
      const auto chunk = static_cast<ChunkId>(chunks.size());
      // A storage object above the max size gets a chunk of its own size, as in ggml, which
      // then serves others too (while it is dead): the largest goes first, at offset 0, and
      // sets the chunk's limit; the other objects above the max size come next, so that those
      // that live at other times share its bytes rather than each taking a chunk. Keys stay
      // distinct (both pickers then agree): 0, then 1 + rank, then n + 1 + rank.
      Bytes limit = max_size;
      std::optional<Item> oversized;
      for (Item i : waiting) {
        if (items[i].size > limit) {
          limit = items[i].size;
          oversized = i;
        }
      }
      order.clear();
      order.reserve(waiting.size());
      for (Item i : waiting) {
        const auto n = static_cast<Item>(items.size());
        order.emplace_back(i == oversized ? 0 : items[i].size > max_size ? 1 + rank[i] : n + 1 + rank[i], i);
      }
      next_chunk.clear();
      Bytes high = 0;
      if (waiting.size() <= scan_up_to && ScanningPicker::fits(items, order, steps, alignment)) {
        scanning.start(items, order, alignment);
        high = place_one_chunk(problem, items, alignment, limit, chunk, scanning, placement, next_chunk);
      } else {
        if (!lazy_heap) lazy_heap.emplace(steps);
        lazy_heap->start(items, order);
        high = place_one_chunk(problem, items, alignment, limit, chunk, *lazy_heap, placement, next_chunk);
      }
      chunks.push_back(high);
      waiting.swap(next_chunk);
    }

    // Storage objects live at no step, or empty: offset 0 of the first chunk, which must hold them.
    for (StorageId s : loose) {
      placement.storage_address[static_cast<std::size_t>(s)] = {0, 0};
      if (chunks.empty()) chunks.push_back(0);
      chunks[0] = std::max(chunks[0], problem.storages[static_cast<std::size_t>(s)].size);
    }
    placement.chunk_sizes[a] = std::move(chunks);
  }
  return placement;
}

}  // namespace galloc
