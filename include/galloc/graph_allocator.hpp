// The graph allocator: ggml_gallocr's state machine on galloc's graph model.
//
//   galloc::CpuBufferType cpu;
//   galloc::GraphAllocator allocator({&cpu});
//   if (auto s = allocator.reserve(worst_case_graph); !s) { /* s.message() says why */ }
//   if (auto s = allocator.alloc(graph); !s) { ... }   // every tensor.data is set now
//   std::printf("compute buffer: %zu bytes\n", size_t(allocator.buffer_size(0)));
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "galloc/buffer.hpp"
#include "galloc/graph.hpp"
#include "galloc/lifetimes.hpp"
#include "galloc/placement.hpp"
#include "galloc/plan.hpp"
#include "galloc/shared_arena.hpp"
#include "galloc/status.hpp"

namespace galloc {

// Where alloc puts a planned tensor: a chunk of its buffer id, and the address in it.
struct TensorAddress {
  BufferId buffer = -1;
  Buffer* chunk = nullptr;
  std::byte* data = nullptr;
};

// Receives alloc's addresses. GraphAllocator::alloc(graph) writes Tensor::data; an adapter
// (the ggml drop-in) places its own tensors from the same walk instead.
class AllocSink {
 public:
  virtual ~AllocSink() = default;
  // Called when the graph no longer fits the reservation, before alloc plans it again:
  // fill in whatever the graph left out that only planning reads (names, shapes).
  virtual Status before_reserve(Graph& graph) {
    (void)graph;
    return Status::ok();
  }
  // Called once per tensor the graph reads, in the order ggml's allocator first reaches them
  // (leafs, then each node's sources and the node). `address` is null for a tensor that is a
  // view or has memory: it takes its address from elsewhere.
  virtual Status place(TensorId id, const TensorAddress* address) = 0;
  // Called, before any place, for each tensor whose memory exists and that a SharedArena moved
  // (another member's output this graph reads, out of its way or into a grown chunk):
  // Tensor::data is address.data now, in address.chunk, and so must the adapter's tensor be.
  virtual Status moved(TensorId id, const TensorAddress& address) {
    (void)id, (void)address;
    return Status::ok();
  }
  // The tensors of the graph that may lie in a SharedArena's memory (another member's output
  // it reads, and views of it), or null when the adapter cannot tell. An adapter that looked
  // at every tensor's buffer while converting gives them (usually none), and alloc looks at
  // those alone instead of every tensor that has memory (the weights).
  [[nodiscard]] virtual const std::vector<TensorId>* tensors_in_arena() const { return nullptr; }
};

struct GraphAllocatorOptions {
  PlacementOptions placement;  // which strategy plans the graphs
};

// Plans a graph's tensors into buffers it owns (or takes from a SharedArena) and places them:
// reserve for the largest graph, then alloc each graph that fits that reservation. Movable;
// a moved-from allocator holds nothing, and its calls fail with kFailedPrecondition.
class GraphAllocator {
 public:
  // One buffer id per entry; entries with the same BufferType share one allocator and one
  // buffer, as in ggml_gallocr_new_n. The buffer types must outlive the allocator.
  explicit GraphAllocator(std::vector<const BufferType*> buffer_types, GraphAllocatorOptions options = {});
  ~GraphAllocator();
  GraphAllocator(GraphAllocator&&) noexcept;
  GraphAllocator& operator=(GraphAllocator&&) noexcept;
  GraphAllocator(const GraphAllocator&) = delete;
  GraphAllocator& operator=(const GraphAllocator&) = delete;

  // Plans `graph` and grows the buffers to fit it. A buffer that grows is freed before the
  // larger one is allocated, as ggml does, so old and new are never held at once. When that
  // allocation fails, the previous sizes are allocated again and the previous plan stays (its
  // tensors need placing again with alloc); if even that fails, the plan is dropped and the
  // next reserve or alloc starts over. The status says which happened.
  Status reserve(const Graph& graph, const BufferAssignment& assignment = {});
  // Plans `graph` and returns the bytes each buffer id would need (ids sharing a buffer type
  // each report the shared size, as ggml_gallocr_reserve_n_size does). Changes nothing.
  [[nodiscard]] Result<std::vector<Bytes>> measure(const Graph& graph, const BufferAssignment& assignment = {}) const;
  // Places the graph's tensors at the reserved offsets, reserving first when the graph no
  // longer fits the reservation and there is a single buffer id. Every buffer is reset first.
  Status alloc(Graph& graph);
  // The same walk, with the addresses handed to `sink` instead of written to Tensor::data.
  Status alloc(Graph& graph, AllocSink& sink);
  // What alloc does to the buffers of its own before placing (Buffer::reset), and nothing
  // else: for an adapter whose graph still holds every address of this allocator's last alloc
  // and whose buffers have not changed since (ggml's loop allocating one graph again).
  void reset_buffers();
  // True when `graph` does not fit the current reservation: other lists, another op or source
  // of a node, another view source or input/output flag of a tensor the walk reads, a tensor
  // larger than its slot, or one that needs a slot and has none (it had memory or was a view).
  [[nodiscard]] bool needs_reserve(const Graph& graph) const;

  // Bytes of the buffer for `id`; 0 for an id that shares an earlier id's buffer.
  [[nodiscard]] Result<Bytes> buffer_size(BufferId id) const;
  [[nodiscard]] int buffer_count() const;
  // The plan of the last successful reserve.
  [[nodiscard]] const std::optional<Plan>& plan() const;
  // The backend buffers of an id's chunks (shared ids see the same buffers). For an id that
  // joined a SharedArena: the arena's chunks that the last alloc used (none before it).
  [[nodiscard]] std::vector<Buffer*> chunks(BufferId id) const;

  // Takes the buffers of buffer id `id` (and of the ids sharing its buffer type) from `arena`
  // instead of allocating them: see shared_arena.hpp for the contract. Call it before the first
  // reserve; the arena's buffer type must have the id's name, alignment and max size. `who`
  // names this allocator in the arena's messages. buffer_size keeps reporting this allocator's
  // own need.
  Status join(BufferId id, std::shared_ptr<SharedArena> arena, std::string who = "");
  // OK when every tensor this allocator's last alloc placed in an arena is still its own, that is
  // no other member has allocated over them since; an error saying which arena otherwise. OK
  // for an allocator that joined no arena.
  [[nodiscard]] Status check_allocation() const;

 private:
  // The buffers, the reservation and what alloc replays of it (src/graph_allocator_state.hpp).
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace galloc
