#include "galloc/lifetimes.hpp"

#include <algorithm>
#include <cstdint>
#include <string>

#include "tensor_sources.hpp"

namespace galloc {

std::vector<AllocatorId> allocators_of(Span<const BufferType* const> buffer_types) {
  std::vector<AllocatorId> result(buffer_types.size());
  AllocatorId next = 0;
  for (std::size_t i = 0; i < buffer_types.size(); ++i) {
    result[i] = -1;
    for (std::size_t j = 0; j < i; ++j) {
      if (buffer_types[j] == buffer_types[i]) {
        result[i] = result[j];
        break;
      }
    }
    if (result[i] == -1) result[i] = next++;
  }
  return result;
}

namespace {

Status check_buffer_ids(Span<const BufferId> ids, std::size_t expected, std::size_t n_buffers, const char* what) {
  if (ids.empty()) return Status::ok();
  if (ids.size() != expected) {
    return invalid_argument(std::string(what) + " buffer ids: " + std::to_string(ids.size()) + " given for " +
                            std::to_string(expected) + " " + what + "s");
  }
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || static_cast<std::size_t>(ids[i]) >= n_buffers) {
      return invalid_argument(std::string(what) + " " + std::to_string(i) + ": buffer id " + std::to_string(ids[i]) +
                              " is out of range (" + std::to_string(n_buffers) + " buffer types)");
    }
  }
  return Status::ok();
}

// The walk itself, a line-for-line counterpart of ggml_gallocr_alloc_graph_impl.
class LivenessWalk {
 public:
  LivenessWalk(const Graph& graph, Span<const BufferType* const> buffer_types, GraphProblem& out)
      : graph_(graph), types_(buffer_types), out_(out), state_(graph.tensors.size()) {
    // The flags the walk tests at random, copied next to the counts: the tensors themselves
    // are several times larger and would be pulled through the cache again and again.
    for (std::size_t t = 0; t < graph.tensors.size(); ++t) {
      const Tensor& tensor = graph.tensors[t];
      TensorState& state = state_[t];
      state.view_src = tensor.view_src;
      state.bits = static_cast<std::uint8_t>((tensor.is_view() ? kView : 0) | (tensor.is_input() ? kInput : 0) |
                                             (tensor.is_output() ? kOutput : 0) | (tensor.has_memory ? kHasMemory : 0));
    }
  }

  void run(const BufferAssignment& assignment, const LifetimeOptions& options) {
    auto node_buffer = [&](std::size_t i) {
      return assignment.node_buffer_ids.empty() ? 0 : assignment.node_buffer_ids[i];
    };
    auto leaf_buffer = [&](std::size_t i) {
      return assignment.leaf_buffer_ids.empty() ? 0 : assignment.leaf_buffer_ids[i];
    };
    const std::size_t n_nodes = graph_.nodes.size();
    // Most walks allocate about one storage object per listed tensor and free each once.
    out_.storages.reserve(n_nodes + graph_.leafs.size());
    out_.events.reserve(2 * (n_nodes + graph_.leafs.size()));

    if (options.defer_written_leafs) mark_written_leafs(leaf_buffer);

    // Leafs first: the application may use them outside the graph too.
    out_.read_order.reserve(graph_.tensors.size());
    for (std::size_t i = 0; i < graph_.leafs.size(); ++i) {
      const TensorId leaf = graph_.leafs[i];
      TensorState& state = state_[static_cast<std::size_t>(leaf)];
      mark_read(leaf, state);
      if (state.deferred_buffer < 0) {
        allocate(leaf, leaf_buffer(i));
      } else {
        out_.deferred_leafs.push_back({leaf, static_cast<Step>(out_.events.size())});
      }
    }

    // Count children and views; allocate explicit inputs before anything can overwrite them.
    // The nodes' sources are gathered on the way (nodes have up to 10 slots, most of them
    // empty), so the passes below read only the ones that are set.
    src_begin_.resize(n_nodes + 1);
    srcs_.reserve(3 * n_nodes);
    for (std::size_t i = 0; i < n_nodes; ++i) {
      src_begin_[i] = static_cast<std::uint32_t>(srcs_.size());
      const TensorId id = graph_.nodes[i];
      const Tensor& node = graph_[id];
      // A view with op NONE only carries dependencies for ggml-backend; it is no real user.
      if (node.is_view() && node.op != Op::None) state_[node.view_src].n_views += 1;
      if (node.is_input()) allocate(id, node_buffer(i));
      detail::for_each_source(node, [&](int, TensorId src) {
        srcs_.push_back(src);
        TensorState& source = state_[src];
        mark_read(src, source);
        source.n_children += 1;
        if (source.bits & kInput) allocate(src, node_buffer(i));
      });
      mark_read(id, state_[id]);
    }
    src_begin_[n_nodes] = static_cast<std::uint32_t>(srcs_.size());

    out_.node_step.resize(n_nodes);
    const std::vector<std::int32_t>& groups = graph_.node_groups;
    std::size_t group_begin = 0;  // the first node whose sources are not released yet
    for (std::size_t i = 0; i < n_nodes; ++i) {
      const TensorId id = graph_.nodes[i];
      const BufferId buffer = node_buffer(i);
      const Span<const TensorId> sources = sources_of(i);
      if (state_[id].bits & kView) allocate_deferred(state_[id].view_src);
      for (TensorId src : sources) {
        if (!allocate_deferred(src)) allocate(src, buffer);
      }
      allocate(id, buffer);
      out_.node_step[i] = static_cast<Step>(out_.events.size());

      // A group's sources are released after its last node (Graph::node_groups).
      if (!groups.empty() && i + 1 < n_nodes && groups[i + 1] == groups[i]) continue;
      for (; group_begin <= i; ++group_begin) release_sources(sources_of(group_begin));
    }

    const Step end = static_cast<Step>(out_.events.size());
    for (StorageObject& storage : out_.storages) {
      if (storage.live.upper < 0) storage.live.upper = end;
    }
    const std::size_t n = graph_.tensors.size();
    out_.tensor_storage.resize(n);
    out_.tensor_buffer.resize(n);
    out_.tensor_size.resize(n);
    for (std::size_t t = 0; t < n; ++t) {
      const TensorState& state = state_[t];
      out_.tensor_storage[t] = state.storage;
      out_.tensor_buffer[t] = state.storage < 0 ? -1 : state.buffer;
      out_.tensor_size[t] = state.storage < 0 ? 0 : raw_size(state.buffer, static_cast<TensorId>(t));
    }
  }

  // A node has run: its sources lose a child, and those nothing reads any more are freed.
  void release_sources(Span<const TensorId> sources) {
    for (TensorId src : sources) {
      TensorState& parent = state_[src];
      parent.n_children -= 1;
      if ((parent.n_children | parent.n_views) != 0) continue;  // one branch: zero only if both are
      if (parent.bits & kView) {
        const TensorId root = parent.view_src;
        TensorState& source = state_[root];
        source.n_views -= 1;
        if (source.n_views == 0 && source.n_children == 0 && (source.bits & kOwned)) release(root);
      } else if (parent.bits & kOwned) {
        release(src);
      }
    }
  }

  // The first leaf, node or node source (in that order) that is a view of a tensor nothing
  // allocates and that has no memory; kNoTensor if there is none. Valid after run.
  [[nodiscard]] TensorId view_without_memory() const {
    auto bad = [&](TensorId id) {
      const TensorState& state = state_[static_cast<std::size_t>(id)];
      if (!(state.bits & kView)) return false;
      const TensorState& root = state_[static_cast<std::size_t>(state.view_src)];
      return !(root.bits & kHasMemory) && root.storage < 0;
    };
    for (TensorId id : graph_.leafs) {
      if (bad(id)) return id;
    }
    for (std::size_t i = 0; i < graph_.nodes.size(); ++i) {
      if (bad(graph_.nodes[i])) return graph_.nodes[i];
      for (TensorId src : sources_of(i)) {
        if (bad(src)) return src;
      }
    }
    return kNoTensor;
  }

 private:
  // TensorState::bits
  static constexpr std::uint8_t kOwned = 1;  // ggml's hash_node.allocated: it owns `storage` now
  static constexpr std::uint8_t kView = 2;   // the rest copy the tensor
  static constexpr std::uint8_t kInput = 4;
  static constexpr std::uint8_t kOutput = 8;
  static constexpr std::uint8_t kHasMemory = 16;
  static constexpr std::uint8_t kRead = 32;  // a leaf, a node or a node's source

  struct TensorState {
    Bytes size = 0;  // the alloc size for buffer id `sized_for`
    int n_children = 0;
    int n_views = 0;
    BufferId buffer = -1;
    StorageId storage = -1;
    BufferId deferred_buffer = -1;  // a written-first leaf, allocated at its first write
    BufferId sized_for = -1;
    TensorId view_src = kNoTensor;
    std::uint8_t bits = 0;
  };

  void mark_read(TensorId id, TensorState& state) {
    if (state.bits & kRead) return;
    state.bits |= kRead;
    out_.read_order.push_back(id);
  }

  // A CPY whose destination view is all of `leaf` (ggml_cpy(a, b) is a view of the whole of b
  // with src = {a, b}) overwrites every byte before anything reads it. SET, ACC, SET_ROWS and
  // a copy into a window keep the rest of the tensor, which may hold data the application
  // wrote after alloc, so those leafs keep upstream's lifetime.
  bool overwrites_whole(const Tensor& node, TensorId leaf) const {
    return node.op == Op::Cpy && node.view_offs == 0 && node.src[1] == leaf && node.src[0] != leaf &&
           same_layout(node, graph_[leaf]);
  }

  // Leafs (not inputs, no memory, no views) whose first reference in node order is a CPY
  // that overwrites all of them. Left out, so that deferring changes no in-place decision
  // and upstream_lifetimes can move the allocation back: a leaf with sources of its own (it
  // could take one over in place), and a source of an input node (allocated while children
  // are counted, it could take over the leaf upstream allocated first).
  template <typename LeafBuffer>
  void mark_written_leafs(const LeafBuffer& leaf_buffer) {
    std::vector<char> seen(graph_.tensors.size(), 0);
    std::vector<char> first_is_write(graph_.tensors.size(), 0);
    for (TensorId id : graph_.nodes) {
      const Tensor& node = graph_[id];
      if (node.is_view() && !seen[static_cast<std::size_t>(node.view_src)]) {
        seen[static_cast<std::size_t>(node.view_src)] = 1;
        first_is_write[static_cast<std::size_t>(node.view_src)] = overwrites_whole(node, node.view_src) ? 1 : 0;
      }
      const bool input = node.is_input();
      detail::for_each_source(node, [&](int, TensorId src) {
        seen[static_cast<std::size_t>(src)] = 1;
        if (input) first_is_write[static_cast<std::size_t>(src)] = 0;
      });
    }
    for (std::size_t i = 0; i < graph_.leafs.size(); ++i) {
      const auto leaf = static_cast<std::size_t>(graph_.leafs[i]);
      const Tensor& t = graph_.tensors[leaf];
      if (first_is_write[leaf] && !t.is_input() && !t.has_memory && !t.is_view() && detail::source_mask(t) == 0) {
        state_[leaf].deferred_buffer = leaf_buffer(i);
      }
    }
  }

  // Allocates a deferred leaf, once, in its own buffer; false if `id` is none (any more).
  bool allocate_deferred(TensorId id) {
    BufferId& buffer = state_[static_cast<std::size_t>(id)].deferred_buffer;
    if (buffer < 0) return false;
    allocate(id, buffer);
    buffer = -1;
    return true;
  }

  // The buffer type's alloc size, cached per tensor for the buffer it was last asked for
  // (a tensor is almost always sized by one buffer type, and alloc_size is virtual).
  [[nodiscard]] Bytes raw_size(BufferId buffer, TensorId id) {
    TensorState& state = state_[static_cast<std::size_t>(id)];
    if (state.sized_for != buffer) {
      state.size = types_[static_cast<std::size_t>(buffer)]->alloc_size(graph_[id]);
      state.sized_for = buffer;
    }
    return state.size;
  }

  [[nodiscard]] Bytes aligned_size(BufferId buffer, TensorId id) {
    const AllocatorId a = out_.buffer_allocator[static_cast<std::size_t>(buffer)];
    return align_up(raw_size(buffer, id), out_.allocators[static_cast<std::size_t>(a)].alignment);
  }

  void emit_free(StorageId storage, Bytes begin, Bytes size) {
    out_.events.push_back({LifetimeEvent::Kind::kFree, storage, begin, size});
  }

  // Most calls meet a tensor that has memory already (a weight, a source allocated before), so
  // the test is inlined at every call and only the allocation itself is a call.
  [[gnu::always_inline]] void allocate(TensorId id, BufferId buffer) {
    TensorState& state = state_[id];
    if (state.bits & (kHasMemory | kOwned | kView)) return;
    allocate_new(id, buffer, state);
  }

  [[gnu::noinline]] void allocate_new(TensorId id, BufferId buffer, TensorState& state) {
    state.bits |= kOwned;
    const Tensor& tensor = graph_[id];

    if (graph_.inplace_ops[static_cast<std::size_t>(tensor.op)]) {  // op checked by validate_graph
      for (std::uint32_t mask = detail::source_mask(tensor); mask != 0; mask &= mask - 1) {
        const TensorId src = tensor.src[static_cast<std::size_t>(detail::lowest_set_bit(mask))];
        TensorState& parent_state = state_[src];
        if ((parent_state.bits & kView) && graph_.inplace_through_views) {
          if (take_over_through_view(id, buffer, src)) return;
          continue;
        }
        // Upstream also tries a view parent here, but views are never owned, so that branch
        // cannot run; owned parents are never views.
        if (!(parent_state.bits & kOwned) || (parent_state.bits & kOutput)) continue;
        if (parent_state.n_children != 1 || parent_state.n_views != 0) continue;
        if (!same_layout(tensor, graph_[src])) continue;
        if (!graph_.inplace_across_buffers && parent_state.buffer != buffer) continue;
        // Upstream asserts the child is no larger than the parent; galloc simply does not
        // reuse then.
        const Bytes parent_raw = raw_size(parent_state.buffer, src);
        const Bytes child_raw = raw_size(parent_state.buffer, id);
        if (child_raw > parent_raw) continue;

        state.buffer = parent_state.buffer;
        state.storage = parent_state.storage;
        parent_state.bits &= static_cast<std::uint8_t>(~kOwned);
        const Bytes parent_size = aligned_size(parent_state.buffer, src);
        const Bytes child_size = aligned_size(parent_state.buffer, id);
        if (parent_size > child_size) {
          StorageObject& storage = out_.storages[static_cast<std::size_t>(state.storage)];
          storage.tail_frees.push_back({static_cast<Step>(out_.events.size()), child_size});
          emit_free(state.storage, child_size, parent_size - child_size);
        }
        return;
      }
    }

    StorageObject& storage = out_.storages.emplace_back();
    storage.allocator = out_.buffer_allocator[static_cast<std::size_t>(buffer)];
    storage.size = aligned_size(buffer, id);
    storage.live = {static_cast<Step>(out_.events.size()), -1};
    storage.first_tensor = id;
    state.buffer = buffer;
    state.storage = static_cast<StorageId>(out_.storages.size() - 1);
    out_.events.push_back({LifetimeEvent::Kind::kAllocate, state.storage, 0, storage.size});
  }

  // Graph::inplace_through_views: `id` takes over the memory of the source of its view
  // parent `view` when the view starts at that memory, is the source's only use and `id` is
  // the view's only reader. `id` then owns the storage, as if it were another view of it.
  bool take_over_through_view(TensorId id, BufferId buffer, TensorId view) {
    const TensorState& view_state = state_[view];
    const TensorId root = view_state.view_src;
    TensorState& root_state = state_[root];
    if (!(root_state.bits & kOwned) || (root_state.bits & kOutput)) return false;
    if (view_state.n_children != 1 || view_state.n_views != 0) return false;
    if (root_state.n_views != 1 || root_state.n_children != 0 || graph_[view].view_offs != 0) return false;
    if (!same_layout(graph_[id], graph_[view])) return false;
    if (!graph_.inplace_across_buffers && root_state.buffer != buffer) return false;
    if (raw_size(root_state.buffer, id) > raw_size(root_state.buffer, root)) return false;
    TensorState& state = state_[id];
    state.buffer = root_state.buffer;
    state.storage = root_state.storage;
    root_state.bits &= static_cast<std::uint8_t>(~kOwned);
    return true;
  }

  // ggml_gallocr_free_node: outputs are never freed.
  void release(TensorId id) {
    TensorState& state = state_[id];
    if (state.bits & kOutput) return;
    StorageObject& storage = out_.storages[static_cast<std::size_t>(state.storage)];
    storage.live.upper = static_cast<Step>(out_.events.size());
    emit_free(state.storage, 0, aligned_size(state.buffer, id));
    state.bits &= static_cast<std::uint8_t>(~kOwned);
  }

  [[nodiscard]] Span<const TensorId> sources_of(std::size_t node) const {
    return {srcs_.data() + src_begin_[node], static_cast<std::size_t>(src_begin_[node + 1] - src_begin_[node])};
  }

  const Graph& graph_;
  Span<const BufferType* const> types_;
  GraphProblem& out_;
  std::vector<TensorState> state_;
  std::vector<TensorId> srcs_;            // the set sources of every node, node after node
  std::vector<std::uint32_t> src_begin_;  // per node: where its sources start in srcs_
};

}  // namespace

namespace {

// A counting sort by first tensor, stable in creation order. First tensors are nearly always
// distinct, but not quite: as upstream, an input node that takes a leaf's memory in place
// while children are still being counted leaves the leaf to be allocated again later.
void number_storages_by_first_tensor(GraphProblem& lifetimes, std::size_t n_tensors) {
  const std::size_t n = lifetimes.storages.size();
  const bool numbered =
      std::is_sorted(lifetimes.storages.begin(), lifetimes.storages.end(),
                     [](const StorageObject& a, const StorageObject& b) { return a.first_tensor < b.first_tensor; });
  if (numbered) return;  // created in first-tensor order already (a stable sort keeps it)
  std::vector<std::size_t> start(n_tensors + 1, 0);
  for (const StorageObject& storage : lifetimes.storages)
    start[static_cast<std::size_t>(storage.first_tensor) + 1] += 1;
  for (std::size_t t = 0; t < n_tensors; ++t) start[t + 1] += start[t];
  std::vector<StorageId> new_id(n);
  for (std::size_t s = 0; s < n; ++s) {
    new_id[s] = static_cast<StorageId>(start[static_cast<std::size_t>(lifetimes.storages[s].first_tensor)]++);
  }
  std::vector<StorageObject> storages(n);
  for (std::size_t s = 0; s < n; ++s) storages[static_cast<std::size_t>(new_id[s])] = std::move(lifetimes.storages[s]);
  lifetimes.storages = std::move(storages);
  for (LifetimeEvent& event : lifetimes.events) event.storage = new_id[static_cast<std::size_t>(event.storage)];
  for (StorageId& s : lifetimes.tensor_storage) {
    if (s >= 0) s = new_id[static_cast<std::size_t>(s)];
  }
}

// A view reads and writes its root's memory. The walk allocates only nodes, leafs and
// sources, so a root that is none of them and has no memory of its own would leave the view
// pointing nowhere (upstream then skips the view and the backend writes through NULL).
Status view_without_memory_error(const Graph& graph, TensorId id) {
  const TensorId root = graph[id].view_src;
  return invalid_argument(describe_tensor(graph, id) + " is a view of " + describe_tensor(graph, root) +
                          ", which nothing allocates: it is no leaf, no node, no node's source and has no "
                          "memory; list it as a leaf or mark it has_memory");
}

}  // namespace

Result<GraphProblem> analyze_lifetimes(const Graph& graph, Span<const BufferType* const> buffer_types,
                                       const BufferAssignment& assignment, const LifetimeOptions& options) {
  if (buffer_types.empty()) return invalid_argument("no buffer types given");
  for (std::size_t i = 0; i < buffer_types.size(); ++i) {
    if (buffer_types[i] == nullptr) {
      return invalid_argument("buffer type " + std::to_string(i) + " is null");
    }
    if (!is_power_of_two(buffer_types[i]->alignment())) {
      return invalid_argument("buffer type " + std::to_string(i) + " (" + buffer_types[i]->name() + "): alignment " +
                              std::to_string(buffer_types[i]->alignment()) + " is not a power of two");
    }
  }
  GALLOC_RETURN_IF_ERROR(validate_graph(graph));
  if (!graph.node_groups.empty() && graph.node_groups.size() != graph.nodes.size()) {
    return invalid_argument("the graph has " + std::to_string(graph.node_groups.size()) + " node groups for " +
                            std::to_string(graph.nodes.size()) + " nodes; give one per node, or none");
  }
  GALLOC_RETURN_IF_ERROR(check_buffer_ids(assignment.node_buffer_ids, graph.nodes.size(), buffer_types.size(), "node"));
  GALLOC_RETURN_IF_ERROR(check_buffer_ids(assignment.leaf_buffer_ids, graph.leafs.size(), buffer_types.size(), "leaf"));

  GraphProblem lifetimes;
  lifetimes.buffer_allocator = allocators_of(buffer_types);
  for (std::size_t i = 0; i < buffer_types.size(); ++i) {
    const auto a = static_cast<std::size_t>(lifetimes.buffer_allocator[i]);
    if (a == lifetimes.allocators.size()) {
      lifetimes.allocators.push_back({buffer_types[i]->alignment(), buffer_types[i]->max_size()});
    }
  }
  {
    LivenessWalk walk(graph, buffer_types, lifetimes);
    walk.run(assignment, options);
    if (const TensorId view = walk.view_without_memory(); view != kNoTensor) {
      return view_without_memory_error(graph, view);
    }
  }
  number_storages_by_first_tensor(lifetimes, graph.tensors.size());
  return lifetimes;
}

GraphProblem upstream_lifetimes(const GraphProblem& deferred) {
  GraphProblem upstream = deferred;
  upstream.deferred_leafs.clear();
  const std::size_t moved = deferred.deferred_leafs.size();
  if (moved == 0) return upstream;
  // Where each moved allocation was (q) and where upstream has it (c, in these events' count,
  // before the event there); every c lies in the leaf phase, every q after it.
  std::vector<Step> from, to;
  std::vector<StorageId> storage_of;
  for (const GraphProblem::DeferredLeaf& leaf : deferred.deferred_leafs) {
    const StorageId s = deferred.tensor_storage[static_cast<std::size_t>(leaf.leaf)];
    storage_of.push_back(s);
    from.push_back(deferred.storages[static_cast<std::size_t>(s)].live.lower);
    to.push_back(leaf.upstream_step);
  }
  std::vector<Step> from_sorted = from, to_sorted = to;
  std::sort(from_sorted.begin(), from_sorted.end());
  std::sort(to_sorted.begin(), to_sorted.end());
  // The new position of the event (or step boundary) at `step` that does not move: after every
  // moved allocation inserted at or before it, less those taken out before it.
  const auto shift = [&](Step step) {
    const auto inserted = std::upper_bound(to_sorted.begin(), to_sorted.end(), step) - to_sorted.begin();
    const auto removed = std::lower_bound(from_sorted.begin(), from_sorted.end(), step) - from_sorted.begin();
    return step + static_cast<Step>(inserted) - static_cast<Step>(removed);
  };
  std::vector<char> is_moved(deferred.events.size(), 0);
  for (Step q : from) is_moved[static_cast<std::size_t>(q)] = 1;
  for (std::size_t i = 0; i < deferred.events.size(); ++i) {
    if (!is_moved[i]) upstream.events[static_cast<std::size_t>(shift(static_cast<Step>(i)))] = deferred.events[i];
  }
  for (StorageObject& storage : upstream.storages) {
    storage.live = {shift(storage.live.lower), shift(storage.live.upper)};
    for (TailFree& tail : storage.tail_frees) tail.step = shift(tail.step);
  }
  for (Step& step : upstream.node_step) step = shift(step);
  // Moved allocations, in leaf order (their upstream steps never decrease along it): each goes
  // before the event at its step, after the moved ones before it.
  for (std::size_t k = 0; k < moved; ++k) {
    const Step position = to[k] + static_cast<Step>(k);
    upstream.events[static_cast<std::size_t>(position)] = deferred.events[static_cast<std::size_t>(from[k])];
    upstream.storages[static_cast<std::size_t>(storage_of[k])].live.lower = position;
  }
  return upstream;
}

}  // namespace galloc
