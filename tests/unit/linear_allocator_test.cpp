// LinearAllocator (ggml_tallocr) and allocate_context_tensors
// (ggml_backend_alloc_ctx_tensors_from_buft): alignment, the full-buffer error, the split into
// buffers at the max size, views, and all-or-nothing failure.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "galloc/buffer.hpp"
#include "galloc/graph.hpp"
#include "galloc/linear_allocator.hpp"

namespace galloc {
namespace {

// A planning-only buffer whose base address is deliberately misaligned (never dereferenced).
class MisalignedBufferType final : public BufferType {
 public:
  explicit MisalignedBufferType(Bytes alignment, std::uintptr_t base) : alignment_(alignment), base_(base) {}
  [[nodiscard]] std::string name() const override { return "misaligned"; }
  [[nodiscard]] Bytes alignment() const override { return alignment_; }
  [[nodiscard]] Result<std::unique_ptr<Buffer>> allocate(Bytes size) const override {
    return std::unique_ptr<Buffer>(std::make_unique<FakeBuffer>(*this, base_, size));
  }

 private:
  class FakeBuffer final : public Buffer {
   public:
    FakeBuffer(const BufferType& type, std::uintptr_t base, Bytes size) : type_(type), base_(base), size_(size) {}
    std::byte* base() override { return reinterpret_cast<std::byte*>(base_); }
    [[nodiscard]] Bytes size() const override { return size_; }
    [[nodiscard]] const BufferType& type() const override { return type_; }

   private:
    const BufferType& type_;
    std::uintptr_t base_;
    Bytes size_;
  };
  Bytes alignment_;
  std::uintptr_t base_;
};

Tensor f32(const char* name, std::int64_t n) { return Graph{}.new_tensor(name, DataType::F32, {n}); }

// ---------------------------------------------------------------------------------------------
// LinearAllocator

TEST(LinearAllocator, PlacesTensorsAtAlignedOffsets) {
  CpuBufferType cpu(64);
  auto buffer = cpu.allocate(256);
  ASSERT_TRUE(buffer.is_ok());
  LinearAllocator linear(**buffer);
  EXPECT_EQ(linear.offset(), 0u);  // aligned_alloc gives an aligned base
  EXPECT_EQ(linear.remaining(), 256u);

  Tensor a = f32("a", 3);   // 12 bytes -> 64
  Tensor b = f32("b", 16);  // 64 bytes
  ASSERT_TRUE(linear.allocate(a).is_ok());
  ASSERT_TRUE(linear.allocate(b).is_ok());
  EXPECT_EQ(a.data, (*buffer)->base());
  EXPECT_EQ(b.data, (*buffer)->base() + 64);
  EXPECT_EQ(linear.offset(), 128u);
  EXPECT_EQ(linear.remaining(), 128u);
}

// ggml_tallocr_new starts at the first aligned address of the buffer.
TEST(LinearAllocator, StartsAtTheFirstAlignedAddress) {
  MisalignedBufferType type(16, 0x1003);
  auto buffer = type.allocate(64);
  ASSERT_TRUE(buffer.is_ok());
  LinearAllocator linear(**buffer);
  EXPECT_EQ(linear.offset(), 13u);
  Tensor a = f32("a", 1);
  ASSERT_TRUE(linear.allocate(a).is_ok());
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a.data), 0x1010u);
  EXPECT_EQ(linear.offset(), 13u + 16u);
}

TEST(LinearAllocator, UsesTheBufferTypesAllocSize) {
  NullBufferType type(8);
  type.set_alloc_padding(4);
  auto buffer = type.allocate(64);
  ASSERT_TRUE(buffer.is_ok());
  LinearAllocator linear(**buffer);
  Tensor a = f32("a", 2);  // 8 bytes + 4 padding -> 16 aligned
  ASSERT_TRUE(linear.allocate(a).is_ok());
  EXPECT_EQ(linear.offset(), 16u);
}

// A full buffer is an error (ggml aborts); the allocator and the tensor stay as they were and
// smaller tensors still fit afterwards.
TEST(LinearAllocator, FullBufferIsAnErrorThatChangesNothing) {
  NullBufferType type(32);
  auto buffer = type.allocate(128);
  ASSERT_TRUE(buffer.is_ok());
  LinearAllocator linear(**buffer);
  Tensor a = f32("a", 16);  // 64
  ASSERT_TRUE(linear.allocate(a).is_ok());

  Tensor big = f32("big", 25);  // 100 -> 128
  int sentinel = 0;
  big.data = &sentinel;
  const Status status = linear.allocate(big);
  EXPECT_EQ(status.code(), ErrorCode::kOutOfMemory);
  EXPECT_NE(status.message().find("'big'"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("needed 128"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("available 64"), std::string::npos) << status.message();
  EXPECT_EQ(big.data, &sentinel);
  EXPECT_EQ(linear.offset(), 64u);

  Tensor fits = f32("fits", 16);  // exactly the 64 bytes left
  ASSERT_TRUE(linear.allocate(fits).is_ok());
  EXPECT_EQ(fits.data, (*buffer)->base() + 64);
  EXPECT_EQ(linear.remaining(), 0u);
  Tensor one = f32("one", 1);
  EXPECT_EQ(linear.allocate(one).code(), ErrorCode::kOutOfMemory);
  EXPECT_EQ(one.data, nullptr);
  EXPECT_EQ(linear.offset(), 128u);
}

// ---------------------------------------------------------------------------------------------
// allocate_context_tensors

// A "context": tensors in creation order, listed in `order`.
struct Context {
  Graph graph;
  std::vector<TensorId> order;
  TensorId add(Tensor t) {
    const TensorId id = graph.add(std::move(t));
    order.push_back(id);
    return id;
  }
  TensorId add_f32(const char* name, std::int64_t n) { return add(f32(name, n)); }
  TensorId add_view(const char* name, TensorId source, Bytes offset, std::int64_t n) {
    return add(graph.new_view(name, Op::View, source, offset, {n}));
  }
};

Bytes offset_in(const ContextAllocation& allocation, std::size_t buffer, const Tensor& t) {
  return static_cast<Bytes>(static_cast<std::byte*>(t.data) - allocation.buffers[buffer]->base());
}

std::vector<Bytes> buffer_sizes(const ContextAllocation& allocation) {
  std::vector<Bytes> sizes;
  for (const auto& buffer : allocation.buffers) sizes.push_back(buffer->size());
  return sizes;
}

// Max size 32: [a 16 | b 16] [c 8]
TEST(AllocateContextTensors, SplitsIntoBuffersAtTheMaxSize) {
  NullBufferType type(8, 32);
  Context ctx;
  const TensorId a = ctx.add_f32("a", 4);
  const TensorId b = ctx.add_f32("b", 4);
  const TensorId c = ctx.add_f32("c", 2);
  EXPECT_EQ(context_allocation_size(ctx.graph, ctx.order, type).value(), 40u);
  auto allocation = allocate_context_tensors(ctx.graph, ctx.order, type);
  ASSERT_TRUE(allocation.is_ok()) << allocation.status().to_string();
  EXPECT_EQ(buffer_sizes(*allocation), (std::vector<Bytes>{32, 8}));
  EXPECT_EQ(allocation->total_size, 40u);
  // Now every tensor has memory: a second allocation would need nothing (as in ggml).
  EXPECT_EQ(context_allocation_size(ctx.graph, ctx.order, type).value(), 0u);
  EXPECT_EQ(offset_in(*allocation, 0, ctx.graph[a]), 0u);
  EXPECT_EQ(offset_in(*allocation, 0, ctx.graph[b]), 16u);
  EXPECT_EQ(offset_in(*allocation, 1, ctx.graph[c]), 0u);
  EXPECT_EQ(type.live_buffers(), 2u);
  EXPECT_EQ(type.live_bytes(), 40u);
  allocation->buffers.clear();
  EXPECT_EQ(type.live_buffers(), 0u);
}

// Max size 32: [a 8] [big 48] [c 8]; a tensor above the max gets a buffer of its own.
TEST(AllocateContextTensors, ATensorLargerThanTheMaxGetsItsOwnBuffer) {
  NullBufferType type(8, 32);
  Context ctx;
  ctx.add_f32("a", 2);
  const TensorId big = ctx.add_f32("big", 12);
  ctx.add_f32("c", 2);
  EXPECT_EQ(context_allocation_size(ctx.graph, ctx.order, type).value(), 64u);
  auto allocation = allocate_context_tensors(ctx.graph, ctx.order, type);
  ASSERT_TRUE(allocation.is_ok());
  EXPECT_EQ(buffer_sizes(*allocation), (std::vector<Bytes>{8, 48, 8}));
  EXPECT_EQ(offset_in(*allocation, 1, ctx.graph[big]), 0u);
  EXPECT_EQ(allocation->tensor_buffer, (std::vector<int>{0, 1, 2}));

  Context first;  // first in line: nothing to close, it opens the first buffer alone
  first.add_f32("big", 12);
  first.add_f32("a", 2);
  auto alone = allocate_context_tensors(first.graph, first.order, type);
  ASSERT_TRUE(alone.is_ok());
  EXPECT_EQ(buffer_sizes(*alone), (std::vector<Bytes>{48, 8}));
}

// Tensors with memory (has_memory, or data already set) take no space and keep their data.
TEST(AllocateContextTensors, SkipsTensorsThatHaveMemory) {
  NullBufferType type(8, 32);
  Context ctx;
  float weights[8] = {};
  float preset[4] = {};
  const TensorId a = ctx.add_f32("a", 4);
  const TensorId w = ctx.add_f32("w", 8);
  ctx.graph[w].has_memory = true;
  ctx.graph[w].data = weights;
  const TensorId p = ctx.add_f32("p", 4);
  ctx.graph[p].data = preset;
  const TensorId b = ctx.add_f32("b", 4);
  EXPECT_EQ(context_allocation_size(ctx.graph, ctx.order, type).value(), 32u);
  auto allocation = allocate_context_tensors(ctx.graph, ctx.order, type);
  ASSERT_TRUE(allocation.is_ok());
  EXPECT_EQ(buffer_sizes(*allocation), (std::vector<Bytes>{32}));
  EXPECT_EQ(ctx.graph[w].data, static_cast<void*>(weights));
  EXPECT_EQ(ctx.graph[p].data, static_cast<void*>(preset));
  EXPECT_EQ(offset_in(*allocation, 0, ctx.graph[a]), 0u);
  EXPECT_EQ(offset_in(*allocation, 0, ctx.graph[b]), 16u);
}

// ggml before 2025 refuses such a tensor instead: an error naming it, nothing allocated.
TEST(AllocateContextTensors, RefusesATensorAboveTheMaxWhenAsked) {
  NullBufferType type(8, 32);
  Context ctx;
  const TensorId a = ctx.add_f32("a", 2);
  ctx.add_f32("big", 12);
  ContextOptions options;
  options.refuse_tensor_above_max_size = true;
  const auto size = context_allocation_size(ctx.graph, ctx.order, type, options);
  EXPECT_EQ(size.status().code(), ErrorCode::kInvalidArgument);
  auto allocation = allocate_context_tensors(ctx.graph, ctx.order, type, options);
  ASSERT_FALSE(allocation.is_ok());
  EXPECT_EQ(allocation.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(allocation.status().message().find(
                "tensor big is too large to fit in a null buffer (tensor size: 48, max buffer size: 32)"),
            std::string::npos)
      << allocation.status().message();
  EXPECT_EQ(type.allocations(), 0u);
  EXPECT_EQ(ctx.graph[a].data, nullptr);
}

TEST(AllocateContextTensors, NothingToAllocateGivesNoBuffers) {
  NullBufferType type;
  Context ctx;
  float weights[4] = {};
  const TensorId w = ctx.add_f32("w", 4);
  ctx.graph[w].has_memory = true;
  ctx.graph[w].data = weights;
  auto allocation = allocate_context_tensors(ctx.graph, ctx.order, type);
  ASSERT_TRUE(allocation.is_ok());
  EXPECT_TRUE(allocation->buffers.empty());
  EXPECT_EQ(allocation->total_size, 0u);
  EXPECT_EQ(type.allocations(), 0u);
  EXPECT_EQ(context_allocation_size(ctx.graph, ctx.order, type).value(), 0u);
  const std::vector<TensorId> none;
  EXPECT_TRUE(allocate_context_tensors(ctx.graph, none, type).is_ok());
}

// Views take their source's address plus their offset, wherever they are in the list, and
// also when the source's memory is external.
TEST(AllocateContextTensors, SetsViews) {
  CpuBufferType cpu(16);
  Context ctx;
  float weights[8] = {};
  const TensorId w = ctx.add_f32("w", 8);
  ctx.graph[w].has_memory = true;
  ctx.graph[w].data = weights;
  const TensorId a = ctx.add_f32("a", 8);
  const TensorId va = ctx.add_view("va", a, 8, 4);
  const TensorId vw = ctx.add_view("vw", w, 4, 2);
  // A view listed before its source.
  Tensor early = ctx.graph.new_tensor("early", DataType::F32, {2});
  early.op = Op::View;
  const TensorId b_id = static_cast<TensorId>(ctx.graph.tensors.size()) + 1;
  early.src[0] = b_id;
  early.view_src = b_id;
  early.view_offs = 4;
  const TensorId e = ctx.add(std::move(early));
  const TensorId b = ctx.add_f32("b", 4);
  ASSERT_EQ(b, b_id);

  auto allocation = allocate_context_tensors(ctx.graph, ctx.order, cpu);
  ASSERT_TRUE(allocation.is_ok()) << allocation.status().to_string();
  EXPECT_EQ(buffer_sizes(*allocation), (std::vector<Bytes>{48}));  // a 32 + b 16
  EXPECT_EQ(ctx.graph[va].data, static_cast<std::byte*>(ctx.graph[a].data) + 8);
  EXPECT_EQ(ctx.graph[vw].data, reinterpret_cast<std::byte*>(weights) + 4);
  EXPECT_EQ(ctx.graph[e].data, static_cast<std::byte*>(ctx.graph[b].data) + 4);
}

struct SizeCase {
  Bytes alignment;
  Bytes max_size;
  Bytes padding;
  std::vector<std::int64_t> elements;
};

class ContextAllocationSize : public ::testing::TestWithParam<SizeCase> {};

// context_allocation_size (ggml_backend_alloc_ctx_tensors_from_buft_size) is what the
// allocation takes, buffer by buffer.
TEST_P(ContextAllocationSize, MatchesTheAllocation) {
  const SizeCase& c = GetParam();
  NullBufferType type(c.alignment, c.max_size);
  type.set_alloc_padding(c.padding);
  Context ctx;
  for (std::size_t i = 0; i < c.elements.size(); ++i) {
    ctx.add_f32(("t" + std::to_string(i)).c_str(), c.elements[i]);
  }
  const Bytes expected = context_allocation_size(ctx.graph, ctx.order, type).value();
  auto allocation = allocate_context_tensors(ctx.graph, ctx.order, type);
  ASSERT_TRUE(allocation.is_ok());
  EXPECT_EQ(allocation->total_size, expected);
  // No buffer is above the max size, unless a single tensor is.
  Bytes largest = 0;
  for (TensorId id : ctx.order) {
    largest = std::max(largest, align_up(type.alloc_size(ctx.graph[id]), c.alignment));
  }
  Bytes sum = 0;
  for (const auto& buffer : allocation->buffers) {
    sum += buffer->size();
    EXPECT_LE(buffer->size(), std::max(c.max_size, largest));
  }
  EXPECT_EQ(sum, expected);
  EXPECT_EQ(type.live_bytes(), expected);
  for (TensorId id : ctx.order) EXPECT_NE(ctx.graph[id].data, nullptr);
}

INSTANTIATE_TEST_SUITE_P(AllocateContextTensors, ContextAllocationSize,
                         ::testing::Values(SizeCase{8, kUnlimited, 0, {1, 2, 3, 4, 5}},
                                           SizeCase{32, 64, 0, {1, 8, 16, 3, 40, 2}},
                                           SizeCase{16, 48, 5, {4, 4, 4, 4, 20, 1}},
                                           SizeCase{1, 10, 0, {2, 2, 1, 3, 1}}, SizeCase{64, 64, 0, {0, 16, 0, 17}}));

// An allocation that fails halfway (the second of three buffers) returns the error, releases
// the buffers made so far and leaves every tensor's data as it was.
TEST(AllocateContextTensors, AFailedAllocationChangesNothing) {
  NullBufferType type(8, 16);
  type.fail_allocation(2);
  Context ctx;
  float weights[4] = {};
  const TensorId w = ctx.add_f32("w", 4);
  ctx.graph[w].has_memory = true;
  ctx.graph[w].data = weights;
  ctx.add_f32("a", 4);
  ctx.add_view("vw", w, 0, 2);
  ctx.add_f32("b", 4);
  ctx.add_f32("c", 4);
  const std::vector<Tensor> before = ctx.graph.tensors;

  auto allocation = allocate_context_tensors(ctx.graph, ctx.order, type);
  EXPECT_EQ(allocation.status().code(), ErrorCode::kOutOfMemory);
  EXPECT_NE(allocation.status().message().find("16 bytes"), std::string::npos) << allocation.status().message();
  EXPECT_EQ(type.allocations(), 2u);
  EXPECT_EQ(type.live_buffers(), 0u);
  EXPECT_EQ(type.live_bytes(), 0u);
  for (std::size_t i = 0; i < before.size(); ++i) {
    EXPECT_EQ(ctx.graph.tensors[i].data, before[i].data) << ctx.graph.tensors[i].name;
  }
}

TEST(AllocateContextTensors, BadArguments) {
  NullBufferType type;
  Context ctx;
  ctx.add_f32("a", 4);
  const std::vector<TensorId> bad{0, 7};
  auto missing = allocate_context_tensors(ctx.graph, bad, type);
  EXPECT_EQ(missing.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(missing.status().message().find("tensor 7"), std::string::npos);
  EXPECT_EQ(ctx.graph[0].data, nullptr);

  NullBufferType odd(24);
  auto misaligned = allocate_context_tensors(ctx.graph, ctx.order, odd);
  EXPECT_EQ(misaligned.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(misaligned.status().message().find("alignment 24"), std::string::npos);
  EXPECT_EQ(odd.allocations(), 0u);
}

}  // namespace
}  // namespace galloc
