#include "galloc/buffer.hpp"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

namespace galloc {

namespace {

class CpuBuffer final : public Buffer {
 public:
  CpuBuffer(const BufferType& type, std::byte* data, Bytes size) : type_(type), data_(data), size_(size) {}
  ~CpuBuffer() override { std::free(data_); }
  CpuBuffer(const CpuBuffer&) = delete;
  CpuBuffer& operator=(const CpuBuffer&) = delete;
  std::byte* base() override { return data_; }
  [[nodiscard]] Bytes size() const override { return size_; }
  bool fill(Offset offset, Bytes size, std::byte value) override {
    if (offset > size_ || size > size_ - offset) return false;
    std::memset(data_ + offset, std::to_integer<int>(value), size);
    return true;
  }
  bool read(Offset offset, Bytes size, void* out) override {
    if (offset > size_ || size > size_ - offset) return false;
    if (size > 0) std::memcpy(out, data_ + offset, size);
    return true;
  }
  bool write(Offset offset, Bytes size, const void* in) override {
    if (offset > size_ || size > size_ - offset) return false;
    if (size > 0) std::memcpy(data_ + offset, in, size);
    return true;
  }
  [[nodiscard]] const BufferType& type() const override { return type_; }

 private:
  const BufferType& type_;
  std::byte* data_;
  Bytes size_;
};

class NullBuffer final : public Buffer {
 public:
  NullBuffer(const BufferType& type, Bytes size, std::shared_ptr<Bytes> live_bytes, std::shared_ptr<Bytes> peak_bytes,
             std::shared_ptr<std::size_t> live_buffers)
      : type_(type), size_(size), live_bytes_(std::move(live_bytes)), live_buffers_(std::move(live_buffers)) {
    *live_bytes_ += size_;
    *peak_bytes = std::max(*peak_bytes, *live_bytes_);
    *live_buffers_ += 1;
  }
  ~NullBuffer() override {
    *live_bytes_ -= size_;
    *live_buffers_ -= 1;
  }
  NullBuffer(const NullBuffer&) = delete;
  NullBuffer& operator=(const NullBuffer&) = delete;
  // A fixed fake address, aligned for any type: nothing may be read or written there.
  std::byte* base() override { return reinterpret_cast<std::byte*>(std::uintptr_t{1} << 20); }
  [[nodiscard]] Bytes size() const override { return size_; }
  [[nodiscard]] const BufferType& type() const override { return type_; }

 private:
  const BufferType& type_;
  Bytes size_;
  std::shared_ptr<Bytes> live_bytes_;
  std::shared_ptr<std::size_t> live_buffers_;
};

}  // namespace

CpuBufferType::CpuBufferType(Bytes alignment, Bytes max_size, std::string name)
    : alignment_(alignment), max_size_(max_size), name_(std::move(name)) {}

Result<std::unique_ptr<Buffer>> CpuBufferType::allocate(Bytes size) const {
  if (!is_power_of_two(alignment_)) {
    return invalid_argument(name_ + ": alignment " + std::to_string(alignment_) + " is not a power of two");
  }
  const Bytes alignment = std::max<Bytes>(alignment_, sizeof(void*));
  const Bytes rounded = align_up(std::max<Bytes>(size, 1), alignment);
  if (rounded < size) return out_of_memory(name_ + ": " + std::to_string(size) + " bytes is too large");
  void* data = std::aligned_alloc(alignment, rounded);
  if (data == nullptr) {
    return out_of_memory(name_ + ": could not allocate " + std::to_string(size) + " bytes");
  }
  try {
    return std::unique_ptr<Buffer>(std::make_unique<CpuBuffer>(*this, static_cast<std::byte*>(data), size));
  } catch (const std::bad_alloc&) {
    std::free(data);
    return out_of_memory(name_ + ": could not allocate the buffer's bookkeeping");
  }
}

NullBufferType::NullBufferType(Bytes alignment, Bytes max_size, std::string name)
    : alignment_(alignment), max_size_(max_size), name_(std::move(name)) {}

Bytes NullBufferType::alloc_size(const Tensor& tensor) const {
  const Bytes size = tensor_nbytes(tensor);
  return size == 0 ? 0 : size + padding_;
}

Result<std::unique_ptr<Buffer>> NullBufferType::allocate(Bytes size) const {
  ++allocations_;
  if (fail_at_ != 0 && allocations_ == fail_at_) {
    return out_of_memory(name_ + ": allocation " + std::to_string(allocations_) + " of " + std::to_string(size) +
                         " bytes failed (injected)");
  }
  return std::unique_ptr<Buffer>(std::make_unique<NullBuffer>(*this, size, live_bytes_, peak_bytes_, live_buffers_));
}

}  // namespace galloc
