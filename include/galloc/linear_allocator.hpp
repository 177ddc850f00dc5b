// Linear allocation into one buffer (ggml_tallocr) and whole sets of tensors into buffers no
// larger than a buffer type's max size (ggml_backend_alloc_ctx_tensors_from_buft).
#pragma once

#include <memory>
#include <vector>

#include "galloc/buffer.hpp"
#include "galloc/graph.hpp"
#include "galloc/status.hpp"

namespace galloc {

class LinearAllocator {
 public:
  explicit LinearAllocator(Buffer& buffer);
  // Places `tensor` at the next aligned offset and sets tensor.data. A full buffer is an
  // error (ggml aborts) and leaves the allocator and the tensor unchanged.
  Status allocate(Tensor& tensor);
  [[nodiscard]] Offset offset() const { return offset_; }
  [[nodiscard]] Bytes remaining() const { return buffer_->size() - std::min(offset_, buffer_->size()); }

 private:
  Buffer* buffer_;
  Bytes alignment_;
  Offset offset_;
};

struct ContextAllocation {
  std::vector<std::unique_ptr<Buffer>> buffers;  // empty when nothing needed memory
  Bytes total_size = 0;
};

// Bytes ContextAllocation would take for these tensors (what ..._from_buft_size returns).
[[nodiscard]] Bytes context_allocation_size(const Graph& graph, Span<const TensorId> tensors,
                                            const BufferType& type);
// Places every tensor of `tensors` (in order) that has no memory and is no view into
// buffers of `type` no larger than its max size; a single tensor above the max gets a buffer
// of its own. Views get data from their source. On failure nothing is allocated or changed.
[[nodiscard]] Result<ContextAllocation> allocate_context_tensors(Graph& graph,
                                                                 Span<const TensorId> tensors,
                                                                 const BufferType& type);

}  // namespace galloc
