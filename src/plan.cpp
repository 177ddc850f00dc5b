#include "galloc/plan.hpp"

#include <algorithm>
#include <map>
#include <tuple>

namespace galloc {

Bytes BufferPlan::size() const {
  Bytes total = 0;
  for (Bytes chunk : chunk_sizes) total += chunk;
  return total;
}

Bytes Plan::total_size() const {
  Bytes total = 0;
  for (const BufferPlan& buffer : buffers) {
    if (!buffer.shared) total += buffer.size();
  }
  return total;
}

Bytes Plan::total_lower_bound() const {
  Bytes total = 0;
  for (const BufferPlan& buffer : buffers) {
    if (!buffer.shared) total += buffer.lower_bound;
  }
  return total;
}

Plan make_plan(const Graph& graph, Span<const BufferType* const> buffer_types, const GraphProblem& lifetimes,
               const Placement& placement, std::string strategy) {
  Plan plan;
  plan.strategy = std::move(strategy);
  plan.tensors.resize(graph.tensors.size());
  const bool sized = lifetimes.tensor_size.size() == graph.tensors.size();
  for (std::size_t t = 0; t < graph.tensors.size(); ++t) {
    const StorageId s = lifetimes.tensor_storage[t];
    if (s < 0) continue;
    const BufferId b = lifetimes.tensor_buffer[t];
    const ChunkAddress address = placement.storage_address[static_cast<std::size_t>(s)];
    const Bytes size =
        sized ? lifetimes.tensor_size[t] : buffer_types[static_cast<std::size_t>(b)]->alloc_size(graph.tensors[t]);
    plan.tensors[t] = {b, address.chunk, address.offset, size};
  }
  const auto lower = live_lower_bound(lifetimes);
  const auto no_reuse = no_reuse_size(lifetimes);
  for (std::size_t b = 0; b < buffer_types.size(); ++b) {
    BufferPlan buffer;
    buffer.name = buffer_types[b]->name();
    buffer.allocator = lifetimes.buffer_allocator[b];
    const auto a = static_cast<std::size_t>(buffer.allocator);
    buffer.shared = std::find(lifetimes.buffer_allocator.begin(),
                              lifetimes.buffer_allocator.begin() + static_cast<std::ptrdiff_t>(b),
                              buffer.allocator) != lifetimes.buffer_allocator.begin() + static_cast<std::ptrdiff_t>(b);
    buffer.chunk_sizes = placement.chunk_sizes[a];
    buffer.lower_bound = lower[a];
    buffer.no_reuse = no_reuse[a];
    plan.buffers.push_back(std::move(buffer));
  }
  return plan;
}

}  // namespace galloc
