// The placement problem and its solution, and nothing else: storage objects with sizes and
// live intervals, grouped by allocator, and where each one goes. As MiniMalloc's Problem and
// Solution, it knows no graph, tensor or op; the liveness analysis (lifetimes.hpp) produces
// one from a graph, a MiniMalloc CSV (minimalloc_csv.hpp) from a file, and every placement
// strategy and the validator read only this.
#pragma once

#include <cstdint>
#include <vector>

#include "galloc/types.hpp"

namespace galloc {

// One allocator: one buffer type, which may back several buffer ids.
struct AllocatorSpec {
  Bytes alignment = 1;
  Bytes max_chunk_size = kUnlimited;  // the buffer type's max size
};

struct LifetimeEvent {
  enum class Kind : std::uint8_t { kAllocate, kFree };
  Kind kind = Kind::kAllocate;
  StorageId storage = -1;
  Bytes begin = 0;  // first byte freed, relative to the storage (kFree only)
  Bytes size = 0;   // bytes allocated or freed, aligned to the allocator
};

// Bytes [begin, storage size) of a storage die at `step`, before the rest: ggml frees the
// tail when a smaller tensor takes over a parent's memory in place.
struct TailFree {
  Step step = 0;
  Bytes begin = 0;
};

struct StorageObject {
  AllocatorId allocator = 0;
  Bytes size = 0;                     // aligned to the allocator
  Interval<Step> live;                // [allocation step, final free step); upper = step count if never freed
  std::vector<TailFree> tail_frees;   // in step order, begins decreasing
  TensorId first_tensor = kNoTensor;  // the tensor that allocated it; in-place successors share it
};

// Every event is one step, so a storage object is live over the half-open step interval from
// its allocation to its last free. The events keep the order in which they happened, which
// the online strategy (ggml) replays; the offline ones need only the intervals.
struct Problem {
  std::vector<AllocatorSpec> allocators;
  std::vector<StorageObject> storages;
  std::vector<LifetimeEvent> events;  // one per step

  [[nodiscard]] Step step_count() const { return static_cast<Step>(events.size()); }
};

// Where a storage object lives: a chunk of its allocator's buffer, and an offset in it.
struct ChunkAddress {
  ChunkId chunk = -1;
  Offset offset = 0;
  friend bool operator==(const ChunkAddress& a, const ChunkAddress& b) {
    return a.chunk == b.chunk && a.offset == b.offset;
  }
  friend bool operator!=(const ChunkAddress& a, const ChunkAddress& b) { return !(a == b); }
};

// A solution: an address per storage object and the chunk sizes it needs.
struct Placement {
  std::vector<ChunkAddress> storage_address;    // per storage object
  std::vector<std::vector<Bytes>> chunk_sizes;  // per allocator, per chunk: bytes needed
};

}  // namespace galloc
