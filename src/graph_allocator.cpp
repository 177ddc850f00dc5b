#include "galloc/graph_allocator.hpp"

#include <algorithm>

#include "galloc/planner.hpp"

namespace galloc {

namespace {

// A multiply-rotate hash over the integers that make up a graph's topology: one multiply per
// value, since alloc checks it on every call.
class Fingerprint {
 public:
  void add(std::uint64_t value) {
    hash_ = (hash_ ^ value) * 0x9e3779b97f4a7c15ull;
    hash_ ^= hash_ >> 29;
  }
  [[nodiscard]] std::uint64_t value() const { return hash_; }

 private:
  std::uint64_t hash_ = 0x243f6a8885a308d3ull;
};

// Every tensor the walk reads: leafs, nodes and their sources, each once.
std::vector<TensorId> touched_tensors(const Graph& graph) {
  std::vector<char> seen(graph.tensors.size(), 0);
  std::vector<TensorId> result;
  auto visit = [&](TensorId id) {
    if (id == kNoTensor || seen[static_cast<std::size_t>(id)]) return;
    seen[static_cast<std::size_t>(id)] = 1;
    result.push_back(id);
  };
  for (TensorId id : graph.leafs) visit(id);
  for (TensorId id : graph.nodes) {
    visit(id);
    for (TensorId src : graph[id].src) visit(src);
  }
  return result;
}

}  // namespace

std::uint64_t graph_structure_fingerprint(const Graph& graph) {
  Fingerprint f;
  f.add(graph.tensors.size());
  f.add(graph.nodes.size());
  f.add(graph.leafs.size());
  for (TensorId id : graph.leafs) f.add(static_cast<std::uint64_t>(id));
  // Two 32-bit values a word, since alloc checks this on every call.
  auto pair = [](std::int32_t a, std::int32_t b) {
    return static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32 | static_cast<std::uint32_t>(b);
  };
  for (TensorId id : graph.nodes) {
    if (!graph.contains(id)) {
      f.add(pair(id, -1));
      continue;
    }
    const Tensor& t = graph[id];
    f.add(pair(id, static_cast<std::int32_t>(t.op)));
    f.add(pair(t.view_src, static_cast<std::int32_t>(t.flags & (kFlagInput | kFlagOutput))));
    for (int s = 0; s < kMaxSources; s += 2) f.add(pair(t.src[static_cast<std::size_t>(s)], t.src[static_cast<std::size_t>(s) + 1]));
  }
  return f.value();
}

GraphAllocator::GraphAllocator(std::vector<const BufferType*> buffer_types,
                               GraphAllocatorOptions options)
    : types_(std::move(buffer_types)),
      allocator_of_(allocators_of(types_)),
      options_(options) {
  AllocatorId count = 0;
  for (AllocatorId a : allocator_of_) count = std::max(count, a + 1);
  buffers_.resize(static_cast<std::size_t>(count));
  reserved_once_.assign(static_cast<std::size_t>(count), false);
}

GraphAllocator::~GraphAllocator() = default;
GraphAllocator::GraphAllocator(GraphAllocator&&) noexcept = default;
GraphAllocator& GraphAllocator::operator=(GraphAllocator&&) noexcept = default;

Result<Plan> GraphAllocator::make_reservation_plan(const Graph& graph,
                                                   const BufferAssignment& assignment) const {
  auto planned = plan_graph(graph, types_, assignment, options_.placement);
  if (!planned) return planned.status();
  return std::move(planned->plan);
}

Status GraphAllocator::reserve(const Graph& graph, const BufferAssignment& assignment) {
  auto plan = make_reservation_plan(graph, assignment);
  if (!plan) return plan.status();

  // Allocate every buffer that must grow before releasing anything, so a failure leaves
  // the previous buffers and plan in place.
  std::vector<std::pair<std::size_t, std::vector<std::unique_ptr<Buffer>>>> grown;
  for (std::size_t b = 0; b < plan->buffers.size(); ++b) {
    const BufferPlan& buffer = plan->buffers[b];
    if (buffer.shared) continue;
    const auto a = static_cast<std::size_t>(buffer.allocator);
    // ggml also grows when a chunk is new; a new chunk of 0 bytes must exist too.
    bool grow = !reserved_once_[a] || buffer.chunk_sizes.size() > buffers_[a].size();
    for (std::size_t c = 0; c < buffer.chunk_sizes.size(); ++c) {
      const Bytes current = c < buffers_[a].size() ? buffers_[a][c]->size() : 0;
      if (buffer.chunk_sizes[c] > current) grow = true;
    }
    if (!grow) continue;
    std::vector<std::unique_ptr<Buffer>> chunks;
    for (std::size_t c = 0; c < buffer.chunk_sizes.size(); ++c) {
      auto chunk = types_[b]->allocate(buffer.chunk_sizes[c]);
      if (!chunk) {
        return {chunk.status().code(),
                "reserve: failed to allocate chunk " + std::to_string(c) + " of buffer " +
                    std::to_string(b) + " (" + buffer.name + ", " +
                    std::to_string(buffer.chunk_sizes[c]) + " bytes): " + chunk.status().message() +
                    "; the previous buffers are kept"};
      }
      chunks.push_back(std::move(chunk).value());
    }
    grown.emplace_back(a, std::move(chunks));
  }
  for (auto& [a, chunks] : grown) buffers_[a] = std::move(chunks);
  std::fill(reserved_once_.begin(), reserved_once_.end(), true);
  structure_ = graph_structure_fingerprint(graph);
  touched_ = touched_tensors(graph);
  plan_ = std::move(plan).value();
  return Status::ok();
}

Result<std::vector<Bytes>> GraphAllocator::measure(const Graph& graph,
                                                   const BufferAssignment& assignment) const {
  auto plan = make_reservation_plan(graph, assignment);
  if (!plan) return plan.status();
  std::vector<Bytes> sizes;
  for (const BufferPlan& buffer : plan->buffers) sizes.push_back(buffer.size());
  return sizes;
}

bool GraphAllocator::needs_reserve(const Graph& graph) const {
  if (!plan_) return true;
  if (graph.nodes.size() != plan_->nodes.size() || graph.leafs.size() != plan_->leafs.size() ||
      graph.tensors.size() != plan_->tensors.size()) {
    return true;
  }
  if (graph_structure_fingerprint(graph) != structure_) return true;
  // Same topology, so the same tensors are read: each must still fit the slot it was given,
  // and one that had memory or was a view at reserve time must still have or be one.
  for (TensorId id : touched_) {
    const Tensor& t = graph[id];
    if (t.has_memory || t.is_view()) continue;
    const TensorPlacement& slot = plan_->tensors[static_cast<std::size_t>(id)];
    if (!slot.planned()) return true;
    if (types_[static_cast<std::size_t>(slot.buffer)]->alloc_size(t) > slot.size) return true;
  }
  return false;
}

Status GraphAllocator::alloc(Graph& graph) {
  if (needs_reserve(graph)) {
    if (types_.size() != 1) {
      return failed_precondition(
          "alloc: the graph does not fit the reservation and there are " +
          std::to_string(types_.size()) +
          " buffer ids; call reserve with the node and leaf buffer ids first");
    }
    GALLOC_RETURN_IF_ERROR(reserve(graph));
  }
  const Plan& plan = *plan_;
  for (std::size_t t = 0; t < graph.tensors.size(); ++t) {
    Tensor& tensor = graph.tensors[t];
    const TensorPlacement& slot = plan.tensors[t];
    if (tensor.has_memory || tensor.is_view() || !slot.planned()) continue;
    const auto& chunks = buffers_[static_cast<std::size_t>(allocator_of_[static_cast<std::size_t>(slot.buffer)])];
    tensor.data = chunks[static_cast<std::size_t>(slot.chunk)]->base() + slot.offset;
  }
  for (Tensor& tensor : graph.tensors) {
    // The fingerprint covers the nodes' view sources only; a tensor outside the lists may
    // name anything, so check before following it.
    if (!tensor.is_view() || tensor.has_memory || !graph.contains(tensor.view_src)) continue;
    const Tensor& source = graph[tensor.view_src];
    tensor.data = source.data == nullptr ? nullptr : static_cast<std::byte*>(source.data) + tensor.view_offs;
  }
  return Status::ok();
}

Result<Bytes> GraphAllocator::buffer_size(BufferId id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= types_.size()) {
    return invalid_argument("buffer id " + std::to_string(id) + " is out of range (" +
                            std::to_string(types_.size()) + " buffer ids)");
  }
  const AllocatorId a = allocator_of_[static_cast<std::size_t>(id)];
  for (BufferId earlier = 0; earlier < id; ++earlier) {
    if (allocator_of_[static_cast<std::size_t>(earlier)] == a) return Bytes{0};
  }
  Bytes total = 0;
  for (const auto& chunk : buffers_[static_cast<std::size_t>(a)]) total += chunk->size();
  return total;
}

std::vector<Buffer*> GraphAllocator::chunks(BufferId id) const {
  std::vector<Buffer*> result;
  if (id < 0 || static_cast<std::size_t>(id) >= types_.size()) return result;
  for (const auto& chunk : buffers_[static_cast<std::size_t>(allocator_of_[static_cast<std::size_t>(id)])]) {
    result.push_back(chunk.get());
  }
  return result;
}

}  // namespace galloc
