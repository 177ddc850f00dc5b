// Liveness: the one pass that knows about ops and views.
//
// Walks a graph the way ggml's graph allocator does (leafs, then explicit inputs, then nodes
// in order; children and view counts; in-place reuse of a dying parent) and records, instead
// of addresses, a sequence of events: "allocate storage s", "free bytes [b, b+n) of s".
// Every event is one step (problem.hpp). Placement strategies see only the Problem part of
// the result.
// The in-place decisions do not depend on LifetimeOptions, so the storage objects are the
// same with and without them; only their intervals differ.
#pragma once

#include <vector>

#include "galloc/buffer.hpp"
#include "galloc/graph.hpp"
#include "galloc/problem.hpp"
#include "galloc/status.hpp"
#include "galloc/types.hpp"

namespace galloc {

// The placement problem a graph poses, plus what only the graph side reads: which storage
// object and buffer each tensor has, and when each node runs.
struct GraphProblem : Problem {
  std::vector<AllocatorId> buffer_allocator;  // per buffer id
  std::vector<StorageId> tensor_storage;      // per tensor; -1: view, existing memory, or unused
  std::vector<BufferId> tensor_buffer;        // per tensor; -1 where tensor_storage is -1
  // Per tensor: the buffer type's alloc_size for it in tensor_buffer (0 where tensor_storage is
  // -1), so the plan need not ask again. May be empty (lifetimes built by hand).
  std::vector<Bytes> tensor_size;
  // The tensors the walk reads (leafs, nodes and nodes' sources), each once, in the order
  // ggml's alloc_graph first reaches them: leafs, then each node's sources and the node. May
  // be empty (lifetimes built by hand).
  std::vector<TensorId> read_order;
  std::vector<Step> node_step;  // per node: the step count when it is computed
  // Leafs allocated at their first write (LifetimeOptions::defer_written_leafs), each with the
  // step at which upstream's walk would have allocated it instead, counted in these events.
  struct DeferredLeaf {
    TensorId leaf = kNoTensor;
    Step upstream_step = 0;
  };
  std::vector<DeferredLeaf> deferred_leafs;
};

// Buffer ids: one per node / leaf, or empty spans for "all in buffer 0".
struct BufferAssignment {
  Span<const BufferId> node_buffer_ids;
  Span<const BufferId> leaf_buffer_ids;
};

struct LifetimeOptions {
  // Upstream ggml allocates every leaf before the first node. A leaf whose first user is a
  // CPY over all of it (ggml_cpy into a fresh tensor, as gpt-2 and whisper do) holds nothing
  // before that write, so with this option it is allocated there. Partial writes (SET, ACC,
  // SET_ROWS, a copy into a window) keep upstream's lifetime: the rest may hold the
  // application's data.
  // The `ggml` strategy always runs without it, to match upstream.
  bool defer_written_leafs = false;
};

// Upstream's lifetimes (no leaf deferred) from lifetimes analysed with defer_written_leafs,
// without walking the graph again: every deferred leaf's allocation moves back to the leaf
// phase and the steps after it shift. The same as analyze_lifetimes without the option.
[[nodiscard]] GraphProblem upstream_lifetimes(const GraphProblem& deferred);

// Which buffer ids share an allocator: duplicates of the same buffer type share one.
[[nodiscard]] std::vector<AllocatorId> allocators_of(Span<const BufferType* const> buffer_types);

// Checks the graph and the ids, then walks it. buffer_types[i] describes buffer id i.
// Storage objects are numbered by their first tensor, so the same graph gives the same
// storage ids with and without deferred leafs.
[[nodiscard]] Result<GraphProblem> analyze_lifetimes(const Graph& graph, Span<const BufferType* const> buffer_types,
                                                     const BufferAssignment& assignment = {},
                                                     const LifetimeOptions& options = {});

}  // namespace galloc
