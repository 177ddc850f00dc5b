#include "galloc/linear_allocator.hpp"

#include <algorithm>
#include <cstdint>

namespace galloc {

namespace {
Offset aligned_start(const Buffer& buffer, Bytes alignment) {
  const auto base = reinterpret_cast<std::uintptr_t>(const_cast<Buffer&>(buffer).base());
  return (alignment - base % alignment) % alignment;
}
}  // namespace

LinearAllocator::LinearAllocator(Buffer& buffer)
    : buffer_(&buffer),
      alignment_(std::max<Bytes>(1, buffer.type().alignment())),
      offset_(aligned_start(buffer, alignment_)) {}

Status LinearAllocator::allocate(Tensor& tensor) {
  const Bytes size = align_up(buffer_->type().alloc_size(tensor), alignment_);
  if (offset_ > buffer_->size() || size > buffer_->size() - offset_) {
    return out_of_memory("not enough space in the " + buffer_->type().name() + " buffer for tensor '" + tensor.name +
                         "' (needed " + std::to_string(size) + " bytes, available " + std::to_string(remaining()) +
                         ")");
  }
  tensor.data = buffer_->base() + offset_;
  offset_ += size;
  return Status::ok();
}

namespace {

bool needs_memory(const Tensor& t) { return !t.has_memory && !t.is_view() && t.data == nullptr; }

// The ranges [first, last) of `tensors` that go into one buffer each, with their sizes.
struct Range {
  std::size_t first;
  std::size_t last;
  Bytes size;
};

Result<std::vector<Range>> split_into_buffers(const Graph& graph, Span<const TensorId> tensors, const BufferType& type,
                                              const ContextOptions& options) {
  const Bytes alignment = std::max<Bytes>(1, type.alignment());
  const Bytes max_size = type.max_size();
  std::vector<Range> ranges;
  std::size_t first = 0;
  Bytes current = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = graph[tensors[i]];
    const Bytes size = needs_memory(t) ? align_up(type.alloc_size(t), alignment) : 0;
    if (options.refuse_tensor_above_max_size && size > max_size) {
      return invalid_argument("tensor " + t.name + " is too large to fit in a " + type.name() +
                              " buffer (tensor size: " + std::to_string(size) +
                              ", max buffer size: " + std::to_string(max_size) + ")");
    }
    if (current > 0 && current + size > max_size) {
      ranges.push_back({first, i, current});
      first = i;
      current = size;
    } else {
      current += size;
    }
  }
  if (current > 0) ranges.push_back({first, tensors.size(), current});
  return ranges;
}

}  // namespace

Result<Bytes> context_allocation_size(const Graph& graph, Span<const TensorId> tensors, const BufferType& type,
                                      const ContextOptions& options) {
  auto ranges = split_into_buffers(graph, tensors, type, options);
  if (!ranges) return ranges.status();
  Bytes total = 0;
  for (const Range& range : *ranges) total += range.size;
  return total;
}

Result<ContextAllocation> allocate_context_tensors(Graph& graph, Span<const TensorId> tensors, const BufferType& type,
                                                   const ContextOptions& options) {
  for (TensorId id : tensors) {
    if (!graph.contains(id)) {
      return invalid_argument("tensor " + std::to_string(id) + " is not in the graph");
    }
  }
  if (!is_power_of_two(type.alignment())) {
    return invalid_argument(type.name() + ": alignment " + std::to_string(type.alignment()) + " is not a power of two");
  }
  auto ranges = split_into_buffers(graph, tensors, type, options);
  if (!ranges) return ranges.status();
  ContextAllocation allocation;
  allocation.tensor_buffer.assign(tensors.size(), -1);
  std::vector<std::pair<TensorId, void*>> placed;  // to undo on failure
  auto undo = [&] {
    for (auto& [id, old] : placed) graph[id].data = old;
  };
  for (const Range& range : *ranges) {
    auto buffer = type.allocate(range.size);
    if (!buffer) {
      undo();
      return Status(buffer.status().code(), "failed to allocate a " + type.name() + " buffer of " +
                                                std::to_string(range.size) + " bytes: " + buffer.status().message());
    }
    LinearAllocator linear(**buffer);
    for (std::size_t i = range.first; i < range.last; ++i) {
      Tensor& t = graph[tensors[i]];
      if (!needs_memory(t)) continue;
      placed.emplace_back(tensors[i], t.data);
      if (Status s = linear.allocate(t); !s) {
        undo();
        return s;
      }
      allocation.tensor_buffer[i] = static_cast<int>(allocation.buffers.size());
    }
    allocation.total_size += range.size;
    allocation.buffers.push_back(std::move(buffer).value());
  }
  // Views take their address from their source, once every source has one.
  for (TensorId id : tensors) {
    Tensor& t = graph[id];
    if (t.is_view() && t.data == nullptr && graph[t.view_src].data != nullptr) {
      t.data = static_cast<std::byte*>(graph[t.view_src].data) + t.view_offs;
    }
  }
  return allocation;
}

}  // namespace galloc
