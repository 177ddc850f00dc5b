// The drop-in for ggml-alloc.h from late 2024 on (whisper.rn 0.4.0-rc.10's ggml to current
// upstream): ggml_gallocr with buffer types and buffer ids, ggml_tallocr, and a context's
// tensors in buffers. The API generations within it differ in a few signatures and
// declarations, each detected from ggml's headers at compile time (api_generations.hpp).
// ggml-alloc-2023.cpp is the drop-in for the 2023 API; amalgamate.sh puts both, after
// ggml-alloc-shared.cpp, into one file, and the preprocessor keeps the one this ggml needs.

#include "ggml-alloc.h"
#include "ggml-backend-impl.h"
#include "ggml-backend.h"
#include "ggml-impl.h"
#include "ggml.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "galloc/buffer.hpp"
#include "galloc/graph.hpp"
#include "galloc/graph_allocator.hpp"
#include "galloc/linear_allocator.hpp"
#include "galloc/placement.hpp"
#include "galloc/shared_arena.hpp"
#include "galloc/status.hpp"

#include "api_generations.hpp"
#include "cgraph_conversion.hpp"
#include "dropin_env.hpp"
#include "galloc-ggml.h"
#include "ggml-alloc-shared.hpp"

#if !GALLOC_GGML_2023_API

namespace {

// ------------------------------------------------------------------ ggml's status

ggml_status tensor_alloc(ggml_backend_buffer_t buffer, ggml_tensor* tensor, void* addr) {
  return status_of([&] { return ggml_backend_tensor_alloc(buffer, tensor, addr); });
}

ggml_status view_init(ggml_tensor* tensor) {
  return status_of([&] { return ggml_backend_view_init(tensor); });
}

// ------------------------------------------------------------------ buffer types

// The handles of a shared arena's freed chunks. A chunk's memory goes when the arena frees it,
// but its ggml handle stays, emptied, until the arena goes: other members' tensors name it as
// their buffer until their next alloc places them again, and ggml's scheduler reads a
// tensor's buffer type before the allocator runs. They also tell an alloc that would read
// another member's tensor in memory that is gone (InitTensors::place).
struct ReleasedHandles {
  std::mutex mutex;  // for handles: chunks go under the arena's lock, readers take only this
  std::vector<ggml_backend_buffer_t> handles;
  std::size_t chunks = 0;  // allocated so far: `handles` has room for as many
  ReleasedHandles() = default;
  ReleasedHandles(const ReleasedHandles&) = delete;
  ReleasedHandles& operator=(const ReleasedHandles&) = delete;
  ~ReleasedHandles() {
    for (ggml_backend_buffer_t handle : handles) ggml_backend_buffer_free(handle);
  }
};

// A ggml backend buffer as a galloc buffer; it frees the ggml buffer unless released, or, with
// `released`, frees its memory and keeps the handle there.
class GgmlBuffer final : public galloc::Buffer {
 public:
  GgmlBuffer(const galloc::BufferType& type, ggml_backend_buffer_t buffer, ReleasedHandles* released = nullptr)
      : type_(type), buffer_(buffer), released_(released) {}
  ~GgmlBuffer() override {
    if (buffer_ == nullptr) return;
    if (released_ == nullptr) {
      ggml_backend_buffer_free(buffer_);
      return;
    }
    if (buffer_->iface.free_buffer != nullptr) buffer_->iface.free_buffer(buffer_);
    buffer_->iface = ggml_backend_buffer_i{};
    buffer_->context = nullptr;
    buffer_->size = 0;  // no base, no memory
    std::lock_guard lock(released_->mutex);
    released_->handles.push_back(buffer_);  // within the room allocate made: no allocation here
  }
  GgmlBuffer(const GgmlBuffer&) = delete;
  GgmlBuffer& operator=(const GgmlBuffer&) = delete;

  std::byte* base() override { return static_cast<std::byte*>(ggml_backend_buffer_get_base(buffer_)); }
  void reset() override { ggml_backend_buffer_reset(buffer_); }
  // Host memory only: checked mode's poison is not worth a device transfer.
  bool fill(galloc::Offset offset, Bytes size, std::byte value) override {
    if (!ggml_backend_buffer_is_host(buffer_) || !within(offset, size)) return false;
    std::memset(base() + offset, std::to_integer<int>(value), static_cast<std::size_t>(size));
    return true;
  }
  // A device buffer (an RPC server's, a GPU's) is read and written through its backend, as
  // ggml_backend_tensor_get/set do, so that a shared arena moves what another member reads
  // instead of keeping a second chunk. Like host memory, it is read after the writer's graph
  // has finished: the next member's alloc follows it.
  bool read(galloc::Offset offset, Bytes size, void* out) override {
    if (!within(offset, size)) return false;
    if (ggml_backend_buffer_is_host(buffer_)) {
      std::memcpy(out, base() + offset, static_cast<std::size_t>(size));
      return true;
    }
    if (buffer_->iface.get_tensor == nullptr) return false;
    if (size == 0) return true;
    ggml_tensor bytes;
    byte_tensor(bytes, offset, size);
    buffer_->iface.get_tensor(buffer_, &bytes, out, 0, static_cast<std::size_t>(size));
    return true;
  }
  bool write(galloc::Offset offset, Bytes size, const void* in) override {
    if (!within(offset, size)) return false;
    if (ggml_backend_buffer_is_host(buffer_)) {
      std::memcpy(base() + offset, in, static_cast<std::size_t>(size));
      return true;
    }
    if (buffer_->iface.set_tensor == nullptr) return false;
    if (size == 0) return true;
    ggml_tensor bytes;
    byte_tensor(bytes, offset, size);
    buffer_->iface.set_tensor(buffer_, &bytes, in, 0, static_cast<std::size_t>(size));
    return true;
  }
  [[nodiscard]] Bytes size() const override { return ggml_backend_buffer_get_size(buffer_); }
  [[nodiscard]] const galloc::BufferType& type() const override { return type_; }

  [[nodiscard]] ggml_backend_buffer_t handle() const { return buffer_; }
  ggml_backend_buffer_t release() { return std::exchange(buffer_, nullptr); }

 private:
  [[nodiscard]] bool within(galloc::Offset offset, Bytes size) const {
    return offset <= this->size() && size <= this->size() - offset;
  }
  // `size` bytes at `offset` as a tensor of the buffer, for its get_tensor and set_tensor;
  // filled in place, as a copy would touch the member older ggml headers deprecate (backend)
  void byte_tensor(ggml_tensor& t, galloc::Offset offset, Bytes size) {
    std::memset(&t, 0, sizeof t);
    t.type = GGML_TYPE_I8;
    t.ne[0] = static_cast<std::int64_t>(size);
    t.ne[1] = t.ne[2] = t.ne[3] = 1;
    t.nb[0] = 1;
    t.nb[1] = t.nb[2] = t.nb[3] = static_cast<std::size_t>(size);
    t.buffer = buffer_;
    t.data = base() + offset;
  }

  const galloc::BufferType& type_;
  ggml_backend_buffer_t buffer_;
  ReleasedHandles* released_;
};

ggml_backend_buffer_t handle_of(galloc::Buffer* buffer) { return static_cast<GgmlBuffer*>(buffer)->handle(); }

// A ggml buffer type as a galloc buffer type. alloc_size asks ggml about the ggml tensor
// behind the galloc tensor (devices pad by op and type), found through `tensors`.
class GgmlBufferType final : public galloc::BufferType {
 public:
  GgmlBufferType(ggml_backend_buffer_type_t buft, const Converted* tensors, bool compute_usage,
                 ReleasedHandles* released = nullptr)
      : buft_(buft), tensors_(tensors), compute_usage_(compute_usage), released_(released) {}

  [[nodiscard]] std::string name() const override {
    const char* n = ggml_backend_buft_name(buft_);
    return n != nullptr ? n : "?";
  }
  [[nodiscard]] Bytes alignment() const override { return ggml_backend_buft_get_alignment(buft_); }
  // Capped at SIZE_MAX / 2 (PTRDIFF_MAX) as ggml-alloc.c caps its chunks: one allocation gets
  // no more, and on 32-bit ABIs a CPU buffer type's SIZE_MAX would otherwise plan 4 GiB chunks.
  [[nodiscard]] Bytes max_size() const override {
    return std::min<Bytes>(ggml_backend_buft_get_max_size(buft_), SIZE_MAX / 2);
  }
  [[nodiscard]] Bytes alloc_size(const galloc::Tensor& tensor) const override {
    if (ggml_tensor* t = tensors_ != nullptr ? tensors_->ggml_of(tensor) : nullptr) {
      return ggml_backend_buft_get_alloc_size(buft_, t);
    }
    // Not one of the converted tensors (galloc never does this today): ask about a stand-in.
    ggml_tensor stand_in{};
    stand_in.type = static_cast<ggml_type>(tensor.type);
    for (int d = 0; d < GGML_MAX_DIMS; ++d) {
      stand_in.ne[d] = tensor.ne[static_cast<std::size_t>(d)];
      stand_in.nb[d] = static_cast<std::size_t>(tensor.nb[static_cast<std::size_t>(d)]);
    }
    return ggml_backend_buft_get_alloc_size(buft_, &stand_in);
  }
  [[nodiscard]] galloc::Result<std::unique_ptr<galloc::Buffer>> allocate(Bytes size) const override {
    if (released_ != nullptr) {
      std::lock_guard lock(released_->mutex);
      released_->handles.reserve(released_->chunks + 1);
    }
    ggml_backend_buffer_t buffer = ggml_backend_buft_alloc_buffer(buft_, static_cast<std::size_t>(size));
    if (buffer == nullptr) {
      return galloc::out_of_memory("failed to allocate " + name() + " buffer of size " + std::to_string(size));
    }
    if (compute_usage_) ggml_backend_buffer_set_usage(buffer, GGML_BACKEND_BUFFER_USAGE_COMPUTE);
    try {
      auto chunk = std::unique_ptr<galloc::Buffer>(std::make_unique<GgmlBuffer>(*this, buffer, released_));
      if (released_ != nullptr) ++released_->chunks;
      return chunk;
    } catch (...) {
      ggml_backend_buffer_free(buffer);
      throw;
    }
  }

  [[nodiscard]] ggml_backend_buffer_type_t buft() const { return buft_; }

 private:
  ggml_backend_buffer_type_t buft_;
  const Converted* tensors_;
  bool compute_usage_;
  ReleasedHandles* released_;  // a shared arena's (its buffers' handles outlive their memory)
};

// ------------------------------------------------------------------ options from the environment

galloc::GraphAllocatorOptions options_from_env() {
  galloc::GraphAllocatorOptions options;
  auto strategy = strategy_from_env();
  if (!strategy) GGML_LOG_ERROR("ggml_gallocr_new_n: %s\n", strategy.status().message().c_str());
  options.placement.strategy = strategy ? *strategy : galloc::Strategy::kBest;
  // Once per process, so that an app's log shows that galloc is in (and which strategy).
  static std::atomic<bool> announced{false};
  if (!announced.exchange(true)) {
    GGML_LOG_INFO("ggml_gallocr_new_n: using galloc %s (GALLOC_STRATEGY=%s)\n", kGallocRevision,
                  std::string(galloc::strategy_name(options.placement.strategy)).c_str());
  }
  return options;
}

// ------------------------------------------------------------------ shared arenas

// One per share name and ggml buffer type. Its own GgmlBufferType allocates the arena's buffers
// and outlives the arena; members hold the whole through the arena's shared_ptr.
struct DropinArena {
  DropinArena(ggml_backend_buffer_type_t buft, const std::string& name)
      : type(buft, nullptr, /*compute_usage=*/true, &released), arena(type, name + "/" + type.name()) {}
  ReleasedHandles released;  // first: it goes after the arena's chunks
  GgmlBufferType type;
  galloc::SharedArena arena;
  std::atomic<std::uint64_t> logged_growths{0};  // the growth count last logged
  // share_clock's value at the last reserve or alloc of a member (galloc_ggml_share_generation)
  std::atomic<std::uint64_t> last_change{0};
};

// Counts every reserve and alloc of a shared arena's members, process-wide. An arena notes the
// count at its members' calls, so a group's largest note is new after any of them, and never
// repeats an earlier one: not even when arenas of the group go and come again.
std::atomic<std::uint64_t> share_clock{0};

// After an allocator's reserve or alloc, failed ones too (they may have taken memory over).
struct NoteArenaChange {
  const ggml_gallocr* galloc;
  ~NoteArenaChange();
};

// The process's arenas, by name and buffer type; an arena goes with its last member.
struct ArenaRegistry {
  std::mutex mutex;
  std::map<std::pair<std::string, ggml_backend_buffer_type_t>, std::weak_ptr<DropinArena>> arenas;
};

ArenaRegistry& arena_registry() {
  static ArenaRegistry registry;
  return registry;
}

// Calls visit(arena) for each arena share group `name` has now, one per buffer type, under the
// registry's lock (no copy: galloc_ggml_share_generation runs at every llama.cpp decode).
template <typename Visit>
void for_each_group_arena(const std::string& name, Visit visit) {
  ArenaRegistry& registry = arena_registry();
  std::lock_guard lock(registry.mutex);
  for (auto it = registry.arenas.lower_bound({name, nullptr}); it != registry.arenas.end() && it->first.first == name;
       ++it) {
    if (auto arena = it->second.lock()) visit(*arena);
  }
}

std::shared_ptr<DropinArena> arena_for(const std::string& name, ggml_backend_buffer_type_t buft) {
  ArenaRegistry& registry = arena_registry();
  std::lock_guard lock(registry.mutex);
  // Arenas whose last member is gone leave no entry behind (an app may name a group per state).
  for (auto it = registry.arenas.begin(); it != registry.arenas.end();) {
    it = it->second.expired() ? registry.arenas.erase(it) : std::next(it);
  }
  std::weak_ptr<DropinArena>& slot = registry.arenas[{name, buft}];
  if (auto existing = slot.lock()) return existing;
  auto arena = std::make_shared<DropinArena>(buft, name);
  arena->arena.set_checked(share_check_from_env());
  slot = arena;
  return arena;
}

// How many threads have each share group open. One name open on two threads at once is most
// likely two unrelated contexts given one name, whose members could compute at the same time.
struct OpenGroups {
  std::mutex mutex;
  std::map<std::string, int> threads;
};

OpenGroups& open_groups() {
  static OpenGroups groups;
  return groups;
}

// Counts `name` as open on one more thread; how many others have it open.
int note_group_opened(const std::string& name) {
  OpenGroups& groups = open_groups();
  std::lock_guard lock(groups.mutex);
  return groups.threads[name]++;
}

void note_group_closed(const std::string& name) noexcept {
  OpenGroups& groups = open_groups();
  std::lock_guard lock(groups.mutex);
  if (auto it = groups.threads.find(name); it != groups.threads.end() && --it->second == 0) groups.threads.erase(it);
}

// The share group open on this thread (galloc_ggml_share_begin), if any.
struct ShareScope {
  std::string name;
  bool open = false;
  ~ShareScope() {
    if (!open) return;
    GGML_LOG_ERROR("galloc_ggml_share_begin: share group '%s' was never closed on this thread\n", name.c_str());
    note_group_closed(name);
  }
};
thread_local ShareScope share_scope;

// The arena name a new allocator joins: with GALLOC_SHARE (or GALLOC_SHARE_DEFAULT) "groups"
// or "1", the thread's share group; else, with "1", "process"; else none.
std::string share_name() {
  auto mode = share_mode_from_env();
  if (!mode) {
    static std::atomic<bool> reported{false};
    if (!reported.exchange(true)) GGML_LOG_ERROR("ggml_gallocr_new_n: %s\n", mode.status().message().c_str());
  }
  const ShareMode share = mode ? *mode : ShareMode::kGroups;
  if (share == ShareMode::kNone) return "";
  if (share_scope.open) return share_scope.name;
  return share == ShareMode::kAll ? "process" : "";
}

}  // namespace

// ------------------------------------------------------------------ ggml_gallocr

struct ggml_gallocr {
  std::vector<ggml_backend_buffer_type_t> bufts;        // per buffer id
  std::vector<std::unique_ptr<GgmlBufferType>> types;   // per distinct buffer type
  Converted current;                                    // the graph being planned or allocated
  std::vector<std::shared_ptr<DropinArena>> arenas;     // the shared arenas it joined (before allocator)
  std::vector<ggml_backend_buffer_t> arena_buffers;     // their buffers at the last alloc_graph
  std::vector<ggml_backend_buffer_t> released_buffers;  // of those, the released ones
  std::vector<std::uint64_t> arena_buffer_epochs;       // per arena, when arena_buffers was made
  // Per arena, its generation after the last alloc_graph, if that graph had no tensor in the
  // arenas (empty otherwise). Only another member's alloc puts tensors there, and it changes
  // the generation: while the generations stay, a graph of the same topology has none there
  // either (a decoder, token after token), and the conversion need not search.
  std::vector<std::uint64_t> quiet_generations;
  std::unique_ptr<galloc::GraphAllocator> allocator;
  std::string dump_dir;
  int dumps = 0;
};

namespace {

NoteArenaChange::~NoteArenaChange() {
  if (galloc == nullptr || galloc->arenas.empty()) return;
  const std::uint64_t now = share_clock.fetch_add(1, std::memory_order_acq_rel) + 1;
  for (const auto& shared : galloc->arenas) shared->last_change.store(now, std::memory_order_release);
}

galloc::BufferAssignment assignment_of(const ggml_cgraph* graph, const int* node_buffer_ids,
                                       const int* leaf_buffer_ids) {
  static_assert(std::is_same_v<BufferId, int>);
  galloc::BufferAssignment assignment;
  if (node_buffer_ids != nullptr)
    assignment.node_buffer_ids = {node_buffer_ids, static_cast<std::size_t>(graph->n_nodes)};
  if (leaf_buffer_ids != nullptr)
    assignment.leaf_buffer_ids = {leaf_buffer_ids, static_cast<std::size_t>(graph->n_leafs)};
  return assignment;
}

// GALLOC_DUMP=DIR: the graph just reserved, with its buffer types and buffer ids, as a galloc
// graph file DIR/ggml-<sequence>-<allocator>-<n>.json.
void dump_graph(ggml_gallocr* galloc, galloc::BufferAssignment assignment, const char* function) {
  if (galloc->dump_dir.empty()) return;
  std::vector<const galloc::BufferType*> types;
  for (const auto& type : galloc->types) types.push_back(type.get());
  std::vector<int> type_of_id;
  for (ggml_backend_buffer_type_t buft : galloc->bufts) {
    for (std::size_t t = 0; t < galloc->types.size(); ++t) {
      if (galloc->types[t]->buft() == buft) type_of_id.push_back(static_cast<int>(t));
    }
  }
  char tag[48];  // the allocator and its own count
  std::snprintf(tag, sizeof tag, "%p-%04d", static_cast<void*>(galloc), galloc->dumps);
  dump_graph_file(galloc->dump_dir, tag, galloc->current.graph, types, std::move(type_of_id), assignment, galloc->dumps,
                  function);
}

// The buffers of the allocator's arenas now, asked again only when an arena's buffers changed.
void refresh_arena_buffers(ggml_gallocr* galloc) {
  bool changed = galloc->arena_buffer_epochs.size() != galloc->arenas.size();
  for (std::size_t i = 0; i < galloc->arenas.size() && !changed; ++i) {
    changed = galloc->arenas[i]->arena.buffers_epoch() != galloc->arena_buffer_epochs[i];
  }
  if (!changed) return;
  galloc->arena_buffers.clear();
  galloc->arena_buffer_epochs.clear();
  galloc->released_buffers.clear();
  for (const auto& shared : galloc->arenas) {
    // the epoch first: a change after it is seen at the next alloc_graph
    galloc->arena_buffer_epochs.push_back(shared->arena.buffers_epoch());
    for (const galloc::Buffer* buffer : shared->arena.buffers()) {
      galloc->arena_buffers.push_back(static_cast<const GgmlBuffer*>(buffer)->handle());
    }
    std::lock_guard lock(shared->released.mutex);
    galloc->released_buffers.insert(galloc->released_buffers.end(), shared->released.handles.begin(),
                                    shared->released.handles.end());
  }
  // the conversion places a node of this graph found there again, as in the arena's buffers
  galloc->arena_buffers.insert(galloc->arena_buffers.end(), galloc->released_buffers.begin(),
                               galloc->released_buffers.end());
}

// Whether each of the allocator's arenas is at the generation `generations` gives (none given:
// false).
bool arenas_unchanged(const ggml_gallocr* galloc, const std::vector<std::uint64_t>& generations) {
  if (generations.empty() || generations.size() != galloc->arenas.size()) return false;
  for (std::size_t i = 0; i < generations.size(); ++i) {
    if (galloc->arenas[i]->arena.generation() != generations[i]) return false;
  }
  return true;
}

// Once each time a shared arena grows: its size, so that an app's log shows what sharing holds.
void log_arena_growth(ggml_gallocr* galloc, const char* function) {
  for (const auto& shared : galloc->arenas) {
    // no lock on the way of every alloc_graph: only the allocator that swaps the count logs
    std::uint64_t logged = shared->logged_growths.load(std::memory_order_relaxed);
    const std::uint64_t growths = shared->arena.growth_count();
    if (growths == logged || !shared->logged_growths.compare_exchange_strong(logged, growths)) continue;
    GGML_LOG_INFO("%s: galloc: shared compute buffer '%s' is now %.2f MiB (%zu allocators share it)\n", function,
                  shared->arena.name().c_str(), static_cast<double>(shared->arena.size()) / (1024.0 * 1024.0),
                  shared->arena.member_count());
  }
}

bool reserve_impl(ggml_gallocr* galloc, ggml_cgraph* graph, const int* node_buffer_ids, const int* leaf_buffer_ids,
                  const char* function) {
  if (galloc == nullptr) {
    GGML_LOG_ERROR("%s: the allocator is NULL\n", function);
    return false;
  }
  const NoteArenaChange note{galloc};
  // GALLOC_DUMP's file names the tensors
  const Details details = galloc->dump_dir.empty() ? Details::kFillButNames : Details::kFill;
  // in an arena, the conversion places the allocator's own earlier tensors again
  refresh_arena_buffers(galloc);
  if (galloc::Status s = convert_graph(graph, galloc->current, details, galloc->arena_buffers); !s) {
    log_error(function, s);
    return false;
  }
  const galloc::BufferAssignment assignment = assignment_of(graph, node_buffer_ids, leaf_buffer_ids);
  galloc::Status s = galloc->allocator->reserve(galloc->current.graph, assignment);
  if (s.code() == galloc::ErrorCode::kInvalidArgument && details != Details::kFill) {
    // The graph itself is refused, before anything changed: once more with the names, so that
    // the message says which tensors it means.
    fill_details(galloc->current);
    s = galloc->allocator->reserve(galloc->current.graph, assignment);
  }
  log_arena_growth(galloc, function);
  if (!s) {
    log_error(function, s);
    return false;
  }
  dump_graph(galloc, assignment, function);
  return true;
}

// What the converted graph reads in memory a shared arena freed when it grew (a third
// allocator's reserve or alloc came between its writer's alloc and this one) fails the alloc
// rather than being computed on. The conversion placed the allocator's own tensors there
// again, so only what it found read in the arenas' buffers (released ones among them) is left.
galloc::Status check_reads_not_released(const ggml_gallocr* galloc) {
  const std::vector<ggml_backend_buffer_t>& released = galloc->released_buffers;
  if (released.empty()) return galloc::Status::ok();
  for (TensorId id : galloc->current.in_arena) {
    const ggml_tensor* tensor = galloc->current.ggml[static_cast<std::size_t>(id)];
    if (std::find(released.begin(), released.end(), memory_buffer(tensor)) == released.end()) continue;
    return galloc::failed_precondition(
        std::string("tensor '") + tensor->name + "'" +
        (tensor->view_src != nullptr ? std::string(" (a view of '") + tensor->view_src->name + "')" : "") +
        " lies in memory that the shared compute buffer freed when it grew: a reserve or alloc of another "
        "allocator came between its writer's alloc and this one. Allocate its writer's graph again first");
  }
  return galloc::Status::ok();
}

// ggml_gallocr_init_tensor, on the addresses of GraphAllocator::alloc: views take their
// address from their source's buffer, tensors without memory get the planned one.
class InitTensors final : public galloc::AllocSink {
 public:
  explicit InitTensors(ggml_gallocr* galloc) : galloc_(galloc) {}

  galloc::Status before_reserve(galloc::Graph& graph) override {
    (void)graph;  // it is galloc_->current.graph, which fill_details completes
    fill_details(galloc_->current);
    reserved_ = true;
    return galloc::Status::ok();
  }

  // A shared arena moved another allocator's output that this graph reads (whisper's conv
  // output, read by the encoder): the tensor follows its bytes, into their buffer (the old one
  // may be gone). A view without a buffer is left to view_init, from its moved source.
  galloc::Status moved(TensorId id, const galloc::TensorAddress& address) override {
    ggml_tensor* tensor = galloc_->current.ggml[static_cast<std::size_t>(id)];
    tensor->data = address.data;
    if (tensor->view_src == nullptr || tensor->buffer != nullptr) tensor->buffer = handle_of(address.chunk);
    return galloc::Status::ok();
  }

  galloc::Status place(TensorId id, const galloc::TensorAddress* address) override {
    return place_tensor(id, galloc_->current.ggml[static_cast<std::size_t>(id)], address);
  }

  // convert_graph found them (none, unless the graph reads another member's output).
  [[nodiscard]] const std::vector<TensorId>* tensors_in_arena() const override { return &galloc_->current.in_arena; }

  [[nodiscard]] bool reserved() const { return reserved_; }

 private:
  galloc::Status place_tensor(TensorId id, ggml_tensor* tensor, const galloc::TensorAddress* address) {
    if (tensor->view_src != nullptr) {
      if (tensor->buffer == nullptr && tensor->view_src->buffer != nullptr) {
        view_init(tensor);
      }
      return galloc::Status::ok();
    }
    if (tensor->data != nullptr) return galloc::Status::ok();
    if (address == nullptr) {
      // Only a tensor with a buffer but no data gets here: upstream would abort in
      // ggml_backend_tensor_alloc.
      return galloc::invalid_argument(std::string("tensor ") + tensor->name +
                                      " has a buffer but no data; cannot allocate it");
    }
    tensor_alloc(handle_of(address->chunk), tensor, address->data);
    // a node found in the arena is placed again whoever left it there (read_from_arena); a
    // leaf or a source outside the lists is kept unless the record says it is the allocator's
    const auto i = static_cast<std::size_t>(id);
    if (i < galloc_->current.graph.leafs.size() || i >= galloc_->current.listed) remember(id, tensor);
    return galloc::Status::ok();
  }

  // In a shared arena, what this alloc set on a tensor other than a node, so that the next
  // conversion knows it for the allocator's own (Converted::own).
  void remember(TensorId id, const ggml_tensor* tensor) {
    Converted& current = galloc_->current;
    if (current.track_own)
      current.own[static_cast<std::size_t>(id)] = {tensor->data, tensor->buffer, current.conversion};
  }

  ggml_gallocr* galloc_;
  bool reserved_ = false;
};

}  // namespace

extern "C" {

ggml_gallocr_t ggml_gallocr_new_n(ggml_backend_buffer_type_t* bufts, int n_bufs) {
  try {
    auto galloc = std::make_unique<ggml_gallocr>();
    std::vector<const galloc::BufferType*> per_id;
    for (int i = 0; i < n_bufs; ++i) {
      galloc->bufts.push_back(bufts[i]);
      // the same buffer type used several times shares one allocator and one buffer
      GgmlBufferType* type = nullptr;
      for (const auto& existing : galloc->types) {
        if (existing->buft() == bufts[i]) type = existing.get();
      }
      if (type == nullptr) {
        galloc->types.push_back(std::make_unique<GgmlBufferType>(bufts[i], &galloc->current, true));
        type = galloc->types.back().get();
      }
      per_id.push_back(type);
    }
    galloc->allocator = std::make_unique<galloc::GraphAllocator>(std::move(per_id), options_from_env());
    galloc->dump_dir = dump_dir_from_env();
    if (const std::string share = share_name(); !share.empty()) {
      char who[64];
      std::snprintf(who, sizeof who, "ggml_gallocr %p", static_cast<void*>(galloc.get()));
      std::vector<ggml_backend_buffer_type_t> group_types;
      std::string group_names;
      for_each_group_arena(share, [&](const DropinArena& arena) {
        group_types.push_back(arena.type.buft());
        group_names += (group_names.empty() ? "" : ", ") + arena.type.name();
      });
      for (const auto& type : galloc->types) {
        const auto id = static_cast<BufferId>(std::find(galloc->bufts.begin(), galloc->bufts.end(), type->buft()) -
                                              galloc->bufts.begin());
        if (!group_types.empty() &&
            std::find(group_types.begin(), group_types.end(), type->buft()) == group_types.end()) {
          // a GPU encoder joining a CPU model's group, say
          GGML_LOG_WARN(
              "%s: galloc: share group '%s': a member on %s gets a compute buffer of its own, as the group's are "
              "on %s and members share memory only within one buffer type\n",
              __func__, share.c_str(), type->name().c_str(), group_names.c_str());
        }
        auto shared = arena_for(share, type->buft());
        if (galloc::Status s = galloc->allocator->join(id, {shared, &shared->arena}, who); !s) {
          log_error(__func__, s);  // it keeps buffers of its own
          continue;
        }
        galloc->arenas.push_back(std::move(shared));
      }
      galloc->current.track_own = !galloc->arenas.empty();
    }
    return galloc.release();
  } catch (...) {
    log_exception(__func__);
    return nullptr;
  }
}

ggml_gallocr_t ggml_gallocr_new(ggml_backend_buffer_type_t buft) { return ggml_gallocr_new_n(&buft, 1); }

void ggml_gallocr_free(ggml_gallocr_t galloc) { delete galloc; }

bool ggml_gallocr_reserve_n(ggml_gallocr_t galloc, struct ggml_cgraph* graph, const int* node_buffer_ids,
                            const int* leaf_buffer_ids) {
  try {
    return reserve_impl(galloc, graph, node_buffer_ids, leaf_buffer_ids, __func__);
  } catch (...) {
    log_exception(__func__);
    return false;
  }
}

bool ggml_gallocr_reserve(ggml_gallocr_t galloc, struct ggml_cgraph* graph) {
  return ggml_gallocr_reserve_n(galloc, graph, nullptr, nullptr);
}

// Declared after the late-2024 API only; defining it for that one adds an unused symbol.
void ggml_gallocr_reserve_n_size(ggml_gallocr_t galloc, struct ggml_cgraph* graph, const int* node_buffer_ids,
                                 const int* leaf_buffer_ids, size_t* sizes) {
  if (galloc == nullptr) return;
  std::fill(sizes, sizes + galloc->bufts.size(), 0);
  try {
    if (galloc::Status s = convert_graph(graph, galloc->current); !s) {
      log_error(__func__, s);
      return;
    }
    auto measured =
        galloc->allocator->measure(galloc->current.graph, assignment_of(graph, node_buffer_ids, leaf_buffer_ids));
    if (!measured) {
      log_error(__func__, measured.status());
      return;
    }
    for (std::size_t i = 0; i < measured->size() && i < galloc->bufts.size(); ++i) {
      sizes[i] = static_cast<size_t>((*measured)[i]);
    }
  } catch (...) {
    log_exception(__func__);
  }
}

bool ggml_gallocr_alloc_graph(ggml_gallocr_t galloc, struct ggml_cgraph* graph) {
  try {
    if (galloc == nullptr) {
      GGML_LOG_ERROR("%s: the allocator is NULL\n", __func__);
      return false;
    }
    const NoteArenaChange note{galloc};
    Converted& current = galloc->current;
    // The same graph again, every tensor with memory, and buffers of its own: nothing is
    // placed (as upstream), only the buffers are reset.
    if (galloc->arenas.empty() && allocated_again(graph, current)) {
      galloc->allocator->reset_buffers();
      return true;
    }
    refresh_arena_buffers(galloc);
    const Arenas arenas = arenas_unchanged(galloc, galloc->quiet_generations) ? Arenas::kUnchanged : Arenas::kSearch;
    galloc->quiet_generations.clear();
    if (galloc::Status s = convert_graph(graph, current, Details::kSkip, galloc->arena_buffers, arenas); !s) {
      log_error(__func__, s);
      return false;
    }
    // The graph as converted lacks what only planning reads; InitTensors fills it in when
    // the graph no longer fits the reservation and alloc plans it again (one buffer).
    InitTensors init_tensors(galloc);
    if (galloc::Status s = galloc->allocator->alloc(current.graph, init_tensors); !s) {
      if (s.code() == galloc::ErrorCode::kFailedPrecondition && galloc->bufts.size() != 1) {
        // several buffers: the caller must reserve with the buffer ids first (upstream's false)
#ifndef NDEBUG
        GGML_LOG_DEBUG("%s: cannot reallocate multi buffer graph automatically, call reserve\n", __func__);
#endif
        return false;
      }
      log_error(__func__, s);
      return false;
    }
    // After the alloc: a reserve that grew the arena moved what this graph reads with it, and
    // the alloc made those tensors follow (InitTensors::moved). What is still in freed memory
    // was not moved. (A chunk freed during this alloc held nothing it reads: what is read is
    // moved or its chunk kept, so the list from before the alloc is the one to check.)
    if (galloc::Status s = check_reads_not_released(galloc); !s) {
      log_error(__func__, s);
      return false;
    }
    current.allocated = true;
    log_arena_growth(galloc, __func__);
    if (!galloc->arenas.empty() && galloc->current.in_arena.empty()) {
      for (const auto& shared : galloc->arenas) galloc->quiet_generations.push_back(shared->arena.generation());
    }
    if (init_tensors.reserved()) dump_graph(galloc, {}, __func__);
    return true;
  } catch (...) {
    log_exception(__func__);
    return false;
  }
}

size_t ggml_gallocr_get_buffer_size(ggml_gallocr_t galloc, int buffer_id) {
  if (galloc == nullptr || buffer_id < 0 || static_cast<std::size_t>(buffer_id) >= galloc->bufts.size()) {
    GGML_LOG_ERROR("%s: buffer id %d is out of range\n", __func__, buffer_id);
    return 0;
  }
  auto size = galloc->allocator->buffer_size(buffer_id);
  return size ? static_cast<size_t>(*size) : 0;
}

// ------------------------------------------------------------------ share groups (galloc-ggml.h)

bool galloc_ggml_share_begin(const char* name) {
  if (name == nullptr || *name == '\0') {
    GGML_LOG_ERROR("%s: the share group needs a name\n", __func__);
    return false;
  }
  if (share_scope.open) {
    GGML_LOG_ERROR(
        "%s: share group '%s' is already open on this thread; close it (galloc_ggml_share_end) before "
        "opening '%s'\n",
        __func__, share_scope.name.c_str(), name);
    return false;
  }
  try {
    share_scope.name = name;
    if (note_group_opened(share_scope.name) > 0) {
      GGML_LOG_WARN(
          "%s: share group '%s' is open on another thread too; if they are different contexts, give each its "
          "own group name: members of one group must never compute at the same time\n",
          __func__, name);
    }
  } catch (...) {
    log_exception(__func__);
    return false;
  }
  share_scope.open = true;
  return true;
}

bool galloc_ggml_share_end(void) {
  if (!share_scope.open) {
    GGML_LOG_ERROR("%s: no share group is open on this thread\n", __func__);
    return false;
  }
  share_scope.open = false;
  note_group_closed(share_scope.name);
  return true;
}

const char* galloc_ggml_share_group(void) { return share_scope.open ? share_scope.name.c_str() : nullptr; }

unsigned long long galloc_ggml_share_generation(const char* name) {
  if (name == nullptr) return 0;
  try {
    std::uint64_t newest = 0;
    for_each_group_arena(name, [&](const DropinArena& arena) {
      newest = std::max(newest, arena.last_change.load(std::memory_order_acquire));
    });
    return newest;
  } catch (...) {
    log_exception(__func__);
    return 0;
  }
}

// ------------------------------------------------------------------ ggml_tallocr

struct ggml_tallocr ggml_tallocr_new(ggml_backend_buffer_t buffer) {
  void* base = ggml_backend_buffer_get_base(buffer);
  const size_t align = ggml_backend_buffer_get_alignment(buffer);
  GGML_ASSERT(galloc::is_power_of_two(align));
  const size_t misalignment = reinterpret_cast<std::uintptr_t>(base) % align;
  struct ggml_tallocr talloc = {buffer, base, align, (align - misalignment) % align};
  return talloc;
}

}  // extern "C"

namespace {

// The rest of a ggml_tallocr's buffer as a galloc buffer, for galloc::LinearAllocator.
class TallocrType final : public galloc::BufferType {
 public:
  TallocrType(const ggml_tallocr& talloc, const ggml_tensor* tensor) : talloc_(talloc), tensor_(tensor) {}
  [[nodiscard]] std::string name() const override {
    const char* n = ggml_backend_buffer_name(talloc_.buffer);
    return n != nullptr ? n : "?";
  }
  [[nodiscard]] Bytes alignment() const override { return talloc_.alignment; }
  [[nodiscard]] Bytes alloc_size(const galloc::Tensor&) const override {
    return ggml_backend_buffer_get_alloc_size(talloc_.buffer, const_cast<ggml_tensor*>(tensor_));
  }
  [[nodiscard]] galloc::Result<std::unique_ptr<galloc::Buffer>> allocate(Bytes) const override {
    return galloc::internal_error("a ggml_tallocr does not allocate buffers");
  }

 private:
  const ggml_tallocr& talloc_;
  const ggml_tensor* tensor_;
};

class TallocrRest final : public galloc::Buffer {
 public:
  TallocrRest(const ggml_tallocr& talloc, const TallocrType& type) : talloc_(talloc), type_(type) {}
  std::byte* base() override { return static_cast<std::byte*>(talloc_.base) + talloc_.offset; }
  [[nodiscard]] Bytes size() const override {
    const size_t total = ggml_backend_buffer_get_size(talloc_.buffer);
    return total > talloc_.offset ? total - talloc_.offset : 0;
  }
  [[nodiscard]] const galloc::BufferType& type() const override { return type_; }

 private:
  const ggml_tallocr& talloc_;
  const TallocrType& type_;
};

}  // namespace

extern "C" {

TallocrAllocResult ggml_tallocr_alloc(struct ggml_tallocr* talloc, struct ggml_tensor* tensor) {
  void* addr = nullptr;
  try {
    TallocrType type(*talloc, tensor);
    TallocrRest rest(*talloc, type);
    galloc::LinearAllocator linear(rest);
    galloc::Tensor placed;
    placed.name = tensor->name;
    if (galloc::Status s = linear.allocate(placed); !s) {
      log_error(__func__, s);
      // The late-2024 API returns nothing, so a full buffer cannot be reported: abort as it does.
      // The newer one aborts too, but its API has a status, so galloc reports the failure.
      if (kLate2024Api) GGML_ABORT("not enough space in the buffer");
      return tallocr_result<TallocrAllocResult>(GGML_STATUS_ALLOC_FAILED);
    }
    addr = placed.data;
    talloc->offset += static_cast<size_t>(linear.offset());
  } catch (...) {
    log_exception(__func__);
    if (kLate2024Api) GGML_ABORT("ggml_tallocr_alloc failed");
    return tallocr_result<TallocrAllocResult>(GGML_STATUS_ALLOC_FAILED);
  }
  GGML_ASSERT(reinterpret_cast<std::uintptr_t>(addr) % talloc->alignment == 0);
  return tallocr_result<TallocrAllocResult>(tensor_alloc(talloc->buffer, tensor, addr));
}

}  // extern "C"

// ------------------------------------------------------------------ context tensors

namespace {

ggml_backend_buffer_t alloc_ctx_tensors(ggml_context* ctx, ggml_backend_buffer_type_t buft, size_t* nbytes_total,
                                        bool no_alloc, const char* function) {
  *nbytes_total = 0;
  if (!ggml_get_no_alloc(ctx)) {
    GGML_LOG_ERROR("%s: the context must be created with no_alloc = true\n", function);
    return nullptr;
  }
  Converted converted;
  std::size_t n = 0;
  if (galloc::Status s = convert_context(ctx, converted, n); !s) {
    log_error(function, s);
    return nullptr;
  }
  GgmlBufferType type(buft, &converted, /*compute_usage=*/false);
  std::vector<TensorId> ids(n);
  for (std::size_t i = 0; i < n; ++i) ids[i] = static_cast<TensorId>(i);

  galloc::ContextOptions options;
  options.refuse_tensor_above_max_size = kLate2024Api;

  if (no_alloc) {
    auto size = galloc::context_allocation_size(converted.graph, ids, type, options);
    if (!size) log_error(function, size.status());
    *nbytes_total = size ? static_cast<size_t>(*size) : 0;
    return nullptr;
  }
  auto allocation = galloc::allocate_context_tensors(converted.graph, ids, type, options);
  if (!allocation) {
    log_error(function, allocation.status());
    return nullptr;
  }
  *nbytes_total = static_cast<size_t>(allocation->total_size);
  std::vector<std::unique_ptr<galloc::Buffer>>& buffers = allocation->buffers;
  if (buffers.empty()) {
#ifndef NDEBUG
    GGML_LOG_DEBUG("%s: all tensors in the context are already allocated\n", function);
#endif
    return nullptr;
  }

  // Hand the addresses to ggml in context order.
  for (std::size_t i = 0; i < n; ++i) {
    ggml_tensor* t = converted.ggml[i];
    ggml_status status = GGML_STATUS_SUCCESS;
    if (t->data == nullptr) {
      if (t->view_src == nullptr) {
        // empty tensors after the last buffer are left alone, as upstream leaves them
        const int b = allocation->tensor_buffer[i];
        if (b < 0) continue;
        status =
            tensor_alloc(handle_of(buffers[static_cast<std::size_t>(b)].get()), t, converted.graph.tensors[i].data);
      } else if (t->buffer == nullptr) {
        status = view_init(t);
      }
    } else if (t->view_src != nullptr && t->buffer == nullptr) {
      status = view_init(t);  // view of a pre-allocated tensor
    }
    if (status != GGML_STATUS_SUCCESS) {
      GGML_LOG_ERROR("%s: failed to initialize tensor %s\n", function, t->name);
      return nullptr;
    }
  }

  std::vector<ggml_backend_buffer_t> handles;
  for (auto& buffer : buffers) handles.push_back(static_cast<GgmlBuffer*>(buffer.get())->release());
  if (handles.size() == 1) return handles[0];
  return ggml_backend_multi_buffer_alloc_buffer(handles.data(), handles.size());
}

}  // namespace

extern "C" {

// Declared after the late-2024 API only; defining it for that one adds an unused symbol.
size_t ggml_backend_alloc_ctx_tensors_from_buft_size(struct ggml_context* ctx, ggml_backend_buffer_type_t buft) {
  size_t nbytes_total = 0;
  try {
    alloc_ctx_tensors(ctx, buft, &nbytes_total, /*no_alloc=*/true, __func__);
  } catch (...) {
    log_exception(__func__);
    return 0;
  }
  return nbytes_total;
}

ggml_backend_buffer_t ggml_backend_alloc_ctx_tensors_from_buft(struct ggml_context* ctx,
                                                               ggml_backend_buffer_type_t buft) {
  if (is_meta(buft)) return meta_alloc_ctx_tensors(ctx, buft);
  size_t nbytes_total = 0;
  try {
    return alloc_ctx_tensors(ctx, buft, &nbytes_total, /*no_alloc=*/false, __func__);
  } catch (...) {
    log_exception(__func__);
    return nullptr;
  }
}

ggml_backend_buffer_t ggml_backend_alloc_ctx_tensors(struct ggml_context* ctx, ggml_backend_t backend) {
  return ggml_backend_alloc_ctx_tensors_from_buft(ctx, ggml_backend_get_default_buffer_type(backend));
}

// ggml-impl.h (current ggml): true if the operation can reuse memory from its sources. Older
// ggml keeps it to ggml-alloc.c; defining it there adds an unused symbol.
bool ggml_op_can_inplace(enum ggml_op op) {
  return op >= 0 && op < GGML_OP_COUNT && this_ggml_inplace_ops()[static_cast<std::size_t>(op_of(op))];
}

}  // extern "C"

#endif  // !GALLOC_GGML_2023_API
