// A plan: where every planned tensor lives, how big each buffer's chunks are, and how far
// that is from the lower bound. (galloc/validator.hpp checks the placement under it against
// the problem alone.)
#pragma once

#include <string>
#include <vector>

#include "galloc/buffer.hpp"
#include "galloc/graph.hpp"
#include "galloc/lifetimes.hpp"
#include "galloc/placement.hpp"

namespace galloc {

struct TensorPlacement {
  BufferId buffer = -1;  // -1: not planned (view, existing memory, or not in the graph)
  ChunkId chunk = -1;
  Offset offset = 0;
  Bytes size = 0;  // the buffer type's alloc size for the tensor
  [[nodiscard]] bool planned() const { return buffer >= 0; }
  friend bool operator==(const TensorPlacement& a, const TensorPlacement& b) {
    return a.buffer == b.buffer && a.chunk == b.chunk && a.offset == b.offset && a.size == b.size;
  }
  friend bool operator!=(const TensorPlacement& a, const TensorPlacement& b) { return !(a == b); }
};

struct BufferPlan {
  std::string name;  // the buffer type's name
  AllocatorId allocator = 0;
  bool shared = false;  // same buffer type as an earlier id: its memory is counted there
  std::vector<Bytes> chunk_sizes;
  Bytes lower_bound = 0;  // most bytes live at one step
  Bytes no_reuse = 0;     // every storage object side by side
  [[nodiscard]] Bytes size() const;
};

struct Plan {
  std::string strategy;
  std::vector<TensorPlacement> tensors;  // per tensor id
  std::vector<BufferPlan> buffers;       // per buffer id

  // Memory of all distinct buffers (shared ids counted once).
  [[nodiscard]] Bytes total_size() const;
  [[nodiscard]] Bytes total_lower_bound() const;
};

[[nodiscard]] Plan make_plan(const Graph& graph, Span<const BufferType* const> buffer_types,
                             const GraphProblem& lifetimes, const Placement& placement, std::string strategy);

}  // namespace galloc
