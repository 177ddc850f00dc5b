// GraphAllocator's state and the work on it: the buffers, the reservation, and the replay
// table that alloc checks each graph against and places its tensors from. Private to the
// library; GraphAllocator's public functions forward here.
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
#include "galloc/graph_allocator.hpp"
#include "galloc/lifetimes.hpp"
#include "galloc/plan.hpp"
#include "galloc/shared_arena.hpp"
#include "galloc/status.hpp"

namespace galloc {

struct GraphAllocator::State {
  State(std::vector<const BufferType*> buffer_types, GraphAllocatorOptions options);

  // The public functions of the same names.
  Status reserve_keeping(const Graph& graph, const BufferAssignment& assignment,
                         const std::vector<AddressRange>* alloc_reads);
  [[nodiscard]] Result<std::vector<Bytes>> measure(const Graph& graph, const BufferAssignment& assignment) const;
  Status alloc(Graph& graph);
  Status alloc(Graph& graph, AllocSink& sink);
  void reset_buffers();
  [[nodiscard]] Result<Bytes> buffer_size(BufferId id) const;
  [[nodiscard]] std::vector<Buffer*> chunks(BufferId id) const;
  Status join(BufferId id, std::shared_ptr<SharedArena> arena, std::string who);
  [[nodiscard]] Status check_allocation() const;

  // After a failed reserve freed the buffers of the allocators in `replaced` (allocator, its
  // old chunk sizes): allocates those sizes again, or drops the plan when that fails too.
  // Returns how the failure ended, for the error message.
  std::string restore_buffers(const std::vector<std::pair<std::size_t, std::vector<Bytes>>>& replaced);
  // Records what alloc must check and write for the graph just reserved.
  void record_replay(const Graph& graph, const GraphProblem& lifetimes);
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

  std::vector<const BufferType*> types_;
  std::vector<AllocatorId> allocator_of_;
  GraphAllocatorOptions options_;
  // Per allocator: one backend buffer per chunk.
  std::vector<std::vector<std::unique_ptr<Buffer>>> buffers_;
  std::optional<Plan> plan_;
  std::vector<bool> reserved_once_;  // per allocator: ggml keeps a (maybe empty) buffer after the first reserve

  // The replay table. The reserved graph's structure, kept exactly rather than hashed: any
  // other topology (llama.cpp issue 28448: same sizes, other sources) is caught by comparing
  // field by field.
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
