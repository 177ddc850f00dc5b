// Offline greedy placement (Pisarchyk & Lee's greedy by size, XLA's global decreasing size):
// storage objects in a chosen order, each at the best gap among those already placed that
// are live at the same time. It sees every lifetime before placing anything.
#include <algorithm>
#include <limits>
#include <numeric>
#include <optional>

#include "galloc/placement.hpp"

namespace galloc {

namespace {

struct Placed {
  Offset begin;
  Offset end;
  Interval<Step> live;
};

// Where `size` bytes live over `live` fit in one chunk, or nullopt if not below `limit`.
std::optional<Offset> find_gap(std::vector<Placed>& overlapping, Bytes size, Bytes limit, GapChoice choice) {
  std::sort(overlapping.begin(), overlapping.end(),
            [](const Placed& a, const Placed& b) { return a.begin < b.begin; });
  std::optional<Offset> best;
  Bytes best_gap = std::numeric_limits<Bytes>::max();
  Offset cursor = 0;
  for (const Placed& p : overlapping) {
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

// The placed storage objects of one chunk that are live during a time interval, in
// O((k + 1) log n) for k results: objects are ordered by start step once, and a max-tree over
// that order holds, for each placed object, its end step (unplaced: kNone).
class LiveIndex {
 public:
  // starts: the objects' start steps in ascending order.
  explicit LiveIndex(const std::vector<Step>* starts) : starts_(starts) {
    while (leaves_ < starts->size()) leaves_ *= 2;
    ends_.assign(2 * leaves_, kNone);
  }

  void insert(std::size_t position, Step end) {
    std::size_t node = leaves_ + position;
    ends_[node] = end;
    for (node /= 2; node >= 1; node /= 2) ends_[node] = std::max(ends_[2 * node], ends_[2 * node + 1]);
  }

  // Appends the positions of placed objects live at some step of [lower, upper).
  void query(Interval<Step> live, std::vector<std::size_t>& out) const {
    // Objects starting at or after `upper` cannot overlap.
    const auto limit = static_cast<std::size_t>(
        std::lower_bound(starts_->begin(), starts_->end(), live.upper) - starts_->begin());
    if (limit > 0) collect(1, 0, leaves_, limit, live.lower, out);
  }

 private:
  static constexpr Step kNone = std::numeric_limits<Step>::min();

  void collect(std::size_t node, std::size_t from, std::size_t to, std::size_t limit, Step after,
               std::vector<std::size_t>& out) const {
    if (from >= limit || ends_[node] <= after) return;
    if (to - from == 1) {
      out.push_back(from);
      return;
    }
    const std::size_t middle = (from + to) / 2;
    collect(2 * node, from, middle, limit, after, out);
    collect(2 * node + 1, middle, to, limit, after, out);
  }

  const std::vector<Step>* starts_;
  std::size_t leaves_ = 1;
  std::vector<Step> ends_;
};

}  // namespace

Placement place_greedy(const Lifetimes& lifetimes, const GreedyOptions& options) {
  Placement placement;
  placement.storage_address.resize(lifetimes.storages.size());
  placement.chunk_sizes.resize(lifetimes.allocators.size());

  std::vector<std::vector<StorageId>> by_allocator(lifetimes.allocators.size());
  for (std::size_t s = 0; s < lifetimes.storages.size(); ++s) {
    by_allocator[static_cast<std::size_t>(lifetimes.storages[s].allocator)].push_back(static_cast<StorageId>(s));
  }
  auto storage = [&](StorageId s) -> const StorageObject& { return lifetimes.storages[static_cast<std::size_t>(s)]; };

  for (std::size_t a = 0; a < by_allocator.size(); ++a) {
    auto& order = by_allocator[a];
    if (options.order == GreedyOrder::kDecreasingSize) {
      std::stable_sort(order.begin(), order.end(), [&](StorageId x, StorageId y) {
        const auto& sx = storage(x);
        const auto& sy = storage(y);
        if (sx.size != sy.size) return sx.size > sy.size;
        return sx.live.lower < sy.live.lower;
      });
    } else {
      std::stable_sort(order.begin(), order.end(),
                       [&](StorageId x, StorageId y) { return storage(x).live.lower < storage(y).live.lower; });
    }
    // Positions in start order, for the live index.
    std::vector<StorageId> by_start = order;
    std::stable_sort(by_start.begin(), by_start.end(),
                     [&](StorageId x, StorageId y) { return storage(x).live.lower < storage(y).live.lower; });
    std::vector<Step> starts;
    std::vector<std::size_t> position(lifetimes.storages.size());
    for (std::size_t i = 0; i < by_start.size(); ++i) {
      starts.push_back(storage(by_start[i]).live.lower);
      position[static_cast<std::size_t>(by_start[i])] = i;
    }
    std::vector<Placed> at(by_start.size());  // what is placed at each position

    const Bytes limit = lifetimes.allocators[a].max_chunk_size;
    std::vector<LiveIndex> chunks;
    std::vector<Bytes> high;
    std::vector<std::size_t> found;
    std::vector<Placed> overlapping;
    for (StorageId s : order) {
      const StorageObject& object = storage(s);
      const std::size_t here = position[static_cast<std::size_t>(s)];
      bool done = false;
      for (std::size_t c = 0; c < chunks.size() && !done; ++c) {
        found.clear();
        chunks[c].query(object.live, found);
        overlapping.clear();
        for (std::size_t p : found) overlapping.push_back(at[p]);
        if (auto offset = find_gap(overlapping, object.size, limit, options.gap)) {
          at[here] = {*offset, *offset + object.size, object.live};
          chunks[c].insert(here, object.live.upper);
          high[c] = std::max(high[c], *offset + object.size);
          placement.storage_address[static_cast<std::size_t>(s)] = {static_cast<ChunkId>(c), *offset};
          done = true;
        }
      }
      if (!done) {
        // A new chunk; a storage object above the max size gets one of its own.
        chunks.emplace_back(&starts);
        high.push_back(object.size);
        at[here] = {0, object.size, object.live};
        chunks.back().insert(here, object.live.upper);
        placement.storage_address[static_cast<std::size_t>(s)] = {static_cast<ChunkId>(chunks.size() - 1), 0};
      }
    }
    placement.chunk_sizes[a] = high;
  }
  return placement;
}

}  // namespace galloc
