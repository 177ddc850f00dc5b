#include "galloc/graph_allocator.hpp"

#include <algorithm>

#include "galloc/planner.hpp"
#include "graph_allocator_state.hpp"
#include "tensor_sources.hpp"

namespace galloc {

namespace {

constexpr std::uint32_t kWalkFlags = kFlagInput | kFlagOutput;
// record_replay's marks in scratch_ before they become slot indices.
constexpr std::int32_t kNotRead = -1;
constexpr std::int32_t kRead = -2;
constexpr std::int32_t kReadNode = -3;

}  // namespace

GraphAllocator::State::State(std::vector<const BufferType*> buffer_types, GraphAllocatorOptions options)
    : types_(std::move(buffer_types)), allocator_of_(allocators_of(types_)), options_(options) {
  AllocatorId count = 0;
  for (AllocatorId a : allocator_of_) count = std::max(count, a + 1);
  buffers_.resize(static_cast<std::size_t>(count));
  reserved_once_.assign(static_cast<std::size_t>(count), false);
  arena_of_.resize(static_cast<std::size_t>(count));
  arena_needs_.resize(static_cast<std::size_t>(count));
  arena_generation_.assign(static_cast<std::size_t>(count), 0);
}

Status GraphAllocator::State::reserve_keeping(const Graph& graph, const BufferAssignment& assignment,
                                              const std::vector<AddressRange>* alloc_reads) {
  auto planned = plan_graph(graph, types_, assignment, options_.placement);
  if (!planned) return planned.status();
  const Plan& plan = planned->plan;
  // For the allocators in an arena: room beside each for what it reads from other members,
  // what lies in the arena now or has no address yet (memory elsewhere, another graph's).
  // alloc passes what it is about to read, which the arena then keeps.
  std::optional<std::vector<AddressRange>> reads;
  Bytes unaddressed = 0;

  // Every allocator whose buffer must grow frees its chunks before allocating the new ones, as
  // ggml does: the process never holds the old and the new buffer at once.
  std::vector<std::pair<std::size_t, std::vector<Bytes>>> replaced;  // allocator, its old chunk sizes
  for (std::size_t b = 0; b < plan.buffers.size(); ++b) {
    const BufferPlan& buffer = plan.buffers[b];
    if (buffer.shared) continue;
    const auto a = static_cast<std::size_t>(buffer.allocator);
    if (SharedArena* arena = arena_of_[a].arena()) {
      if (!reads) reads = alloc_reads != nullptr ? *alloc_reads : existing_memory(graph, &unaddressed);
      if (Status s = arena->reserve(arena_of_[a].id(), buffer.chunk_sizes, *reads, unaddressed, alloc_reads != nullptr);
          !s) {
        return {s.code(), "reserve: " + s.message() + restore_buffers(replaced)};
      }
      continue;
    }
    // ggml also grows when a chunk is new; a new chunk of 0 bytes must exist too.
    bool grow = !reserved_once_[a] || buffer.chunk_sizes.size() > buffers_[a].size();
    for (std::size_t c = 0; c < buffer.chunk_sizes.size(); ++c) {
      const Bytes current = c < buffers_[a].size() ? buffers_[a][c]->size() : 0;
      if (buffer.chunk_sizes[c] > current) grow = true;
    }
    if (!grow) continue;
    std::vector<Bytes> old_sizes;
    for (const auto& chunk : buffers_[a]) old_sizes.push_back(chunk->size());
    replaced.emplace_back(a, std::move(old_sizes));
    buffers_[a].clear();
    for (std::size_t c = 0; c < buffer.chunk_sizes.size(); ++c) {
      auto chunk = types_[b]->allocate(buffer.chunk_sizes[c]);
      if (!chunk) {
        const std::string what = "reserve: failed to allocate chunk " + std::to_string(c) + " of buffer " +
                                 std::to_string(b) + " (" + buffer.name + ", " + std::to_string(buffer.chunk_sizes[c]) +
                                 " bytes): " + chunk.status().message();
        return {chunk.status().code(), what + restore_buffers(replaced)};
      }
      buffers_[a].push_back(std::move(chunk).value());
    }
  }
  std::fill(reserved_once_.begin(), reserved_once_.end(), true);
  for (const BufferPlan& buffer : plan.buffers) {
    if (!buffer.shared) arena_needs_[static_cast<std::size_t>(buffer.allocator)] = buffer.chunk_sizes;
  }
  plan_ = std::move(planned->plan);
  record_replay(graph, planned->lifetimes);
  return Status::ok();
}

std::string GraphAllocator::State::restore_buffers(
    const std::vector<std::pair<std::size_t, std::vector<Bytes>>>& replaced) {
  // The new chunks go first, so that again no more than one buffer's worth is held.
  for (const auto& entry : replaced) buffers_[entry.first].clear();
  for (const auto& [a, sizes] : replaced) {
    const auto id = static_cast<std::size_t>(first_id_of(a));  // for the allocator's type
    for (Bytes size : sizes) {
      auto chunk = types_[id]->allocate(size);
      if (!chunk) {
        // The previous plan has no buffers now: drop it, so that the next alloc reserves again.
        for (const auto& entry : replaced) buffers_[entry.first].clear();
        plan_.reset();
        return "; the previous buffers could not be allocated again either (" + chunk.status().message() +
               "): the plan is dropped and the next reserve or alloc starts over";
      }
      buffers_[a].push_back(std::move(chunk).value());
    }
  }
  // The same chunk counts as before, so the reservation's chunk indices still hold.
  if (!plan_) return "; nothing was reserved before";
  return "; the previous plan is kept, in buffers of its sizes allocated again (place the tensors again with alloc)";
}

void GraphAllocator::State::record_replay(const Graph& graph, const GraphProblem& lifetimes) {
  first_chunk_.clear();
  std::uint32_t chunk_count = 0;
  for (std::size_t a = 0; a < buffers_.size(); ++a) {
    first_chunk_.push_back(chunk_count);
    const std::size_t chunks = arena_of_[a].arena() != nullptr ? arena_needs_[a].size() : buffers_[a].size();
    chunk_count += static_cast<std::uint32_t>(chunks);
  }
  chunk_buffers_.assign(chunk_count, nullptr);
  chunk_bases_.assign(chunk_count, nullptr);

  reserved_nodes_ = graph.nodes;
  reserved_leafs_ = graph.leafs;
  reserved_inplace_ops_ = graph.inplace_ops;
  reserved_node_groups_ = graph.node_groups;
  reserved_inplace_across_buffers_ = graph.inplace_across_buffers;
  reserved_inplace_through_views_ = graph.inplace_through_views;
  // A slot for every tensor the walk reads (leafs, nodes and their sources), in id order so
  // that alloc goes through the tensors front to back; and the order in which ggml's
  // alloc_graph first reaches them, for an AllocSink. scratch_ holds each tensor's slot.
  scratch_.assign(graph.tensors.size(), kNotRead);
  for (TensorId id : lifetimes.read_order) scratch_[static_cast<std::size_t>(id)] = kRead;
  for (TensorId id : graph.nodes) {
    if (scratch_[static_cast<std::size_t>(id)] == kRead) scratch_[static_cast<std::size_t>(id)] = kReadNode;
  }
  slots_.clear();
  node_shapes_.clear();
  for (std::size_t t = 0; t < graph.tensors.size(); ++t) {
    if (scratch_[t] == kNotRead) continue;
    const bool is_node = scratch_[t] == kReadNode;
    scratch_[t] = static_cast<std::int32_t>(slots_.size());
    const Tensor& tensor = graph.tensors[t];
    const TensorPlacement& placement = plan_->tensors[t];
    ReplaySlot& slot = slots_.emplace_back();
    slot.id = static_cast<TensorId>(t);
    slot.view_src = tensor.view_src;
    slot.flags = tensor.flags & kWalkFlags;
    if (is_node) {
      slot.shape = static_cast<std::int32_t>(node_shapes_.size());
      node_shapes_.push_back({tensor.op, tensor.src});
    }
    if (placement.planned()) {
      const auto a = static_cast<std::size_t>(allocator_of_[static_cast<std::size_t>(placement.buffer)]);
      slot.buffer = placement.buffer;
      slot.chunk = first_chunk_[a] + static_cast<std::uint32_t>(placement.chunk);
      slot.offset = placement.offset;
      slot.size = placement.size;
    }
  }
  visit_order_.clear();
  for (TensorId id : lifetimes.read_order) visit_order_.push_back(scratch_[static_cast<std::size_t>(id)]);
  existing_readers_.clear();
  for (const ReplaySlot& slot : slots_) {
    const Tensor& tensor = graph[slot.id];
    const bool is_view = tensor.is_view() && graph.contains(tensor.view_src);
    if (is_view ? graph[tensor.view_src].has_memory : tensor.has_memory) existing_readers_.push_back(slot.id);
  }
}

Result<std::vector<Bytes>> GraphAllocator::State::measure(const Graph& graph,
                                                          const BufferAssignment& assignment) const {
  auto planned = plan_graph(graph, types_, assignment, options_.placement);
  if (!planned) return planned.status();
  std::vector<Bytes> sizes;
  for (const BufferPlan& buffer : planned->plan.buffers) sizes.push_back(buffer.size());
  return sizes;
}

namespace {

// The memory that exists, with an address, that reading tensor `id` reads (a view's through
// its root); a root that has memory but no address yet goes to `unaddressed`.
void add_existing(const Graph& graph, TensorId id, std::vector<AddressRange>& ranges,
                  std::vector<TensorId>* unaddressed) {
  if (!graph.contains(id)) return;
  const Tensor& tensor = graph[id];
  const Tensor* root = &tensor;
  Bytes offset = 0;
  if (tensor.is_view() && graph.contains(tensor.view_src)) {
    root = &graph[tensor.view_src];
    offset = tensor.view_offs;
  }
  if (!root->has_memory) return;
  if (root->data == nullptr) {
    if (unaddressed != nullptr) unaddressed->push_back(tensor.is_view() ? tensor.view_src : id);
    return;
  }
  std::byte* begin = static_cast<std::byte*>(root->data) + offset;
  ranges.push_back({begin, begin + tensor_nbytes(tensor)});
}

void sort_unique(std::vector<AddressRange>& ranges) {
  std::sort(ranges.begin(), ranges.end(), [](const AddressRange& a, const AddressRange& b) {
    return a.begin < b.begin || (a.begin == b.begin && a.end < b.end);
  });
  ranges.erase(
      std::unique(ranges.begin(), ranges.end(),
                  [](const AddressRange& a, const AddressRange& b) { return a.begin == b.begin && a.end == b.end; }),
      ranges.end());
}

}  // namespace

bool GraphAllocator::State::needs_reserve_reading(const Graph& graph, std::vector<AddressRange>* reads,
                                                  const std::vector<TensorId>* candidates) const {
  if (!plan_) return true;
  if (graph.tensors.size() != plan_->tensors.size() || graph.nodes != reserved_nodes_ ||
      graph.leafs != reserved_leafs_ || graph.inplace_ops != reserved_inplace_ops_ ||
      graph.node_groups != reserved_node_groups_ || graph.inplace_across_buffers != reserved_inplace_across_buffers_ ||
      graph.inplace_through_views != reserved_inplace_through_views_) {
    return true;
  }
  // The same lists, so every id below is one the reserve validated, and the same tensors are
  // read if every node keeps its op and sources. Each read tensor must also keep its view
  // source and flags and still fit its slot; one that had memory or was a view at reserve
  // time and now needs memory has no slot.
  if (reads != nullptr) reads->clear();
  bool gained_memory = false;  // a tensor planned at reserve that has memory now
  for (const ReplaySlot& slot : slots_) {
    const Tensor& t = graph[slot.id];
    if (t.view_src != slot.view_src || (t.flags & kWalkFlags) != slot.flags) return true;
    if (slot.shape >= 0) {
      const NodeShape& shape = node_shapes_[static_cast<std::size_t>(slot.shape)];
      if (t.op != shape.op || !detail::same_sources(t, shape.src)) return true;
    }
    if (t.has_memory || t.is_view()) {
      gained_memory = gained_memory || (slot.buffer >= 0 && t.has_memory);
      continue;
    }
    if (slot.buffer < 0) return true;
    if (types_[static_cast<std::size_t>(slot.buffer)]->alloc_size(t) > slot.size) return true;
  }
  if (reads != nullptr) {
    if (gained_memory) {
      *reads = existing_memory(graph);  // it and its views may read anything now
    } else if (candidates != nullptr) {
      // A read tensor with memory now had memory at reserve (else gained_memory): each
      // candidate the graph reads is one of existing_readers_.
      for (TensorId id : *candidates) {
        const auto t = static_cast<std::size_t>(id);
        if (t < scratch_.size() && scratch_[t] >= 0) add_existing(graph, id, *reads, nullptr);
      }
      sort_unique(*reads);
    } else {
      for (TensorId id : existing_readers_) add_existing(graph, id, *reads, nullptr);
      sort_unique(*reads);
    }
  }
  return false;
}

std::vector<AddressRange> GraphAllocator::State::existing_memory(const Graph& graph, Bytes* without_address) {
  // Only what the graph reads (its leafs, nodes and their sources; a view through its root):
  // a converted graph may also hold tensors it never reads, such as another graph's
  // intermediates reached through a source pointer.
  std::vector<AddressRange> ranges;
  std::vector<TensorId> unaddressed;
  std::vector<TensorId>* unaddressed_out = without_address != nullptr ? &unaddressed : nullptr;
  for (TensorId id : graph.leafs) add_existing(graph, id, ranges, unaddressed_out);
  for (TensorId id : graph.nodes) {
    add_existing(graph, id, ranges, unaddressed_out);
    for (TensorId src : graph[id].src) add_existing(graph, src, ranges, unaddressed_out);
  }
  sort_unique(ranges);
  if (without_address != nullptr) {
    std::sort(unaddressed.begin(), unaddressed.end());
    unaddressed.erase(std::unique(unaddressed.begin(), unaddressed.end()), unaddressed.end());
    *without_address = 0;
    for (TensorId id : unaddressed) *without_address += tensor_nbytes(graph[id]);
  }
  return ranges;
}

Status GraphAllocator::State::prepare_alloc(Graph& graph, AllocSink* sink) {
  const std::vector<TensorId>* candidates = sink == nullptr ? nullptr : sink->tensors_in_arena();
  const bool in_arena =
      std::any_of(arena_of_.begin(), arena_of_.end(), [](const Membership& m) { return m.arena() != nullptr; }) &&
      (candidates == nullptr || !candidates->empty());
  // What the graph reads that may lie in an arena: another member's output, kept in place.
  // The reservation check walks the same tensors, so it collects them while the graph fits.
  std::vector<AddressRange>& reads = alloc_reads_;
  reads.clear();
  const bool stale = needs_reserve_reading(graph, in_arena ? &reads : nullptr, candidates);
  if (stale && in_arena) reads = existing_memory(graph);
  if (stale) {
    if (types_.size() != 1) {
      return failed_precondition("alloc: the graph does not fit the reservation and there are " +
                                 std::to_string(types_.size()) +
                                 " buffer ids; call reserve with the node and leaf buffer ids first");
    }
    if (sink != nullptr) GALLOC_RETURN_IF_ERROR(sink->before_reserve(graph));
    GALLOC_RETURN_IF_ERROR(reserve_keeping(graph, {}, &reads));
  }
  for (std::size_t a = 0; a < buffers_.size(); ++a) {
    if (SharedArena* arena = arena_of_[a].arena()) {
      // Nothing in the arena changed since this allocator placed itself (it allocates again
      // and again, as a decoder does token by token) and it reads nothing: that placement stands.
      if (!stale && reads.empty() && arena_generation_[a] != 0 && arena->generation() == arena_generation_[a]) {
        for (std::size_t c = 0; c < arena_needs_[a].size(); ++c) chunk_buffers_[first_chunk_[a] + c]->reset();
        continue;
      }
      arena_generation_[a] = 0;
      SharedArena::MemberPlacement& placed = arena_placement_;
      if (Status s = arena->place(arena_of_[a].id(), arena_needs_[a], reads, placed); !s) {
        return {s.code(), "alloc: " + s.message()};
      }
      if (placed.reusable) arena_generation_[a] = placed.generation;
      for (std::size_t c = 0; c < placed.chunks.size(); ++c) {
        placed.chunks[c].buffer->reset();
        chunk_buffers_[first_chunk_[a] + c] = placed.chunks[c].buffer;
        chunk_bases_[first_chunk_[a] + c] = placed.chunks[c].base;
      }
      // Another member's output that was moved out of the way: its tensors follow it.
      if (placed.moves.empty()) continue;
      for (std::size_t t = 0; t < graph.tensors.size(); ++t) {
        Tensor& tensor = graph.tensors[t];
        auto* data = static_cast<std::byte*>(tensor.data);
        if (!tensor.has_memory || data == nullptr) continue;
        for (const SharedArena::Move& move : placed.moves) {
          if (data < move.from.begin || data >= move.from.end) continue;
          tensor.data = move.to + (data - move.from.begin);
          if (sink != nullptr) {
            const TensorAddress address{first_id_of(a), move.buffer, static_cast<std::byte*>(tensor.data)};
            GALLOC_RETURN_IF_ERROR(sink->moved(static_cast<TensorId>(t), address));
          }
          break;
        }
      }
      continue;
    }
    for (std::size_t c = 0; c < buffers_[a].size(); ++c) {
      Buffer* chunk = buffers_[a][c].get();
      chunk->reset();
      chunk_buffers_[first_chunk_[a] + c] = chunk;
      chunk_bases_[first_chunk_[a] + c] = chunk->base();
    }
  }
  return Status::ok();
}

// needs_reserve has checked every slot's tensor against the reservation.
template <typename Order, typename Place>
Status GraphAllocator::State::replay(const Graph& graph, const Order& order, Place&& place) const {
  for (const auto& entry : order) {
    const ReplaySlot& slot = slot_at(entry);
    const Tensor& tensor = graph[slot.id];
    if (slot.buffer < 0 || tensor.has_memory || tensor.is_view()) {
      GALLOC_RETURN_IF_ERROR(place(slot.id, nullptr));
      continue;
    }
    const TensorAddress address{slot.buffer, chunk_buffers_[slot.chunk], chunk_bases_[slot.chunk] + slot.offset};
    GALLOC_RETURN_IF_ERROR(place(slot.id, &address));
  }
  return Status::ok();
}

Status GraphAllocator::State::alloc(Graph& graph) {
  GALLOC_RETURN_IF_ERROR(prepare_alloc(graph, nullptr));
  // Tensor::data in id order: front to back through the tensors.
  GALLOC_RETURN_IF_ERROR(replay(graph, slots_, [&graph](TensorId id, const TensorAddress* address) {
    if (address != nullptr) graph[id].data = address->data;
    return Status::ok();
  }));
  // Views take their source's address plus their offset. Those outside the lists may name
  // anything as their view source (the reserve did not read them), so check before following.
  for (Tensor& tensor : graph.tensors) {
    if (!tensor.is_view() || tensor.has_memory || !graph.contains(tensor.view_src)) continue;
    const Tensor& source = graph[tensor.view_src];
    tensor.data = source.data == nullptr ? nullptr : static_cast<std::byte*>(source.data) + tensor.view_offs;
  }
  return Status::ok();
}

void GraphAllocator::State::reset_buffers() {
  for (const auto& chunks : buffers_) {
    for (const auto& chunk : chunks) chunk->reset();
  }
}

Status GraphAllocator::State::alloc(Graph& graph, AllocSink& sink) {
  GALLOC_RETURN_IF_ERROR(prepare_alloc(graph, &sink));
  return replay(graph, visit_order_,
                [&sink](TensorId id, const TensorAddress* address) { return sink.place(id, address); });
}

Result<Bytes> GraphAllocator::State::buffer_size(BufferId id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= types_.size()) {
    return invalid_argument("buffer id " + std::to_string(id) + " is out of range (" + std::to_string(types_.size()) +
                            " buffer ids)");
  }
  const AllocatorId a = allocator_of_[static_cast<std::size_t>(id)];
  for (BufferId earlier = 0; earlier < id; ++earlier) {
    if (allocator_of_[static_cast<std::size_t>(earlier)] == a) return Bytes{0};
  }
  Bytes total = 0;
  if (arena_of_[static_cast<std::size_t>(a)].arena() != nullptr) {
    for (Bytes size : arena_needs_[static_cast<std::size_t>(a)]) total += size;
    return total;
  }
  for (const auto& chunk : buffers_[static_cast<std::size_t>(a)]) total += chunk->size();
  return total;
}

std::vector<Buffer*> GraphAllocator::State::chunks(BufferId id) const {
  std::vector<Buffer*> result;
  if (id < 0 || static_cast<std::size_t>(id) >= types_.size()) return result;
  const auto a = static_cast<std::size_t>(allocator_of_[static_cast<std::size_t>(id)]);
  if (arena_of_[a].arena() != nullptr) {
    if (a >= first_chunk_.size()) return result;
    for (std::size_t c = 0; c < arena_needs_[a].size(); ++c) {
      if (Buffer* chunk = chunk_buffers_[first_chunk_[a] + c]) result.push_back(chunk);
    }
    return result;
  }
  for (const auto& chunk : buffers_[static_cast<std::size_t>(allocator_of_[static_cast<std::size_t>(id)])]) {
    result.push_back(chunk.get());
  }
  return result;
}

BufferId GraphAllocator::State::first_id_of(std::size_t allocator) const {
  BufferId id = 0;
  while (static_cast<std::size_t>(allocator_of_[static_cast<std::size_t>(id)]) != allocator) ++id;
  return id;
}

Status GraphAllocator::State::join(BufferId id, std::shared_ptr<SharedArena> arena, std::string who) {
  if (!arena) return invalid_argument("join: the arena is null");
  if (id < 0 || static_cast<std::size_t>(id) >= types_.size()) {
    return invalid_argument("join: buffer id " + std::to_string(id) + " is out of range (" +
                            std::to_string(types_.size()) + " buffer ids)");
  }
  const auto a = static_cast<std::size_t>(allocator_of_[static_cast<std::size_t>(id)]);
  if (arena_of_[a].arena() != nullptr) {
    return failed_precondition("join: buffer id " + std::to_string(id) +
                               " already takes its buffers from shared arena '" + arena_of_[a].arena()->name() + "'");
  }
  if (reserved_once_[a]) {
    return failed_precondition(
        "join: buffer id " + std::to_string(id) +
        " already has buffers of its own (it was reserved); join arenas before the first reserve");
  }
  const BufferType& mine = *types_[static_cast<std::size_t>(id)];
  const BufferType& theirs = arena->type();
  if (&mine != &theirs && (mine.name() != theirs.name() || mine.alignment() != theirs.alignment() ||
                           mine.max_size() != theirs.max_size())) {
    auto describe = [](const BufferType& t) {
      return t.name() + " (alignment " + std::to_string(t.alignment()) + ", max size " + std::to_string(t.max_size()) +
             ")";
    };
    return invalid_argument("join: shared arena '" + arena->name() + "' holds buffers of type " + describe(theirs) +
                            ", but buffer id " + std::to_string(id) + " is of type " + describe(mine));
  }
  const SharedArena::MemberId member = arena->add_member(std::move(who));
  arena_of_[a] = Membership(std::move(arena), member);
  return Status::ok();
}

Status GraphAllocator::State::check_allocation() const {
  for (const Membership& membership : arena_of_) {
    if (membership.arena() == nullptr) continue;
    if (!membership.arena()->holds(membership.id())) {
      return failed_precondition("this allocator's tensors in shared arena '" + membership.arena()->name() +
                                 "' are no longer its own: it has not allocated since joining, or another member "
                                 "has allocated over them since; alloc again before computing");
    }
  }
  return Status::ok();
}

// The public functions: each forwards to the state. A moved-from allocator has none: it
// reports that instead of crashing, and holds nothing.

namespace {

Status moved_from() { return failed_precondition("this GraphAllocator was moved from; use the one it was moved to"); }

}  // namespace

GraphAllocator::GraphAllocator(std::vector<const BufferType*> buffer_types, GraphAllocatorOptions options)
    : state_(std::make_unique<State>(std::move(buffer_types), options)) {}

GraphAllocator::~GraphAllocator() = default;
GraphAllocator::GraphAllocator(GraphAllocator&&) noexcept = default;
GraphAllocator& GraphAllocator::operator=(GraphAllocator&&) noexcept = default;

Status GraphAllocator::reserve(const Graph& graph, const BufferAssignment& assignment) {
  if (!state_) return moved_from();
  return state_->reserve_keeping(graph, assignment, nullptr);
}

Result<std::vector<Bytes>> GraphAllocator::measure(const Graph& graph, const BufferAssignment& assignment) const {
  if (!state_) return moved_from();
  return state_->measure(graph, assignment);
}

Status GraphAllocator::alloc(Graph& graph) { return state_ ? state_->alloc(graph) : moved_from(); }

Status GraphAllocator::alloc(Graph& graph, AllocSink& sink) {
  return state_ ? state_->alloc(graph, sink) : moved_from();
}

void GraphAllocator::reset_buffers() {
  if (state_) state_->reset_buffers();
}

bool GraphAllocator::needs_reserve(const Graph& graph) const {
  return !state_ || state_->needs_reserve_reading(graph, nullptr);
}

Result<Bytes> GraphAllocator::buffer_size(BufferId id) const {
  if (!state_) return moved_from();
  return state_->buffer_size(id);
}

int GraphAllocator::buffer_count() const { return state_ ? static_cast<int>(state_->types_.size()) : 0; }

const std::optional<Plan>& GraphAllocator::plan() const {
  static const std::optional<Plan> kNoPlan;
  return state_ ? state_->plan_ : kNoPlan;
}

std::vector<Buffer*> GraphAllocator::chunks(BufferId id) const {
  return state_ ? state_->chunks(id) : std::vector<Buffer*>{};
}

Status GraphAllocator::join(BufferId id, std::shared_ptr<SharedArena> arena, std::string who) {
  if (!state_) return moved_from();
  if (who.empty()) who = "graph allocator " + std::to_string(reinterpret_cast<std::uintptr_t>(this));
  return state_->join(id, std::move(arena), std::move(who));
}

Status GraphAllocator::check_allocation() const { return state_ ? state_->check_allocation() : moved_from(); }

}  // namespace galloc
