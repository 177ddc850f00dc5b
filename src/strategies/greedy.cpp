// Offline greedy placement (Pisarchyk & Lee's greedy by size, XLA's global decreasing size):
// storage objects in a chosen order, each at the best gap among those already placed that
// are live at the same time. It sees every lifetime before placing anything.
#include <algorithm>
#include <numeric>

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
    const Bytes limit = lifetimes.allocators[a].max_chunk_size;
    std::vector<std::vector<Placed>> chunks;
    std::vector<Placed> overlapping;
    for (StorageId s : order) {
      const StorageObject& object = storage(s);
      bool done = false;
      for (std::size_t c = 0; c < chunks.size() && !done; ++c) {
        overlapping.clear();
        for (const Placed& p : chunks[c]) {
          if (p.live.overlaps(object.live)) overlapping.push_back(p);
        }
        if (auto offset = find_gap(overlapping, object.size, limit, options.gap)) {
          chunks[c].push_back({*offset, *offset + object.size, object.live});
          placement.storage_address[static_cast<std::size_t>(s)] = {static_cast<ChunkId>(c), *offset};
          done = true;
        }
      }
      if (!done) {
        // A new chunk; a storage object above the max size gets one of its own.
        chunks.push_back({{0, object.size, object.live}});
        placement.storage_address[static_cast<std::size_t>(s)] = {static_cast<ChunkId>(chunks.size() - 1), 0};
      }
    }
    for (const auto& chunk : chunks) {
      Bytes high = 0;
      for (const Placed& p : chunk) high = std::max(high, p.end);
      placement.chunk_sizes[a].push_back(high);
    }
  }
  return placement;
}

}  // namespace galloc
