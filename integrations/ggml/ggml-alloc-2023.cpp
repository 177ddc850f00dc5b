// The drop-in for the 2023 ggml-alloc.h (whisper.rn 0.4.0-rc.8's ggml): the measure allocator
// ggml_allocr_*, the tensor allocator ggml_tallocr_* with its measure mode, and the first
// ggml_gallocr (a parse order, and ggml_gallocr_alloc_graph_n for ggml_backend_sched).
//
// That API is online: the application allocates a graph's inputs with ggml_allocr_alloc and
// writes them before the graph exists, then ggml_allocr_alloc_graph places the rest. galloc
// plans whole graphs, so alloc_graph plans the inputs with the graph (allocated first, freed
// after their last reader, as the 2023 allocator frees them) and moves their bytes to the
// planned place. Tensors allocated since the last reset that the graph does not read move to
// the start of the buffer, bytes and all, and the graph is planned above them.
//
// The 2023 API had no way to report failure (void returns, an abort when the buffer is too
// small). The signatures stay; a failure is logged to stderr, as that ggml logs, the tensors
// concerned keep data == NULL, and the program goes on.
//
// amalgamate.sh puts it into the one file after ggml-alloc-2024.cpp; the preprocessor keeps
// the one this ggml needs (api_generations.hpp).

#include "ggml-alloc.h"
#include "ggml-backend-impl.h"
#include "ggml-backend.h"
#include "ggml-impl.h"
#include "ggml.h"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "galloc/buffer.hpp"
#include "galloc/graph.hpp"
#include "galloc/graph_allocator.hpp"
#include "galloc/placement.hpp"
#include "galloc/status.hpp"

#include "api_generations.hpp"
#include "cgraph_conversion.hpp"
#include "dropin_env.hpp"
#include "ggml-alloc-shared.hpp"

#ifdef GALLOC_DROPIN_JSON  // GALLOC_DUMP's graph files (dropin_env.hpp)
#include "galloc/graph_json.hpp"
#endif

#if GALLOC_GGML_2023_API

namespace {

// A block of a ggml_tallocr's buffer held since its last reset: a tensor from ggml_tallocr_alloc,
// or (tensor == nullptr) the memory of a graph placed there.
struct HeldBlock {
  ggml_tensor* tensor = nullptr;
  Bytes begin = 0;  // from the buffer's base
  Bytes end = 0;
};

}  // namespace

struct ggml_tallocr {
  ggml_backend_buffer_t buffer = nullptr;
  bool buffer_owned = false;
  bool measure = false;
  std::uint64_t serial = 0;  // tells a new allocator at a freed one's address apart
  std::byte* base = nullptr;
  Bytes alignment = 1;
  Bytes first = 0;     // the first aligned offset from base
  Bytes capacity = 0;  // bytes from base: the buffer's size, or SIZE_MAX / 2 when measuring
  Bytes max_size = 0;  // the most bytes from base ever used (ggml_tallocr_max_size)
  std::vector<HeldBlock> held;
};

namespace {

std::uint64_t next_serial() {
  static std::atomic<std::uint64_t> serial{0};
  return ++serial;
}

ggml_tallocr_t new_tallocr(ggml_backend_buffer_t buffer, bool owned, bool measure, Bytes alignment) {
  auto talloc = std::make_unique<ggml_tallocr>();
  talloc->buffer = buffer;
  talloc->buffer_owned = owned;
  talloc->measure = measure;
  talloc->serial = next_serial();
  talloc->base = static_cast<std::byte*>(ggml_backend_buffer_get_base(buffer));
  talloc->alignment = alignment;
  const auto address = reinterpret_cast<std::uintptr_t>(talloc->base);
  talloc->first = (alignment - address % alignment) % alignment;
  // a measure allocator is limited to half of size_t, as in the 2023 allocator, so sums cannot overflow
  talloc->capacity = measure ? SIZE_MAX / 2 : ggml_backend_buffer_get_size(buffer);
  return talloc.release();
}

// The first offset from the buffer's base, at or after everything the allocator holds, whose
// address is aligned (the base itself may not be: a measure allocator's one-byte buffer).
Bytes next_free_offset(const ggml_tallocr& talloc) {
  Bytes end = talloc.first;
  for (const HeldBlock& block : talloc.held) end = std::max(end, block.end);
  return talloc.first + galloc::align_up(end - talloc.first, talloc.alignment);
}

// Moves the tensors an allocator holds to the start of its buffer, in order and without gaps
// (their bytes too, unless it measures), so that the graph planned above them can use the
// holes that the inputs it takes along leave. Not while it holds an earlier graph's memory:
// that graph's tensors may be read by the next.
void pack_held_tensors(ggml_tallocr& talloc) {
  for (const HeldBlock& block : talloc.held) {
    if (block.tensor == nullptr) return;
  }
  std::sort(talloc.held.begin(), talloc.held.end(),
            [](const HeldBlock& a, const HeldBlock& b) { return a.begin < b.begin; });
  Bytes cursor = talloc.first;
  std::vector<std::uint8_t> bytes;
  for (HeldBlock& block : talloc.held) {
    const Bytes size = block.end - block.begin;  // a multiple of the alignment
    if (block.begin != cursor) {
      ggml_tensor* t = block.tensor;
      if (!talloc.measure) {
        bytes.resize(ggml_nbytes(t));
        ggml_backend_tensor_get(t, bytes.data(), 0, bytes.size());
      }
      t->data = talloc.base + cursor;
      if (!talloc.measure) {
        ggml_backend_buffer_init_tensor(talloc.buffer, t);
        ggml_backend_tensor_set(t, bytes.data(), 0, bytes.size());
      }
      block = {t, cursor, cursor + size};
    }
    cursor += size;
  }
}

// ------------------------------------------------------------------ graph planning

// The buffer a graph may use in a ggml_tallocr: from `floor` (above what the allocator holds
// and the graph does not read) to the end of its buffer.
class WindowBuffer final : public galloc::Buffer {
 public:
  WindowBuffer(const galloc::BufferType& type, std::byte* base, Bytes size) : type_(type), base_(base), size_(size) {}
  std::byte* base() override { return base_; }
  [[nodiscard]] Bytes size() const override { return size_; }
  [[nodiscard]] const galloc::BufferType& type() const override { return type_; }

 private:
  const galloc::BufferType& type_;
  std::byte* base_;
  Bytes size_;
};

class WindowType final : public galloc::BufferType {
 public:
  WindowType(ggml_tallocr* talloc, Bytes floor, const Converted* tensors)
      : talloc_(talloc), floor_(floor), tensors_(tensors) {}
  [[nodiscard]] std::string name() const override {
    const char* n = ggml_backend_buffer_name(talloc_->buffer);
    return n != nullptr ? n : "?";
  }
  [[nodiscard]] Bytes alignment() const override { return talloc_->alignment; }
  [[nodiscard]] Bytes alloc_size(const galloc::Tensor& tensor) const override {
    if (ggml_tensor* t = tensors_->ggml_of(tensor)) return ggml_backend_buffer_get_alloc_size(talloc_->buffer, t);
    return galloc::tensor_nbytes(tensor);
  }
  [[nodiscard]] galloc::Result<std::unique_ptr<galloc::Buffer>> allocate(Bytes size) const override {
    if (size > talloc_->capacity || floor_ > talloc_->capacity - size) {
      return galloc::out_of_memory("not enough space in the buffer: the graph needs " + std::to_string(size) +
                                   " bytes from offset " + std::to_string(floor_) + ", the buffer has " +
                                   std::to_string(talloc_->capacity) +
                                   " (measure the largest graph this allocator will see, and size its buffer "
                                   "with ggml_allocr_max_size)");
    }
    return std::unique_ptr<galloc::Buffer>(std::make_unique<WindowBuffer>(*this, talloc_->base + floor_, size));
  }
  [[nodiscard]] ggml_tallocr* talloc() const { return talloc_; }
  [[nodiscard]] Bytes floor() const { return floor_; }

 private:
  ggml_tallocr* talloc_;
  Bytes floor_;
  const Converted* tensors_;
};

galloc::GraphAllocatorOptions options_2023() {
  galloc::GraphAllocatorOptions options;
  auto strategy = strategy_from_env();
  if (!strategy) log_error("ggml_gallocr_new", strategy.status().message());
  options.placement.strategy = strategy ? *strategy : galloc::Strategy::kBest;
  return options;
}

}  // namespace

struct ggml_gallocr {
  std::vector<int> parse_seq;
  Converted current;
  // The GraphAllocator of the last alloc, for the same allocators and floors: a graph that
  // fits its reservation is placed again without planning.
  std::vector<std::unique_ptr<WindowType>> types;
  std::vector<std::pair<std::uint64_t, Bytes>> key;  // per buffer id: allocator serial, floor
  std::unique_ptr<galloc::GraphAllocator> allocator;
  std::string dump_dir;
  int dumps = 0;
};

namespace {

// GALLOC_DUMP=DIR: every graph planned again, as a galloc graph file.
void dump_2023(ggml_gallocr* galloc, const galloc::BufferAssignment& assignment) {
  if (galloc->dump_dir.empty()) return;
  std::vector<const galloc::BufferType*> types;
  std::vector<int> type_of_id;
  for (const auto& type : galloc->types) {
    type_of_id.push_back(static_cast<int>(types.size()));
    types.push_back(type.get());
  }
  dump_graph_file(galloc->dump_dir, "2023", galloc->current.graph, types, std::move(type_of_id), assignment,
                  galloc->dumps, "ggml_allocr_alloc_graph");
}

// The graph as alloc_graph walks it: with a parse order, its nodes in that order (barriers
// dropped) and the groups between barriers.
struct OrderedGraph {
  ggml_cgraph graph{};
  std::vector<ggml_tensor*> nodes;
  std::vector<std::int32_t> groups;
};

galloc::Status order_graph(const std::vector<int>& parse_seq, ggml_cgraph* cgraph, OrderedGraph& out) {
  out.graph = *cgraph;
  out.groups.clear();
  if (parse_seq.empty()) return galloc::Status::ok();
  out.nodes.clear();
  std::int32_t group = 0;
  for (int index : parse_seq) {
    if (index == -1) {
      ++group;
      continue;
    }
    if (index < 0 || index >= cgraph->n_nodes) {
      return galloc::invalid_argument("the parse order names node " + std::to_string(index) + "; the graph has " +
                                      std::to_string(cgraph->n_nodes) + " nodes");
    }
    out.nodes.push_back(cgraph->nodes[index]);
    out.groups.push_back(group);
  }
  out.graph.nodes = out.nodes.data();
  out.graph.n_nodes = static_cast<int>(out.nodes.size());
  return galloc::Status::ok();
}

// Places the converted graph's tensors at the planned addresses, as the 2023 allocator
// initialises them: the allocator's buffer, ggml_backend_buffer_init_tensor unless measuring,
// views at their source's address plus offset. Inputs allocated before the graph get their
// bytes back at the new address.
class Place2023 final : public galloc::AllocSink {
 public:
  // tallocs: per buffer id; talloc_of: per tensor id, its own allocator (views live there)
  Place2023(ggml_gallocr* galloc, const std::vector<ggml_tallocr*>& tallocs,
            const std::vector<ggml_tallocr*>& talloc_of,
            std::unordered_map<const ggml_tensor*, std::vector<std::uint8_t>>& saved)
      : galloc_(galloc), tallocs_(tallocs), talloc_of_(talloc_of), saved_(saved) {}

  galloc::Status before_reserve(galloc::Graph&) override {
    fill_details(galloc_->current);  // what only planning reads (the conversion skipped it)
    reserved_ = true;
    return galloc::Status::ok();
  }

  galloc::Status place(TensorId id, const galloc::TensorAddress* address) override {
    ggml_tensor* tensor = galloc_->current.ggml[static_cast<std::size_t>(id)];
    ggml_tallocr* talloc = talloc_of_[static_cast<std::size_t>(id)];
    if (address != nullptr) {
      talloc = tallocs_[static_cast<std::size_t>(address->buffer)];  // the plan's buffer
      tensor->data = address->data;
      tensor->buffer = talloc->buffer;
      if (!talloc->measure) {
        ggml_backend_buffer_init_tensor(talloc->buffer, tensor);
        if (auto it = saved_.find(tensor); it != saved_.end()) {
          ggml_backend_tensor_set(tensor, it->second.data(), 0, it->second.size());
        }
      }
      return galloc::Status::ok();
    }
    if (tensor->view_src == nullptr || tensor->buffer != nullptr) return galloc::Status::ok();
    if (tensor->view_src->data == nullptr) {
      return galloc::invalid_argument(std::string("view ") + tensor->name + " of " + tensor->view_src->name +
                                      ", which has no memory");
    }
    // views live in the allocator's buffer rather than their source's, as in the 2023 allocator
    tensor->backend = tensor->view_src->backend;
    tensor->data = static_cast<char*>(tensor->view_src->data) + tensor->view_offs;
    tensor->buffer = talloc != nullptr ? talloc->buffer : tensor->view_src->buffer;
    if (talloc != nullptr && !talloc->measure) ggml_backend_buffer_init_tensor(tensor->buffer, tensor);
    return galloc::Status::ok();
  }

  [[nodiscard]] bool reserved() const { return reserved_; }

 private:
  ggml_gallocr* galloc_;
  const std::vector<ggml_tallocr*>& tallocs_;
  const std::vector<ggml_tallocr*>& talloc_of_;
  std::unordered_map<const ggml_tensor*, std::vector<std::uint8_t>>& saved_;
  bool reserved_ = false;
};

// The allocators of a graph's tensors, in order of first use (one buffer id each), and the
// buffer id of each node and leaf. `talloc_for` gives the allocator of a ggml tensor.
struct GraphAllocators {
  std::vector<ggml_tallocr*> tallocs;  // per buffer id
  std::vector<BufferId> node_ids;
  std::vector<BufferId> leaf_ids;
};

template <typename TallocFor>
galloc::Status allocators_of(const ggml_cgraph& graph, TallocFor& talloc_for, GraphAllocators& out) {
  auto id_of = [&](ggml_tallocr* talloc) {
    const auto it = std::find(out.tallocs.begin(), out.tallocs.end(), talloc);
    if (it != out.tallocs.end()) return static_cast<BufferId>(it - out.tallocs.begin());
    out.tallocs.push_back(talloc);
    return static_cast<BufferId>(out.tallocs.size() - 1);
  };
  for (int i = 0; i < graph.n_nodes; ++i) {
    ggml_tallocr* talloc = talloc_for(graph.nodes[i]);
    if (talloc == nullptr)
      return galloc::invalid_argument(std::string("node ") + graph.nodes[i]->name + " has no allocator");
    out.node_ids.push_back(id_of(talloc));
  }
  for (int i = 0; i < graph.n_leafs; ++i) {
    ggml_tallocr* talloc = talloc_for(graph.leafs[i]);
    out.leaf_ids.push_back(talloc != nullptr ? id_of(talloc) : 0);
  }
  return galloc::Status::ok();
}

// The tensors allocated before the graph that the graph reads, planned with it: they leave
// their allocators' held blocks, their bytes saved (unless measuring). Unless the graph was
// placed (commit), the destructor allocates those not yet placed again, after what their
// allocators hold, with their bytes.
class InputsTakenAlong {
 public:
  using SavedBytes = std::unordered_map<const ggml_tensor*, std::vector<std::uint8_t>>;

  explicit InputsTakenAlong(const std::vector<ggml_tallocr*>& tallocs) {
    for (ggml_tallocr* talloc : tallocs) {
      for (const HeldBlock& block : talloc->held) {
        if (block.tensor != nullptr) pinned_.emplace(block.tensor, talloc);
      }
    }
  }
  InputsTakenAlong(const InputsTakenAlong&) = delete;
  InputsTakenAlong& operator=(const InputsTakenAlong&) = delete;
  ~InputsTakenAlong() {
    if (!committed_) restore();
  }

  // Takes what the graph's leafs and nodes are, and what the nodes read.
  void take_all(const ggml_cgraph& graph) {
    for (int i = 0; i < graph.n_leafs; ++i) take(graph.leafs[i]);
    for (int i = 0; i < graph.n_nodes; ++i) {
      ggml_tensor* node = graph.nodes[i];
      take(node);
      for (int s = 0; s < GGML_MAX_SRC; ++s) {
        if (node->src[s] != nullptr) take(node->src[s]);
      }
    }
  }
  void commit() { committed_ = true; }
  [[nodiscard]] const std::vector<ggml_tensor*>& taken() const { return taken_; }
  [[nodiscard]] SavedBytes& saved() { return saved_; }

 private:
  void take(ggml_tensor* t) {
    auto it = pinned_.find(t);
    if (it == pinned_.end() || t->data == nullptr) return;
    if (!it->second->measure) {
      std::vector<std::uint8_t>& bytes = saved_[t];
      bytes.resize(ggml_nbytes(t));
      ggml_backend_tensor_get(t, bytes.data(), 0, bytes.size());
    }
    auto& held = it->second->held;
    const auto block = std::find_if(held.begin(), held.end(), [&](const HeldBlock& b) { return b.tensor == t; });
    taken_from_.emplace_back(it->second, *block);
    held.erase(block);
    t->data = nullptr;
    t->buffer = nullptr;
    taken_.push_back(t);
  }

  void restore() {
    for (auto& [talloc, block] : taken_from_) {
      ggml_tensor* t = block.tensor;
      if (t->data != nullptr) continue;  // placed before the failure
      const Bytes offset = next_free_offset(*talloc);
      const Bytes size = block.end - block.begin;
      if (offset > talloc->capacity || size > talloc->capacity - offset) continue;  // stays unallocated
      t->data = talloc->base + offset;
      t->buffer = talloc->buffer;
      talloc->held.push_back({t, offset, offset + size});
      if (talloc->measure) continue;
      ggml_backend_buffer_init_tensor(talloc->buffer, t);
      if (auto it = saved_.find(t); it != saved_.end())
        ggml_backend_tensor_set(t, it->second.data(), 0, it->second.size());
    }
  }

  std::unordered_map<const ggml_tensor*, ggml_tallocr*> pinned_;  // what the allocators held
  SavedBytes saved_;
  std::vector<ggml_tensor*> taken_;
  std::vector<std::pair<ggml_tallocr*, HeldBlock>> taken_from_;
  bool committed_ = false;
};

// The ordered graph as galloc's, with the 2023 allocator's rules; what was taken along is an
// input (allocated first, freed after its last reader). Names and shapes are left for when the
// graph is planned again (Place2023::before_reserve).
galloc::Status convert_2023(ggml_gallocr* galloc, OrderedGraph& ordered, const std::vector<ggml_tensor*>& taken) {
  GALLOC_RETURN_IF_ERROR(convert_graph(&ordered.graph, galloc->current, Details::kSkip));
  galloc::Graph& graph = galloc->current.graph;
  graph.node_groups = ordered.groups;
  // the 2023 in-place rules: only sources its own allocator holds, also through a view
  graph.inplace_across_buffers = false;
  graph.inplace_through_views = true;
  for (ggml_tensor* t : taken) {
    const TensorId id = galloc->current.ids.at(t);
    if (id != galloc::kNoTensor) graph[id].flags |= galloc::kFlagInput;
  }
  return galloc::Status::ok();
}

// Per buffer id, where the graph's memory starts in its allocator: after what it holds. The
// allocator's GraphAllocator is made again when the allocators or these floors changed.
std::vector<Bytes> graph_floors(ggml_gallocr* galloc, const std::vector<ggml_tallocr*>& tallocs) {
  std::vector<std::pair<std::uint64_t, Bytes>> key;
  std::vector<Bytes> floors;
  for (ggml_tallocr* talloc : tallocs) {
    floors.push_back(next_free_offset(*talloc));
    key.emplace_back(talloc->serial, floors.back());
  }
  if (galloc->allocator == nullptr || key != galloc->key) {
    galloc->allocator.reset();
    galloc->types.clear();
    std::vector<const galloc::BufferType*> types;
    for (std::size_t i = 0; i < tallocs.size(); ++i) {
      galloc->types.push_back(std::make_unique<WindowType>(tallocs[i], floors[i], &galloc->current));
      types.push_back(galloc->types.back().get());
    }
    galloc->allocator = std::make_unique<galloc::GraphAllocator>(std::move(types), options_2023());
    galloc->key = std::move(key);
  }
  return floors;
}

// alloc_graph and alloc_graph_n: `talloc_for` gives the allocator of a ggml tensor.
template <typename TallocFor>
galloc::Status alloc_graph_2023(ggml_gallocr* galloc, ggml_cgraph* cgraph, TallocFor&& talloc_for) {
  if (galloc == nullptr) return galloc::invalid_argument("the graph allocator is NULL");
  if (cgraph == nullptr) return galloc::invalid_argument("the graph is NULL");
  OrderedGraph ordered;
  GALLOC_RETURN_IF_ERROR(order_graph(galloc->parse_seq, cgraph, ordered));
  GraphAllocators allocators;
  GALLOC_RETURN_IF_ERROR(allocators_of(ordered.graph, talloc_for, allocators));
  const std::vector<ggml_tallocr*>& tallocs = allocators.tallocs;
  if (tallocs.empty()) return galloc::Status::ok();  // nothing to place

  InputsTakenAlong inputs(tallocs);
  inputs.take_all(ordered.graph);
  for (ggml_tallocr* talloc : tallocs) pack_held_tensors(*talloc);
  GALLOC_RETURN_IF_ERROR(convert_2023(galloc, ordered, inputs.taken()));
  const std::vector<Bytes> floors = graph_floors(galloc, tallocs);

  galloc::Graph& graph = galloc->current.graph;
  std::vector<ggml_tallocr*> talloc_of(galloc->current.ggml.size(), nullptr);
  for (std::size_t i = 0; i < talloc_of.size(); ++i) talloc_of[i] = talloc_for(galloc->current.ggml[i]);
  galloc::BufferAssignment assignment;
  if (tallocs.size() > 1) assignment = {allocators.node_ids, allocators.leaf_ids};
  Place2023 place(galloc, tallocs, talloc_of, inputs.saved());
  bool reserved = false;
  if (tallocs.size() > 1 && galloc->allocator->needs_reserve(graph)) {
    fill_details(galloc->current);
    GALLOC_RETURN_IF_ERROR(galloc->allocator->reserve(graph, assignment));
    reserved = true;
  }
  const galloc::Status placed = galloc->allocator->alloc(graph, place);
  if (reserved || place.reserved()) dump_2023(galloc, assignment);
  GALLOC_RETURN_IF_ERROR(placed);
  inputs.commit();

  // each allocator holds the graph's memory, above its floor, until its next reset
  for (std::size_t i = 0; i < tallocs.size(); ++i) {
    ggml_tallocr* talloc = tallocs[i];
    auto size = galloc->allocator->buffer_size(static_cast<BufferId>(i));
    const Bytes end = floors[i] + (size ? *size : 0);
    talloc->held.push_back({nullptr, floors[i], end});
    talloc->max_size = std::max(talloc->max_size, end);
  }
  return galloc::Status::ok();
}

}  // namespace

extern "C" {

// ------------------------------------------------------------------ ggml_tallocr

ggml_tallocr_t ggml_tallocr_new(void* data, size_t size, size_t alignment) {
  try {
    if (!galloc::is_power_of_two(alignment)) {
      log_error(__func__, "alignment " + std::to_string(alignment) + " is not a power of two");
      return nullptr;
    }
    return new_tallocr(ggml_backend_cpu_buffer_from_ptr(data, size), true, false, alignment);
  } catch (...) {
    log_exception(__func__);
    return nullptr;
  }
}

ggml_tallocr_t ggml_tallocr_new_measure(size_t alignment) {
  try {
    if (!galloc::is_power_of_two(alignment)) {
      log_error(__func__, "alignment " + std::to_string(alignment) + " is not a power of two");
      return nullptr;
    }
    // no memory: addresses from a made-up base, as the 2023 allocator hands out
    void* fake_base = reinterpret_cast<void*>(std::uintptr_t{0x1000});
    return new_tallocr(ggml_backend_cpu_buffer_from_ptr(fake_base, SIZE_MAX / 2), true, true, alignment);
  } catch (...) {
    log_exception(__func__);
    return nullptr;
  }
}

ggml_tallocr_t ggml_tallocr_new_from_buffer(struct ggml_backend_buffer* buffer) {
  try {
    if (buffer == nullptr) {
      log_error(__func__, "the buffer is NULL");
      return nullptr;
    }
    return new_tallocr(buffer, false, false, ggml_backend_buffer_get_alignment(buffer));
  } catch (...) {
    log_exception(__func__);
    return nullptr;
  }
}

ggml_tallocr_t ggml_tallocr_new_from_buft(struct ggml_backend_buffer_type* buft, size_t size) {
  ggml_backend_buffer_t buffer = ggml_backend_buft_alloc_buffer(buft, size);
  if (buffer == nullptr) {
    log_error(__func__, "failed to allocate a buffer of " + std::to_string(size) + " bytes");
    return nullptr;
  }
  ggml_tallocr_t talloc = ggml_tallocr_new_from_buffer(buffer);
  if (talloc == nullptr) {
    ggml_backend_buffer_free(buffer);
    return nullptr;
  }
  talloc->buffer_owned = true;
  return talloc;
}

ggml_tallocr_t ggml_tallocr_new_from_backend(struct ggml_backend* backend, size_t size) {
  return ggml_tallocr_new_from_buft(ggml_backend_get_default_buffer_type(backend), size);
}

ggml_tallocr_t ggml_tallocr_new_measure_from_buft(struct ggml_backend_buffer_type* buft) {
  // a one-byte buffer of the type, so that ggml_backend_buffer_get_alloc_size asks the device
  ggml_tallocr_t talloc = ggml_tallocr_new_from_buft(buft, 1);
  if (talloc == nullptr) return nullptr;
  talloc->measure = true;
  talloc->capacity = SIZE_MAX / 2;
  return talloc;
}

ggml_tallocr_t ggml_tallocr_new_measure_from_backend(struct ggml_backend* backend) {
  return ggml_tallocr_new_measure_from_buft(ggml_backend_get_default_buffer_type(backend));
}

struct ggml_backend_buffer* ggml_tallocr_get_buffer(ggml_tallocr_t talloc) {
  return talloc != nullptr ? talloc->buffer : nullptr;
}

void ggml_tallocr_free(ggml_tallocr_t talloc) {
  if (talloc == nullptr) return;
  if (talloc->buffer_owned) ggml_backend_buffer_free(talloc->buffer);
  delete talloc;
}

bool ggml_tallocr_is_measure(ggml_tallocr_t talloc) { return talloc != nullptr && talloc->measure; }

void ggml_tallocr_reset(ggml_tallocr_t talloc) {
  if (talloc == nullptr) return;
  talloc->held.clear();
  if (!talloc->measure) ggml_backend_buffer_reset(talloc->buffer);
}

void ggml_tallocr_alloc(ggml_tallocr_t talloc, struct ggml_tensor* tensor) {
  try {
    if (talloc == nullptr || tensor == nullptr) {
      log_error(__func__, "the allocator or the tensor is NULL");
      return;
    }
    if (tensor->view_src != nullptr || tensor->data != nullptr) {
      log_error(__func__,
                "tensor '" + std::string(tensor->name) + "'" +
                    (tensor->view_src != nullptr ? " is a view; it takes its source's memory" : " already has memory"));
      return;
    }
    const Bytes size = galloc::align_up(ggml_backend_buffer_get_alloc_size(talloc->buffer, tensor), talloc->alignment);
    const Bytes offset = next_free_offset(*talloc);
    if (size > talloc->capacity || offset > talloc->capacity - size) {
      log_error(__func__, "not enough space in the buffer for tensor '" + std::string(tensor->name) + "' (needed " +
                              std::to_string(size) + " bytes at offset " + std::to_string(offset) + ", buffer size " +
                              std::to_string(talloc->capacity) + "); it stays unallocated");
      return;
    }
    talloc->held.push_back({tensor, offset, offset + size});
    tensor->data = talloc->base + offset;
    tensor->buffer = talloc->buffer;
    if (!talloc->measure) ggml_backend_buffer_init_tensor(talloc->buffer, tensor);
    talloc->max_size = std::max(talloc->max_size, offset + size);
  } catch (...) {
    log_exception(__func__);
  }
}

size_t ggml_tallocr_max_size(ggml_tallocr_t talloc) { return talloc != nullptr ? talloc->max_size : 0; }

// ------------------------------------------------------------------ ggml_gallocr

ggml_gallocr_t ggml_gallocr_new(void) {
  try {
    auto galloc = std::make_unique<ggml_gallocr>();
    galloc->dump_dir = dump_dir_from_env();
    // once per process, so that a log shows that galloc is in, and which strategy
    static std::atomic<bool> announced{false};
    if (!announced.exchange(true)) {
      const auto strategy = strategy_from_env();
      std::fprintf(stderr, "ggml_gallocr_new: using galloc %s (GALLOC_STRATEGY=%s)\n", kGallocRevision,
                   std::string(galloc::strategy_name(strategy ? *strategy : galloc::Strategy::kBest)).c_str());
    }
    return galloc.release();
  } catch (...) {
    log_exception(__func__);
    return nullptr;
  }
}

void ggml_gallocr_free(ggml_gallocr_t galloc) { delete galloc; }

void ggml_gallocr_set_parse_seq(ggml_gallocr_t galloc, const int* list, int n) {
  if (galloc == nullptr) return;
  try {
    galloc->parse_seq.assign(list, list + std::max(n, 0));
  } catch (...) {
    log_exception(__func__);
  }
}

size_t ggml_gallocr_alloc_graph(ggml_gallocr_t galloc, ggml_tallocr_t talloc, struct ggml_cgraph* graph) {
  try {
    if (talloc == nullptr) {
      log_error(__func__, "the tensor allocator is NULL");
      return 0;
    }
    if (galloc::Status s = alloc_graph_2023(galloc, graph, [talloc](const ggml_tensor*) { return talloc; }); !s) {
      log_error(__func__, s);
    }
    return talloc->max_size;
  } catch (...) {
    log_exception(__func__);
    return 0;
  }
}

void ggml_gallocr_alloc_graph_n(ggml_gallocr_t galloc, struct ggml_cgraph* graph, struct ggml_hash_set hash_set,
                                ggml_tallocr_t* hash_node_talloc) {
  try {
    if (graph != nullptr && hash_set.size < static_cast<size_t>(graph->n_nodes + graph->n_leafs)) {
      log_error(__func__, "the hash set has " + std::to_string(hash_set.size) + " slots for " +
                              std::to_string(graph->n_nodes + graph->n_leafs) + " tensors");
      return;
    }
    auto talloc_for = [&](const ggml_tensor* t) -> ggml_tallocr* {
      const size_t slot = ggml_hash_find_or_insert(hash_set, const_cast<ggml_tensor*>(t));
      return slot < hash_set.size ? hash_node_talloc[slot] : nullptr;
    };
    if (galloc::Status s = alloc_graph_2023(galloc, graph, talloc_for); !s) log_error(__func__, s);
  } catch (...) {
    log_exception(__func__);
  }
}

// ------------------------------------------------------------------ ggml_allocr: a tensor and a graph allocator

struct ggml_allocr {
  ggml_tallocr_t talloc;
  ggml_gallocr_t galloc;
};

}  // extern "C"

namespace {

ggml_allocr_t new_allocr(ggml_tallocr_t talloc) {
  if (talloc == nullptr) return nullptr;
  ggml_gallocr_t galloc = ggml_gallocr_new();
  if (galloc == nullptr) {
    ggml_tallocr_free(talloc);
    return nullptr;
  }
  auto* alloc = new (std::nothrow) ggml_allocr{talloc, galloc};
  if (alloc == nullptr) {
    log_error("ggml_allocr_new", "out of memory");
    ggml_gallocr_free(galloc);
    ggml_tallocr_free(talloc);
  }
  return alloc;
}

}  // namespace

extern "C" {

ggml_allocr_t ggml_allocr_new(void* data, size_t size, size_t alignment) {
  return new_allocr(ggml_tallocr_new(data, size, alignment));
}

ggml_allocr_t ggml_allocr_new_measure(size_t alignment) { return new_allocr(ggml_tallocr_new_measure(alignment)); }

ggml_allocr_t ggml_allocr_new_from_buffer(struct ggml_backend_buffer* buffer) {
  return new_allocr(ggml_tallocr_new_from_buffer(buffer));
}

ggml_allocr_t ggml_allocr_new_from_backend(struct ggml_backend* backend, size_t size) {
  return new_allocr(ggml_tallocr_new_from_backend(backend, size));
}

ggml_allocr_t ggml_allocr_new_measure_from_backend(struct ggml_backend* backend) {
  return new_allocr(ggml_tallocr_new_measure_from_backend(backend));
}

struct ggml_backend_buffer* ggml_allocr_get_buffer(ggml_allocr_t alloc) {
  return alloc != nullptr ? ggml_tallocr_get_buffer(alloc->talloc) : nullptr;
}

void ggml_allocr_set_parse_seq(ggml_allocr_t alloc, const int* list, int n) {
  if (alloc != nullptr) ggml_gallocr_set_parse_seq(alloc->galloc, list, n);
}

void ggml_allocr_free(ggml_allocr_t alloc) {
  if (alloc == nullptr) return;
  ggml_gallocr_free(alloc->galloc);
  ggml_tallocr_free(alloc->talloc);
  delete alloc;
}

bool ggml_allocr_is_measure(ggml_allocr_t alloc) { return alloc != nullptr && ggml_tallocr_is_measure(alloc->talloc); }

void ggml_allocr_reset(ggml_allocr_t alloc) {
  if (alloc != nullptr) ggml_tallocr_reset(alloc->talloc);
}

void ggml_allocr_alloc(ggml_allocr_t alloc, struct ggml_tensor* tensor) {
  ggml_tallocr_alloc(alloc != nullptr ? alloc->talloc : nullptr, tensor);
}

size_t ggml_allocr_max_size(ggml_allocr_t alloc) { return alloc != nullptr ? ggml_tallocr_max_size(alloc->talloc) : 0; }

size_t ggml_allocr_alloc_graph(ggml_allocr_t alloc, struct ggml_cgraph* graph) {
  if (alloc == nullptr) {
    log_error(__func__, "the allocator is NULL");
    return 0;
  }
  return ggml_gallocr_alloc_graph(alloc->galloc, alloc->talloc, graph);
}

// ------------------------------------------------------------------ a context's tensors in one buffer

ggml_backend_buffer_t ggml_backend_alloc_ctx_tensors_from_buft(struct ggml_context* ctx,
                                                               ggml_backend_buffer_type_t buft) {
  try {
    if (ctx == nullptr || !ggml_get_no_alloc(ctx)) {
      log_error(__func__, "the context must be created with no_alloc = true");
      return nullptr;
    }
    const Bytes alignment = ggml_backend_buft_get_alignment(buft);
    Bytes total = 0;
    for (ggml_tensor* t = ggml_get_first_tensor(ctx); t != nullptr; t = ggml_get_next_tensor(ctx, t)) {
      if (t->data == nullptr && t->view_src == nullptr)
        total += galloc::align_up(ggml_backend_buft_get_alloc_size(buft, t), alignment);
    }
    if (total == 0) return nullptr;  // everything has memory already
    ggml_backend_buffer_t buffer = ggml_backend_buft_alloc_buffer(buft, total);
    if (buffer == nullptr) {
      log_error(__func__, "failed to allocate a buffer of " + std::to_string(total) + " bytes");
      return nullptr;
    }
    std::unique_ptr<ggml_tallocr, void (*)(ggml_tallocr_t)> talloc(ggml_tallocr_new_from_buffer(buffer),
                                                                   ggml_tallocr_free);
    if (talloc == nullptr) {
      ggml_backend_buffer_free(buffer);
      return nullptr;
    }
    for (ggml_tensor* t = ggml_get_first_tensor(ctx); t != nullptr; t = ggml_get_next_tensor(ctx, t)) {
      if (t->data == nullptr && t->view_src == nullptr) {
        ggml_tallocr_alloc(talloc.get(), t);
      } else if (t->view_src != nullptr && t->buffer == nullptr && t->view_src->buffer != nullptr) {
        ggml_backend_view_init(buffer, t);
      }
    }
    return buffer;
  } catch (...) {
    log_exception(__func__);
    return nullptr;
  }
}

ggml_backend_buffer_t ggml_backend_alloc_ctx_tensors(struct ggml_context* ctx, struct ggml_backend* backend) {
  return ggml_backend_alloc_ctx_tensors_from_buft(ctx, ggml_backend_get_default_buffer_type(backend));
}

}  // extern "C"

#endif  // GALLOC_GGML_2023_API
