// Lowest-offset-first placement: storage objects go in non-decreasing offset order, each at
// the lowest offset above every placed object it is live with. Among the objects that could
// go lowest, a static order decides (see static_ranks). This is the first descent of
// MiniMalloc's canonical search (src/strategies/exact.cpp) in its "TAW" order, without the
// backtracking and the section checks. On the zoo the exact search reaches the live lower
// bound on its first descent, without backtracking; this reaches it too, at the cost of a few
// heap and tree operations per object instead of a search's tables.
//
// How: a max-segment tree over steps holds the skyline, the top of the placed objects at each
// step. Every unplaced object waits in a heap under the lowest offset it could take when last
// looked at; that offset only rises as objects are placed, so the top of the heap is checked
// against the skyline and pushed back if it has risen (lazily, so each placement costs a tree
// update, not one heap operation per object it overlaps).
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
#include <optional>
#include <vector>

#include "galloc/placement.hpp"

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
std::vector<Item> static_ranks(const Lifetimes& lifetimes, AllocatorId allocator, const std::vector<ItemInfo>& items,
                               LowestOffsetOrder order) {
  const auto steps = static_cast<std::size_t>(lifetimes.step_count());
  std::vector<Bytes> live_at(steps, 0);
  Bytes live = 0;
  for (std::size_t t = 0; t < steps; ++t) {
    const LifetimeEvent& event = lifetimes.events[t];
    if (lifetimes.storages[static_cast<std::size_t>(event.storage)].allocator == allocator) {
      live = event.kind == LifetimeEvent::Kind::kAllocate ? live + event.size : live - event.size;
    }
    live_at[t] = live;
  }
  SkylineTree busiest(steps);
  busiest.assign_leaves(live_at);

  struct Key {
    Bytes busiest;
    double area;  // a tie-break: rounding cannot make the order invalid, only different
    std::size_t width;
    Item item;
  };
  std::vector<Key> keys;
  keys.reserve(items.size());
  for (Item i = 0; i < items.size(); ++i) {
    const ItemInfo& info = items[i];
    const std::size_t width = info.upper - info.lower;
    keys.push_back({busiest.highest(info.lower, info.upper),
                    static_cast<double>(info.size) * static_cast<double>(width), width, i});
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

}  // namespace

Placement place_lowest_offset_first(const Lifetimes& lifetimes, const LowestOffsetOptions& options) {
  Placement placement;
  placement.storage_address.resize(lifetimes.storages.size(), {0, 0});
  placement.chunk_sizes.resize(lifetimes.allocators.size());
  const auto steps = static_cast<std::size_t>(std::max<Step>(0, lifetimes.step_count()));

  std::vector<std::vector<ItemInfo>> items_of(lifetimes.allocators.size());
  std::vector<std::vector<StorageId>> loose_of(lifetimes.allocators.size());
  for (std::size_t s = 0; s < lifetimes.storages.size(); ++s) {
    const StorageObject& object = lifetimes.storages[s];
    const auto a = static_cast<std::size_t>(object.allocator);
    const auto lower = static_cast<std::size_t>(std::clamp<Step>(object.live.lower, 0, static_cast<Step>(steps)));
    const auto upper = static_cast<std::size_t>(std::clamp<Step>(object.live.upper, 0, static_cast<Step>(steps)));
    if (object.size == 0 || upper <= lower) {
      loose_of[a].push_back(static_cast<StorageId>(s));
    } else {
      items_of[a].push_back({static_cast<StorageId>(s), lower, upper, object.size});
    }
  }

  SkylineTree skyline(steps);
  CandidateHeap heap;
  std::vector<Candidate> initial;
  for (std::size_t a = 0; a < lifetimes.allocators.size(); ++a) {
    const Bytes alignment = std::max<Bytes>(1, lifetimes.allocators[a].alignment);
    const std::vector<ItemInfo>& items = items_of[a];
    const std::vector<Item> rank = static_ranks(lifetimes, static_cast<AllocatorId>(a), items, options.order);
    const Bytes max_size = lifetimes.allocators[a].max_chunk_size;

    std::vector<Bytes> chunks;
    std::vector<Item> waiting(items.size());  // items for the current chunk
    for (Item i = 0; i < items.size(); ++i) waiting[i] = i;
    std::vector<Item> next_chunk;
    bool skyline_clean = a == 0;
    while (!waiting.empty()) {
      if (!skyline_clean) skyline.clear();
      skyline_clean = false;
      const auto chunk = static_cast<ChunkId>(chunks.size());
      Bytes high = 0;
      // A storage object above the max size gets a chunk of its own size, as in ggml, which
      // then serves others too (while it is dead): it goes first, at offset 0, and sets the
      // chunk's limit. Ranks start at 1 to leave it 0.
      Bytes limit = max_size;
      std::optional<Item> oversized;
      for (Item i : waiting) {
        if (items[i].size > limit) {
          limit = items[i].size;
          oversized = i;
        }
      }
      initial.clear();
      for (Item i : waiting) initial.push_back({0, i == oversized ? 0 : rank[i] + 1, i});
      heap.assign(std::move(initial));
      next_chunk.clear();
      while (!heap.empty()) {
        Candidate candidate = heap.top();
        const ItemInfo& item = items[candidate.item];
        const Offset lowest = skyline.highest(item.lower, item.upper);  // aligned when raised
        if (lowest > candidate.offset) {
          // Raised since: wait again at the new height.
          candidate.offset = lowest;
          heap.replace_top(candidate);
          continue;
        }
        heap.pop();
        if (lowest > limit || item.size > limit - lowest) {
          next_chunk.push_back(candidate.item);
          continue;
        }
        placement.storage_address[static_cast<std::size_t>(item.storage)] = {chunk, lowest};
        high = std::max(high, lowest + item.size);
        // The staircase: the full size until the first tail free, then less at each.
        std::size_t from = item.lower;
        Bytes bytes = item.size;
        for (const TailFree& tail : lifetimes.storages[static_cast<std::size_t>(item.storage)].tail_frees) {
          const auto step = static_cast<std::size_t>(std::clamp<Step>(tail.step, static_cast<Step>(from),
                                                                      static_cast<Step>(item.upper)));
          skyline.raise(from, step, align_up(lowest + bytes, alignment));
          from = step;
          bytes = std::min(bytes, tail.begin);
        }
        skyline.raise(from, item.upper, align_up(lowest + bytes, alignment));
      }
      chunks.push_back(high);
      waiting.swap(next_chunk);
    }

    // Storage objects live at no step, or empty: offset 0 of the first chunk, which must hold them.
    for (StorageId s : loose_of[a]) {
      placement.storage_address[static_cast<std::size_t>(s)] = {0, 0};
      if (chunks.empty()) chunks.push_back(0);
      chunks[0] = std::max(chunks[0], lifetimes.storages[static_cast<std::size_t>(s)].size);
    }
    placement.chunk_sizes[a] = std::move(chunks);
  }
  return placement;
}

}  // namespace galloc
