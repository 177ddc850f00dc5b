// Buffer types and buffers: what a device tells the planner, and the memory it hands out.
// Mirrors ggml's ggml_backend_buffer_type_i: alignment is required, max_size defaults to
// unlimited, alloc_size defaults to the tensor's byte span (ggml_nbytes).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "galloc/graph.hpp"
#include "galloc/status.hpp"
#include "galloc/types.hpp"

namespace galloc {

class BufferType;

// One contiguous allocation made by a buffer type.
class Buffer {
 public:
  virtual ~Buffer() = default;
  [[nodiscard]] virtual std::byte* base() = 0;  // may be a fake address for planning-only types
  [[nodiscard]] virtual Bytes size() const = 0;
  [[nodiscard]] virtual const BufferType& type() const = 0;
  // Called at the start of every GraphAllocator::alloc, before tensors are placed in the
  // buffer again (ggml_backend_buffer_reset: some devices keep per-tensor state).
  virtual void reset() {}
  // Sets `size` bytes from `offset` to `value`, where the memory can be written from here;
  // returns false (and does nothing) where it cannot. SharedArena's checked mode poisons with it.
  virtual bool fill(Offset offset, Bytes size, std::byte value) {
    (void)offset, (void)size, (void)value;
    return false;
  }
  // Copy `size` bytes at `offset` out of / into the buffer, where its memory can be read and
  // written from here; return false (and do nothing) where it cannot. SharedArena keeps a
  // tensor another member reads through a move or a regrowth with them.
  virtual bool read(Offset offset, Bytes size, void* out) {
    (void)offset, (void)size, (void)out;
    return false;
  }
  virtual bool write(Offset offset, Bytes size, const void* in) {
    (void)offset, (void)size, (void)in;
    return false;
  }
};

class BufferType {
 public:
  virtual ~BufferType() = default;
  [[nodiscard]] virtual std::string name() const = 0;
  [[nodiscard]] virtual Bytes alignment() const = 0;  // a power of two
  [[nodiscard]] virtual Bytes max_size() const { return kUnlimited; }
  // Bytes the type needs for `tensor` (padding for some devices); ggml_nbytes by default.
  [[nodiscard]] virtual Bytes alloc_size(const Tensor& tensor) const { return tensor_nbytes(tensor); }
  // A buffer of exactly `size` bytes; size 0 is allowed and gives an empty buffer.
  [[nodiscard]] virtual Result<std::unique_ptr<Buffer>> allocate(Bytes size) const = 0;
};

// Aligned host memory from the C++ runtime.
class CpuBufferType final : public BufferType {
 public:
  explicit CpuBufferType(Bytes alignment = 64, Bytes max_size = kUnlimited, std::string name = "CPU");
  [[nodiscard]] std::string name() const override { return name_; }
  [[nodiscard]] Bytes alignment() const override { return alignment_; }
  [[nodiscard]] Bytes max_size() const override { return max_size_; }
  [[nodiscard]] Result<std::unique_ptr<Buffer>> allocate(Bytes size) const override;

 private:
  Bytes alignment_;
  Bytes max_size_;
  std::string name_;
};

// Allocates nothing: buffers have a fake base address and only a size. For planning and
// tests, like the dummy backend of ggml's allocator tests. It can be told to fail the n-th
// allocation (counting from 1) and counts what it hands out.
class NullBufferType final : public BufferType {
 public:
  explicit NullBufferType(Bytes alignment = 8, Bytes max_size = kUnlimited, std::string name = "null");
  [[nodiscard]] std::string name() const override { return name_; }
  [[nodiscard]] Bytes alignment() const override { return alignment_; }
  [[nodiscard]] Bytes max_size() const override { return max_size_; }
  [[nodiscard]] Result<std::unique_ptr<Buffer>> allocate(Bytes size) const override;
  // ggml_nbytes plus `padding` for non-empty tensors, like devices that pad allocations.
  [[nodiscard]] Bytes alloc_size(const Tensor& tensor) const override;

  void set_alloc_padding(Bytes padding) { padding_ = padding; }
  void fail_allocation(std::size_t nth) { fail_at_ = nth; }
  [[nodiscard]] std::size_t allocations() const { return allocations_; }
  [[nodiscard]] Bytes live_bytes() const { return *live_bytes_; }
  // The most bytes its buffers held at once.
  [[nodiscard]] Bytes peak_bytes() const { return *peak_bytes_; }
  [[nodiscard]] std::size_t live_buffers() const { return *live_buffers_; }

 private:
  Bytes alignment_;
  Bytes max_size_;
  std::string name_;
  Bytes padding_ = 0;
  mutable std::size_t allocations_ = 0;
  std::size_t fail_at_ = 0;  // 0: never fail
  // Shared with the buffers so they can report their release after the type is gone.
  std::shared_ptr<Bytes> live_bytes_ = std::make_shared<Bytes>(0);
  std::shared_ptr<Bytes> peak_bytes_ = std::make_shared<Bytes>(0);
  std::shared_ptr<std::size_t> live_buffers_ = std::make_shared<std::size_t>(0);
};

}  // namespace galloc
