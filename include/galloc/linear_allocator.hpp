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
  // Per entry of the tensors given: the index in `buffers` of the buffer it was placed in, or
  // -1 for a tensor that got no memory here (it had some, is a view, or is an empty tensor
  // after the last buffer).
  std::vector<int> tensor_buffer;
};

struct ContextOptions {
  // ggml before 2025 (whisper.rn 0.4.0-rc.10) refuses a tensor larger than the max size
  // instead of giving it a buffer of its own: an invalid_argument status, nothing allocated.
  bool refuse_tensor_above_max_size = false;
};

// Bytes ContextAllocation would take for these tensors (what ..._from_buft_size returns).
[[nodiscard]] Result<Bytes> context_allocation_size(const Graph& graph, Span<const TensorId> tensors,
                                                    const BufferType& type, const ContextOptions& options = {});
// Places every tensor of `tensors` (in order) that has no memory and is no view into
// buffers of `type` no larger than its max size; a single tensor above the max gets a buffer
// of its own. Views get data from their source. On failure nothing is allocated or changed.
[[nodiscard]] Result<ContextAllocation> allocate_context_tensors(Graph& graph, Span<const TensorId> tensors,
                                                                 const BufferType& type,
                                                                 const ContextOptions& options = {});

}  // namespace galloc
