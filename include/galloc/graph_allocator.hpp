// The graph allocator: ggml_gallocr's state machine on galloc's graph model.
//
//   galloc::CpuBufferType cpu;
//   galloc::GraphAllocator allocator({&cpu});
//   if (auto s = allocator.reserve(worst_case_graph); !s) { /* s.message() says why */ }
//   if (auto s = allocator.alloc(graph); !s) { ... }   // every tensor.data is set now
//   std::printf("compute buffer: %zu bytes\n", size_t(allocator.buffer_size(0)));
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
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
  [[nodiscard]] int buffer_count() const { return static_cast<int>(types_.size()); }
  // The plan of the last successful reserve.
  [[nodiscard]] const std::optional<Plan>& plan() const { return plan_; }
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
  // After a failed reserve freed the buffers of the allocators in `replaced` (allocator, its
  // old chunk sizes): allocates those sizes again, or drops the plan when that fails too.
  // Returns how the failure ended, for the error message.
  std::string restore_buffers(const std::vector<std::pair<std::size_t, std::vector<Bytes>>>& replaced);
  // reserve, from alloc with what the graph reads (kept by an arena that must grow), or not.
  Status reserve_keeping(const Graph& graph, const BufferAssignment& assignment,
                         const std::vector<AddressRange>* alloc_reads);
  // Records what alloc must check and write for the graph just reserved.
  void record_replay(const Graph& graph, const Lifetimes& lifetimes);
  // alloc's first half: reserves again when the graph no longer fits (telling the sink first),
  // then resets the buffers and looks up their base addresses.
  Status prepare_alloc(Graph& graph, AllocSink* sink);
  // alloc's second half: place(id, address or null) for every slot, in `order` (the slots
  // themselves, or indices into them).
  template <typename Order, typename Place>
  Status replay(const Graph& graph, const Order& order, Place&& place) const;

  // One per tensor the walk reads (leafs, nodes, their sources; each once), as the reserve
  // saw it: alloc re-checks these fields and writes `data` from the address.
  struct ReplaySlot {
    TensorId id = kNoTensor;
    TensorId view_src = kNoTensor;
    std::uint32_t flags = 0;  // input and output bits: they change the walk
    BufferId buffer = -1;     // -1: not planned (it had memory or was a view)
    std::uint32_t chunk = 0;  // index into chunk_bases_
    std::int32_t shape = -1;  // a node's index into node_shapes_; -1 for the others
    Offset offset = 0;
    Bytes size = 0;  // the slot's bytes: a larger tensor needs a reserve
  };
  // replay's view of an entry of its order: a slot, or an index into slots_.
  [[nodiscard]] const ReplaySlot& slot_at(const ReplaySlot& slot) const { return slot; }
  [[nodiscard]] const ReplaySlot& slot_at(std::int32_t index) const { return slots_[static_cast<std::size_t>(index)]; }
  // A node's op and sources at reserve time.
  struct NodeShape {
    Op op = Op::None;
    std::array<TensorId, kMaxSources> src{};
  };

  std::vector<const BufferType*> types_;
  std::vector<AllocatorId> allocator_of_;
  GraphAllocatorOptions options_;
  // Per allocator: one backend buffer per chunk.
  std::vector<std::vector<std::unique_ptr<Buffer>>> buffers_;
  std::optional<Plan> plan_;
  std::vector<bool> reserved_once_;  // per allocator: ggml keeps a (maybe empty) buffer after the first reserve
  // The reserved graph's structure, kept exactly rather than hashed: any other topology
  // (llama.cpp issue 28448: same sizes, other sources) is caught by comparing field by field.
  std::vector<TensorId> reserved_nodes_;
  std::vector<TensorId> reserved_leafs_;
  OpSet reserved_inplace_ops_;                      // other in-place rules give other lifetimes
  std::vector<std::int32_t> reserved_node_groups_;  // and so do other groups
  bool reserved_inplace_across_buffers_ = true;     // and those rules
  bool reserved_inplace_through_views_ = false;
  std::vector<ReplaySlot> slots_;          // in tensor id order
  std::vector<std::int32_t> visit_order_;  // indices into slots_, in ggml's first-visit order
  // The read tensors that read memory that existed at reserve (theirs or a view's root's):
  // where an alloc looks for another arena member's output, rather than in every view.
  std::vector<TensorId> existing_readers_;
  std::vector<NodeShape> node_shapes_;      // per node, in tensor id order
  std::vector<std::int32_t> scratch_;       // per tensor: its slot, or negative if no slot
  std::vector<Buffer*> chunk_buffers_;      // every chunk of every allocator; refreshed by alloc
  std::vector<std::byte*> chunk_bases_;     // their base addresses
  std::vector<std::uint32_t> first_chunk_;  // per allocator: its first index in chunk_bases_

  // Membership in a SharedArena; leaving (on destruction) tells the arena.
  class Membership {
   public:
    Membership() = default;
    Membership(std::shared_ptr<SharedArena> arena, SharedArena::MemberId id) : arena_(std::move(arena)), id_(id) {}
    ~Membership() { leave(); }
    Membership(Membership&& other) noexcept : arena_(std::move(other.arena_)), id_(other.id_) {}
    Membership& operator=(Membership&& other) noexcept {
      if (this != &other) {
        leave();
        arena_ = std::move(other.arena_);
        id_ = other.id_;
      }
      return *this;
    }
    Membership(const Membership&) = delete;
    Membership& operator=(const Membership&) = delete;
    [[nodiscard]] SharedArena* arena() const { return arena_.get(); }
    [[nodiscard]] SharedArena::MemberId id() const { return id_; }

   private:
    void leave() {
      if (arena_) arena_->remove_member(id_);
      arena_.reset();
    }
    std::shared_ptr<SharedArena> arena_;
    SharedArena::MemberId id_ = 0;
  };
  [[nodiscard]] BufferId first_id_of(std::size_t allocator) const;
  // The ranges of the memory that exists that the graph reads (those an arena may hold), and
  // the bytes it reads from memory that exists but has no address yet.
  [[nodiscard]] static std::vector<AddressRange> existing_memory(const Graph& graph, Bytes* without_address = nullptr);
  // needs_reserve; while it is false, `reads` gets existing_memory(graph), from the readers
  // the reservation recorded (of them, only those in `candidates` when it is given: see
  // AllocSink::tensors_in_arena) unless a planned tensor has memory now.
  [[nodiscard]] bool needs_reserve_reading(const Graph& graph, std::vector<AddressRange>* reads,
                                           const std::vector<TensorId>* candidates = nullptr) const;
  std::vector<Membership> arena_of_;             // per allocator; empty membership: its own buffers
  std::vector<std::vector<Bytes>> arena_needs_;  // per allocator in an arena: its planned chunk sizes
  // Per allocator in an arena: the arena's generation after its last place, if that placement
  // may be kept while the generation stays (SharedArena::MemberPlacement::reusable); 0 otherwise.
  std::vector<std::uint64_t> arena_generation_;
  // alloc's working state in an arena, kept for its vectors' capacity: what the graph reads,
  // and the arena's answer to where the allocator's chunks are.
  std::vector<AddressRange> alloc_reads_;
  SharedArena::MemberPlacement arena_placement_;
};

}  // namespace galloc
