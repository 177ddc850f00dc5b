// Offline greedy placement (Pisarchyk & Lee's greedy by size, XLA's global decreasing size):
// storage objects in a chosen order, each at the best gap among those already placed that
// are live at the same time. It sees every lifetime before placing anything.
//
// The gaps only depend on the union of the byte ranges of the placed objects live during an
// object's interval, and that union is small (a few ranges) even when thousands of objects
// overlap (long-lived outputs, skip connections). So each chunk keeps merged byte ranges in
// two segment trees over steps, and a query reads O(log steps) short lists instead of
// gathering and sorting every overlapping object:
//   live at the first step of [l, u): the ranges of objects covering a whole tree node sit in
//     that node (`covering`), so they are on the path from leaf l to the root;
//   starting inside (l, u): each node holds the ranges of every object that starts in its
//     range (`starting`), so the O(log) nodes that make up [l + 1, u) hold them all.
// Both sets together are exactly the objects live at some step of [l, u).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <unordered_map>

#include "galloc/placement.hpp"
#include "placement_internal.hpp"

namespace galloc {

namespace {

// Bytes [begin, end) of a chunk. A zero-size object is a span with begin == end: placed inside
// a gap it splits the gap in two, as the sweep in find_gap has always treated it.
struct ByteSpan {
  Offset begin = 0;
  Offset end = 0;
};

constexpr std::uint32_t kNoSpan = std::numeric_limits<std::uint32_t>::max();

// Singly linked lists of spans in one pool. Each list is sorted by begin, and its spans
// neither overlap nor touch (end < next begin), so a list is the union of what was added.
// Touching spans merge: find_gap sees no gap between them either way, and a zero-size span
// touching a range changes no gap.
class SpanLists {
 public:
  // Whether the list already holds all of `span` (then adding it changes nothing).
  [[nodiscard]] bool covers(std::uint32_t head, const ByteSpan& span) const {
    std::uint32_t at = head;
    while (at != kNoSpan && pool_[at].span.end < span.begin) at = pool_[at].next;
    return at != kNoSpan && pool_[at].span.begin <= span.begin && span.end <= pool_[at].span.end;
  }

  // Adds `span` to the list starting at `head`; returns the list's new head.
  [[nodiscard]] std::uint32_t add(std::uint32_t head, const ByteSpan& span) {
    std::uint32_t before = kNoSpan;
    std::uint32_t at = head;
    while (at != kNoSpan && pool_[at].span.end < span.begin) {
      before = at;
      at = pool_[at].next;
    }
    if (at != kNoSpan && pool_[at].span.begin <= span.end) {
      // Overlaps or touches `at`: widen it and swallow the spans it now reaches.
      ByteSpan& merged = pool_[at].span;
      merged.begin = std::min(merged.begin, span.begin);
      merged.end = std::max(merged.end, span.end);
      std::uint32_t next = pool_[at].next;
      while (next != kNoSpan && pool_[next].span.begin <= merged.end) {
        merged.end = std::max(merged.end, pool_[next].span.end);
        const std::uint32_t dead = next;
        next = pool_[next].next;
        pool_[dead].next = free_;
        free_ = dead;
      }
      pool_[at].next = next;
      return head;
    }
    std::uint32_t fresh = free_;
    if (fresh != kNoSpan) {
      free_ = pool_[fresh].next;
      pool_[fresh] = {span, at};
    } else {
      fresh = static_cast<std::uint32_t>(pool_.size());
      pool_.push_back({span, at});
    }
    if (before == kNoSpan) return fresh;
    pool_[before].next = fresh;
    return head;
  }

  void append(std::uint32_t head, std::vector<ByteSpan>& out) const {
    for (std::uint32_t at = head; at != kNoSpan; at = pool_[at].next) out.push_back(pool_[at].span);
  }

  void reserve(std::size_t n) { pool_.reserve(n); }

 private:
  struct Entry {
    ByteSpan span;
    std::uint32_t next;
  };
  std::vector<Entry> pool_;
  std::uint32_t free_ = kNoSpan;
};

// The list heads of one chunk's two trees (`leaves` leaves each, heap-numbered from 1).
// The first chunk is dense; further chunks (small max sizes, often many of them, each with
// few objects) keep only the heads they use.
class ChunkTrees {
 public:
  ChunkTrees(std::size_t leaves, bool dense) : leaves_(leaves) {
    if (dense) dense_.assign(4 * leaves, kNoSpan);
  }

  [[nodiscard]] std::size_t leaves() const { return leaves_; }

  [[nodiscard]] std::uint32_t covering(std::size_t node) const { return get(node); }
  [[nodiscard]] std::uint32_t starting(std::size_t node) const { return get(2 * leaves_ + node); }
  void set_covering(std::size_t node, std::uint32_t head) { set(node, head); }
  void set_starting(std::size_t node, std::uint32_t head) { set(2 * leaves_ + node, head); }

 private:
  [[nodiscard]] std::uint32_t get(std::size_t slot) const {
    if (!dense_.empty()) return dense_[slot];
    const auto found = sparse_.find(slot);
    return found == sparse_.end() ? kNoSpan : found->second;
  }
  void set(std::size_t slot, std::uint32_t head) {
    if (!dense_.empty())
      dense_[slot] = head;
    else
      sparse_[slot] = head;
  }

  std::size_t leaves_;
  std::vector<std::uint32_t> dense_;
  std::unordered_map<std::size_t, std::uint32_t> sparse_;
};

// The merged byte ranges of the placed objects of one chunk live at some step of `live`
// (in no particular order).
void gather(const ChunkTrees& trees, const SpanLists& lists, Interval<Step> live, std::vector<ByteSpan>& out) {
  const std::size_t leaves = trees.leaves();
  const auto lower = static_cast<std::size_t>(live.lower);
  const auto upper = static_cast<std::size_t>(live.upper);
  for (std::size_t node = leaves + lower; node >= 1; node /= 2) lists.append(trees.covering(node), out);
  for (std::size_t l = leaves + lower + 1, r = leaves + upper; l < r; l /= 2, r /= 2) {
    if (l & 1) lists.append(trees.starting(l++), out);
    if (r & 1) lists.append(trees.starting(--r), out);
  }
}

void insert(ChunkTrees& trees, SpanLists& lists, Interval<Step> live, const ByteSpan& span) {
  const std::size_t leaves = trees.leaves();
  const auto lower = static_cast<std::size_t>(live.lower);
  const auto upper = static_cast<std::size_t>(live.upper);
  for (std::size_t l = leaves + lower, r = leaves + upper; l < r; l /= 2, r /= 2) {
    if (l & 1) {
      trees.set_covering(l, lists.add(trees.covering(l), span));
      ++l;
    }
    if (r & 1) {
      --r;
      trees.set_covering(r, lists.add(trees.covering(r), span));
    }
  }
  // A node's list holds its children's, so once a node covers the span its ancestors do too.
  for (std::size_t node = leaves + lower; node >= 1; node /= 2) {
    const std::uint32_t head = trees.starting(node);
    if (lists.covers(head, span)) break;
    trees.set_starting(node, lists.add(head, span));
  }
}

// Where `size` bytes fit between the spans, or nullopt if not below `limit`. The gaps are
// those between the spans in begin order; past the last one the chunk is free up to `limit`.
std::optional<Offset> find_gap(std::vector<ByteSpan>& spans, Bytes size, Bytes limit, GapChoice choice) {
  std::sort(spans.begin(), spans.end(), [](const ByteSpan& a, const ByteSpan& b) { return a.begin < b.begin; });
  std::optional<Offset> best;
  Bytes best_gap = std::numeric_limits<Bytes>::max();
  Offset cursor = 0;
  for (const ByteSpan& p : spans) {
    if (p.begin > cursor) {
      const Bytes gap = p.begin - cursor;
      if (gap >= size) {
        if (choice == GapChoice::kLowestOffset) return cursor;
        if (gap < best_gap) {
          best_gap = gap;
          best = cursor;
        }
      }
    }
    cursor = std::max(cursor, p.end);
  }
  if (best) return best;
  if (cursor <= limit && size <= limit - cursor) return cursor;
  return std::nullopt;
}

// The order objects are placed in: std::sort on unique keys, so the same as a stable sort by
// the order's criteria over storage ids.
std::vector<StorageId> placing_order(const Problem& problem, std::vector<StorageId> ids, GreedyOrder order) {
  struct Key {
    Bytes size;
    Step when;  // the start, or the negated end (late first)
    StorageId id;
  };
  const bool by_size = order != GreedyOrder::kStartTime;
  const bool late_first = order == GreedyOrder::kDecreasingSizeLateFirst;
  std::vector<Key> keys;
  keys.reserve(ids.size());
  for (StorageId s : ids) {
    const StorageObject& object = problem.storages[static_cast<std::size_t>(s)];
    // late first: the later end first (negated, so that the sort below stays ascending)
    const Step when = late_first ? -object.live.upper : object.live.lower;
    keys.push_back({by_size ? object.size : 0, when, s});
  }
  std::sort(keys.begin(), keys.end(), [](const Key& a, const Key& b) {
    if (a.size != b.size) return a.size > b.size;
    if (a.when != b.when) return a.when < b.when;
    return a.id < b.id;
  });
  for (std::size_t i = 0; i < keys.size(); ++i) ids[i] = keys[i].id;
  return ids;
}

}  // namespace

Placement place_greedy(const Problem& problem, const GreedyOptions& options) {
  Placement placement;
  placement.storage_address.resize(problem.storages.size());
  placement.chunk_sizes.resize(problem.allocators.size());

  std::vector<std::vector<StorageId>> by_allocator = detail::storages_by_allocator(problem);
  // Steps relative to the earliest, so that hand-made problems (intervals past the events,
  // or before step 0) index the trees safely too.
  Step first = 0;
  Step last = problem.step_count();
  for (const StorageObject& object : problem.storages) {
    first = std::min(first, object.live.lower);
    last = std::max(last, object.live.upper);
  }
  std::size_t leaves = 1;
  while (leaves <= static_cast<std::size_t>(last - first)) leaves *= 2;  // a leaf for every start
  auto steps = [first](const StorageObject& object) {
    return Interval<Step>{object.live.lower - first, std::max(object.live.lower, object.live.upper) - first};
  };

  std::vector<ByteSpan> spans;
  for (std::size_t a = 0; a < by_allocator.size(); ++a) {
    if (by_allocator[a].empty()) continue;
    const std::vector<StorageId> order = placing_order(problem, std::move(by_allocator[a]), options.order);
    const Bytes limit = problem.allocators[a].max_chunk_size;
    SpanLists lists;
    lists.reserve(4 * order.size());
    std::vector<ChunkTrees> chunks;
    std::vector<Bytes> high;
    for (StorageId s : order) {
      const StorageObject& object = problem.storages[static_cast<std::size_t>(s)];
      bool done = false;
      for (std::size_t c = 0; c < chunks.size() && !done; ++c) {
        spans.clear();
        gather(chunks[c], lists, steps(object), spans);
        // a chunk made for an object above the max size has that object's size to offer
        if (auto offset = find_gap(spans, object.size, std::max(limit, high[c]), options.gap)) {
          insert(chunks[c], lists, steps(object), {*offset, *offset + object.size});
          high[c] = std::max(high[c], *offset + object.size);
          placement.storage_address[static_cast<std::size_t>(s)] = {static_cast<ChunkId>(c), *offset};
          done = true;
        }
      }
      if (!done) {
        // A new chunk; a storage object above the max size gets one of its own size, which
        // others use too while it is dead.
        chunks.emplace_back(leaves, chunks.empty());
        high.push_back(object.size);
        insert(chunks.back(), lists, steps(object), {0, object.size});
        placement.storage_address[static_cast<std::size_t>(s)] = {static_cast<ChunkId>(chunks.size() - 1), 0};
      }
    }
    placement.chunk_sizes[a] = high;
  }
  return placement;
}

}  // namespace galloc
