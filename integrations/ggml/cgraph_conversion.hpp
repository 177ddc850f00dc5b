// ggml_cgraph -> galloc::Graph: the drop-in's conversion of ggml's tensors, ops and types,
// with a map back from galloc's tensor ids to ggml's tensors.
#pragma once

#include "ggml-backend-impl.h"
#include "ggml-backend.h"
#include "ggml-impl.h"
#include "ggml.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "galloc/graph.hpp"
#include "galloc/status.hpp"

#include "api_generations.hpp"

namespace {

using galloc::BufferId;
using galloc::Bytes;
using galloc::TensorId;

// The late-2024 API's ggml_op_can_inplace: a subset of the later one's, which galloc
// follows.
bool late_2024_op_can_inplace(ggml_op op) {
  switch (op) {
    case GGML_OP_SCALE:
    case GGML_OP_DIAG_MASK_ZERO:
    case GGML_OP_DIAG_MASK_INF:
    case GGML_OP_ADD:
    case GGML_OP_ADD1:
    case GGML_OP_SUB:
    case GGML_OP_MUL:
    case GGML_OP_DIV:
    case GGML_OP_SQR:
    case GGML_OP_SQRT:
    case GGML_OP_LOG:
    case GGML_OP_UNARY:
    case GGML_OP_ROPE:
    case GGML_OP_RMS_NORM:
    case GGML_OP_SOFT_MAX: return true;
    default: return false;
  }
}

// ggml op -> galloc op, by name (the versions number their ops differently). The op only
// matters to galloc for in-place reuse (and NONE, CPY, SET_ROWS, SET, ACC for views), so an op
// galloc does not know becomes CUSTOM, which is never reused in place, as in every ggml
// version.
struct OpTable {
  std::array<galloc::Op, GGML_OP_COUNT> op{};
  [[nodiscard]] galloc::Op of(ggml_op o) const {
    return o < 0 || o >= GGML_OP_COUNT ? galloc::Op::Custom : op[static_cast<std::size_t>(o)];
  }
  OpTable() {
    for (int i = 0; i < GGML_OP_COUNT; ++i) {
      const auto ggml = static_cast<ggml_op>(i);
      op[static_cast<std::size_t>(i)] = galloc::op_from_name(ggml_op_name(ggml)).value_or(galloc::Op::Custom);
    }
  }
};

// A loop over tensors takes the table once: a call per tensor would test the static's guard
// each time, and the compiler does not inline it.
const OpTable& op_table() {
  static const OpTable table;
  return table;
}

galloc::Op op_of(ggml_op op) { return op_table().of(op); }

// The ops this ggml's ggml-alloc.c reuses in place, for every graph the drop-in converts.
galloc::OpSet make_inplace_ops() {
  galloc::OpSet ops = galloc::default_inplace_ops();
  if (kLate2024Api) {
    ops.reset();
    for (int i = 0; i < GGML_OP_COUNT; ++i) {
      const auto ggml = static_cast<ggml_op>(i);
      if (late_2024_op_can_inplace(ggml) && op_of(ggml) != galloc::Op::Custom)
        ops.set(static_cast<std::size_t>(op_of(ggml)));
    }
  }
  if (kClampReusesSource) ops.set(static_cast<std::size_t>(galloc::Op::Clamp));
  return ops;
}

const galloc::OpSet& this_ggml_inplace_ops() {
  static const galloc::OpSet ops = make_inplace_ops();
  return ops;
}

// ggml type -> galloc type. galloc's DataType has ggml's numeric values; a type galloc does
// not know (whisper.rn 0.4.0-rc.10's Q4_0_4_4 family, say) maps to a known type with the same block size
// and block bytes, which is all the allocator reads from a type.
struct TypeTable {
  std::array<std::optional<galloc::DataType>, GGML_TYPE_COUNT> type{};
  [[nodiscard]] std::optional<galloc::DataType> of(ggml_type t) const {
    return t < 0 || t >= GGML_TYPE_COUNT ? std::nullopt : type[static_cast<std::size_t>(t)];
  }
  TypeTable() {
    for (int i = 0; i < GGML_TYPE_COUNT; ++i) {
      const auto ggml = static_cast<ggml_type>(i);
      const auto block = static_cast<std::int64_t>(ggml_blck_size(ggml));
      const auto bytes = static_cast<Bytes>(ggml_type_size(ggml));
      if (block <= 0) continue;  // a removed type
      auto same = [&](galloc::DataType t) {
        auto traits = galloc::data_type_traits(t);
        return traits && traits->block_size == block && traits->type_size == bytes;
      };
      if (same(static_cast<galloc::DataType>(i))) {
        type[static_cast<std::size_t>(i)] = static_cast<galloc::DataType>(i);
        continue;
      }
      for (int j = 0; j < 256 && !type[static_cast<std::size_t>(i)]; ++j) {
        if (same(static_cast<galloc::DataType>(j)))
          type[static_cast<std::size_t>(i)] = static_cast<galloc::DataType>(j);
      }
    }
  }
};

const TypeTable& type_table() {
  static const TypeTable table;
  return table;
}

// ------------------------------------------------------------------ graph conversion

// ggml tensor -> galloc id: open addressing on the pointer, like ggml's own hash set.
class TensorIds {
 public:
  void clear(std::size_t expected) {
    std::size_t capacity = 64;
    while (capacity < 2 * expected + 16) capacity *= 2;
    slots_.assign(capacity, Slot{});
    size_ = 0;
  }
  // The id of `t`, or `next` (inserted) when `t` is new.
  [[gnu::always_inline]] TensorId find_or_insert(const ggml_tensor* t, TensorId next) {
    if (2 * (size_ + 1) > slots_.size()) grow();
    for (std::size_t i = index(t);; i = (i + 1) & (slots_.size() - 1)) {
      Slot& slot = slots_[i];
      if (slot.tensor == t) return slot.id;
      if (slot.tensor == nullptr) {
        slot = {t, next};
        ++size_;
        return next;
      }
    }
  }
  [[nodiscard]] TensorId at(const ggml_tensor* t) const {
    for (std::size_t i = index(t);; i = (i + 1) & (slots_.size() - 1)) {
      if (slots_[i].tensor == t) return slots_[i].id;
      if (slots_[i].tensor == nullptr) return galloc::kNoTensor;
    }
  }

 private:
  struct Slot {
    const ggml_tensor* tensor = nullptr;
    TensorId id = galloc::kNoTensor;
  };
  [[nodiscard]] std::size_t index(const ggml_tensor* t) const {
    const auto h = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(t)) * 0x9e3779b97f4a7c15ull;
    return static_cast<std::size_t>(h >> 20) & (slots_.size() - 1);
  }
  [[gnu::noinline]] void grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.size() * 2, Slot{});
    size_ = 0;
    for (const Slot& slot : old) {
      if (slot.tensor != nullptr) find_or_insert(slot.tensor, slot.id);
    }
  }
  std::vector<Slot> slots_ = std::vector<Slot>(64);
  std::size_t size_ = 0;
};

// What the allocator's last alloc_graph set on a tensor (tensor_alloc or view_init): null
// buffer for nothing. In a shared arena a tensor that still carries it is the allocator's own
// earlier placement, not memory that exists: it is placed again, as a fresh tensor would be.
// Told by value, so a record of a tensor that is gone is never followed.
struct OwnPlacement {
  void* data = nullptr;
  ggml_backend_buffer_t buffer = nullptr;
};

// A galloc graph and, per galloc tensor id, the ggml tensor it stands for.
struct Converted {
  Converted() { graph.inplace_ops = this_ggml_inplace_ops(); }

  galloc::Graph graph;
  std::vector<ggml_tensor*> ggml;
  TensorIds ids;

  // graph.tensors keeps its elements (and their names' storage): the conversion overwrites them
  // expected: the leafs and nodes; the last graph's tensor count (sources included) sizes the
  // id table too, so converting the same graph again never rehashes
  void clear(std::size_t expected) {
    graph.nodes.clear();
    graph.leafs.clear();
    expected = std::max(expected, ggml.size());
    ggml.clear();
    ggml.reserve(expected);
    ids.clear(expected);
  }

  // Per tensor of the last completed convert_graph, the pointers its edges' ids came from
  // (src[0..GGML_MAX_SRC), then view_src): the same lists and the same edges give the same ids.
  // Only leafs and nodes (the first `listed` ids) have their sources followed; of the tensors
  // they read, only the view source (see convert_graph).
  using Edges = std::array<const ggml_tensor*, GGML_MAX_SRC + 1>;
  std::vector<Edges> edges;
  std::size_t listed = 0;
  bool edges_valid = false;
  // Tensors that the graph reaches only as a view's source (no leaf, node or node source) and
  // that have no memory yet: memory that exists elsewhere (another graph's output, as
  // whisper.cpp's encoder reads the conv graph's), resolved when alloc_graph meets the view.
  std::vector<TensorId> memory_elsewhere;
  // The tensors whose memory (a view's: its root's) lies in the shared arenas' buffers, as
  // the last conversion found them; none: alloc need not look.
  std::vector<TensorId> in_arena;
  // The tensors whose `data` fill_memory_details set (every other one's is nullptr), unless
  // data_anywhere: fill_details and a conversion of another topology may leave data on any.
  std::vector<TensorId> with_data;
  bool data_anywhere = true;
  // Per tensor id, for an allocator in a shared arena (track_own): what its last alloc_graph
  // set on the tensor. Conversions keep it by tensor across a change of topology.
  bool track_own = false;
  std::vector<OwnPlacement> own;
  // Whether the last alloc_graph allocated this conversion's graph (see allocated_again).
  bool allocated = false;

  [[gnu::always_inline]] TensorId add(ggml_tensor* t) {
    const auto next = static_cast<TensorId>(ggml.size());
    const TensorId id = ids.find_or_insert(t, next);
    if (id == next) ggml.push_back(t);
    return id;
  }

  // The ggml tensor behind a tensor of `graph` (nullptr for a tensor of another graph).
  [[nodiscard]] ggml_tensor* ggml_of(const galloc::Tensor& tensor) const {
    const galloc::Tensor* first = graph.tensors.data();
    if (&tensor < first || &tensor >= first + graph.tensors.size()) return nullptr;
    return ggml[static_cast<std::size_t>(&tensor - first)];
  }
};

// has_memory follows what each caller of upstream treats as "already allocated".
enum class MemoryRule {
  kGraph,    // ggml_gallocr_is_allocated: data != NULL || buffer != NULL
  kContext,  // ggml_backend_alloc_ctx_tensors_from_buft: data != NULL
};

galloc::Status type_error(const ggml_tensor* t) {
  return galloc::invalid_argument("tensor '" + std::string(t->name) + "' has a type (" + std::to_string(t->type) +
                                  ", " + (ggml_type_name(t->type) ? ggml_type_name(t->type) : "?") +
                                  ") that galloc cannot represent");
}

// false (and type_error's message) for a type galloc cannot represent; the message is only
// built then, so the check stays a table lookup on every alloc
inline bool set_type(const ggml_tensor* t, galloc::Tensor& g, const TypeTable& types) {
  const auto type = types.of(t->type);
  if (!type) return false;
  g.type = *type;
  return true;
}

bool has_memory(const ggml_tensor* t, MemoryRule rule) {
  return rule == MemoryRule::kGraph ? (t->data != nullptr || t->buffer != nullptr) : t->data != nullptr;
}

// A graph of the same tensors as the last one (built again in the same context) has the same
// names at the same ids: comparing costs less than assigning.
[[gnu::always_inline]] inline void copy_name(const ggml_tensor* t, std::string& name) {
  const auto* end = static_cast<const char*>(std::memchr(t->name, '\0', sizeof t->name));
  const std::size_t length = end == nullptr ? sizeof t->name : static_cast<std::size_t>(end - t->name);
  if (name.size() == length && std::memcmp(name.data(), t->name, length) == 0) return;
  name.assign(t->name, length);
}

// What convert_graph fills besides the structure. kFill: fill_details, names included;
// kFillButNames: the same with the names left empty (only messages and GALLOC_DUMP read them,
// and copying them is half of fill_details: a reserve leaves them out and fills them when it
// has something to say; empty, no message names a tensor of an earlier graph); kSkip: neither.
enum class Details { kFill, kFillButNames, kSkip };

// What only planning (and GALLOC_DUMP) reads: name, shape, view offset and data. The
// reservation check of GraphAllocator::alloc reads none of them (it asks the buffer type for
// each tensor's size, which asks ggml about the ggml tensor), so alloc_graph fills them only
// when it has to reserve again.
void fill_details(Converted& out, Details details = Details::kFill) {
  for (std::size_t i = 0; i < out.ggml.size(); ++i) {
    const ggml_tensor* t = out.ggml[i];
    galloc::Tensor& g = out.graph.tensors[i];
    if (details == Details::kFill) {
      copy_name(t, g.name);
    } else {
      g.name.clear();
    }
    for (int d = 0; d < galloc::kMaxDims; ++d) {
      g.ne[static_cast<std::size_t>(d)] = t->ne[d];
      g.nb[static_cast<std::size_t>(d)] = static_cast<Bytes>(t->nb[d]);
    }
    g.view_offs = static_cast<Bytes>(t->view_offs);
    g.data = t->data;
  }
  out.data_anywhere = true;
}

// The buffer where the memory of `t` lies (a view's: its root's); null when it has none yet.
[[gnu::always_inline]] inline ggml_backend_buffer_t memory_buffer(const ggml_tensor* t) {
  return (t->view_src != nullptr ? t->view_src : t)->buffer;
}

// Whether `buffer`, where a tensor's memory lies (memory_buffer), is one of the buffers
// [begin, end). `outside` remembers the last buffer found not to be one: weights come in runs
// of one buffer. Inlined: it runs for every tensor of every alloc_graph in an arena, and most
// answer at the first test (a node not allocated yet, a weight).
[[gnu::always_inline]] inline bool in_buffers(ggml_backend_buffer_t buffer, const ggml_backend_buffer_t* begin,
                                              const ggml_backend_buffer_t* end, ggml_backend_buffer_t& outside) {
  if (buffer == nullptr || buffer == outside) return false;
  if (std::find(begin, end, buffer) != end) return true;
  outside = buffer;
  return false;
}

// What a shared arena reads at alloc (GraphAllocator::existing_memory), which alloc_graph's
// conversion otherwise skips: shape, view offset and data of the tensors in
// Converted::in_arena. The rest (weights, caches) keeps no data: it is none of the arena's
// business, and a buffer type without real addresses could make it look like the arena's.
// Only the tensors whose data the last call set are cleared, so the usual graph, with a few
// tensors in the arena or none, costs a few stores.
void fill_memory_details(Converted& out) {
  std::vector<galloc::Tensor>& tensors = out.graph.tensors;
  if (out.data_anywhere) {
    for (galloc::Tensor& g : tensors) g.data = nullptr;
    out.data_anywhere = false;
  } else {
    for (TensorId id : out.with_data) tensors[static_cast<std::size_t>(id)].data = nullptr;
  }
  for (TensorId id : out.in_arena) {
    const ggml_tensor* t = out.ggml[static_cast<std::size_t>(id)];
    galloc::Tensor& g = tensors[static_cast<std::size_t>(id)];
    for (int d = 0; d < galloc::kMaxDims; ++d) {
      g.ne[static_cast<std::size_t>(d)] = t->ne[d];
      g.nb[static_cast<std::size_t>(d)] = static_cast<Bytes>(t->nb[d]);
    }
    g.view_offs = static_cast<Bytes>(t->view_offs);
    g.data = t->data;
  }
  out.with_data = out.in_arena;
}

galloc::Status fill_tensors(Converted& out, MemoryRule rule, bool with_sources) {
  const OpTable& ops = op_table();
  const TypeTable& types = type_table();
  out.graph.tensors.resize(out.ggml.size());
  for (std::size_t i = 0; i < out.ggml.size(); ++i) {
    const ggml_tensor* t = out.ggml[i];
    galloc::Tensor& g = out.graph.tensors[i];
    if (!set_type(t, g, types)) return type_error(t);
    g.op = ops.of(t->op);
    for (int s = 0; s < galloc::kMaxSources; ++s) {
      const ggml_tensor* src = with_sources && s < GGML_MAX_SRC ? t->src[s] : nullptr;
      // ggml_cast sets src[1] to the result itself (as ggml_cpy's destination); no dependency
      if (src == t) src = nullptr;
      g.src[static_cast<std::size_t>(s)] = src == nullptr ? galloc::kNoTensor : out.ids.at(src);
    }
    g.view_src = t->view_src == nullptr ? galloc::kNoTensor : out.ids.at(t->view_src);
    g.flags = flags_of(t);
    g.has_memory = has_memory(t, rule);
  }
  fill_details(out);
  return galloc::Status::ok();
}

// Leafs get the first ids, then nodes, in list order; then the tensors they read (their
// sources and view sources) and those tensors' view sources, in the order they are found. The
// same graph topology gives the same ids. The sources of a tensor that is no leaf or node are
// not followed: they may be a whole other graph (whisper's cross graph reads the encoder's
// output, whose sources are the encoder's 200 nodes), and ggml-alloc reads them only for an
// input tensor with an op it reuses in place, which llama.cpp, whisper.cpp and ggml-backend's
// scheduler do not make (their inputs are new tensors).
// Each tensor's structure (type, op, sources, view source, flags, memory) is written as its
// sources are found, one hash lookup per edge; kSkip leaves the details to fill_details
// except, for the tensors in `arena_buffers` (a shared arena's), fill_memory_details'.
// kUnchanged: the arenas are as they were when the last conversion (of the same allocator)
// found none of the graph's tensors in them, so a graph of the same topology has none there
// either and is not searched; a graph of another topology always is.
enum class Arenas { kSearch, kUnchanged };
galloc::Status convert_graph(const ggml_cgraph* cgraph, Converted& out, Details details = Details::kFill,
                             const std::vector<ggml_backend_buffer_t>& arena_buffers = {},
                             Arenas arenas = Arenas::kSearch);

// Whether `cgraph` has the last conversion's leaf and node lists (the ids' first tensors).
inline bool same_lists(const ggml_cgraph* cgraph, const Converted& out) {
  if (!out.edges_valid || static_cast<std::size_t>(cgraph->n_leafs) != out.graph.leafs.size() ||
      static_cast<std::size_t>(cgraph->n_nodes) != out.graph.nodes.size()) {
    return false;
  }
  for (int i = 0; i < cgraph->n_leafs; ++i) {
    if (cgraph->leafs[i] != out.ggml[static_cast<std::size_t>(out.graph.leafs[static_cast<std::size_t>(i)])])
      return false;
  }
  for (int i = 0; i < cgraph->n_nodes; ++i) {
    if (cgraph->nodes[i] != out.ggml[static_cast<std::size_t>(out.graph.nodes[static_cast<std::size_t>(i)])])
      return false;
  }
  return true;
}

// Whether tensor `t` has the edges the last conversion found: its sources (a leaf's or
// node's, `listed`) and its view source.
[[gnu::always_inline]] inline bool same_edges(const ggml_tensor* t, const Converted::Edges& edges, bool listed) {
  if (listed) {
    for (int s = 0; s < GGML_MAX_SRC; ++s) {
      if (t->src[s] != edges[static_cast<std::size_t>(s)]) return false;
    }
  }
  return t->view_src == edges[GGML_MAX_SRC];
}

// In a shared arena, before a tensor's memory is looked at: a tensor that still carries what
// this allocator's last alloc gave it is placed again (see OwnPlacement). The record is spent.
[[gnu::always_inline]] inline void forget_own_placement(ggml_tensor* t, OwnPlacement& own) {
  if (own.buffer != nullptr && t->buffer == own.buffer && t->data == own.data) {
    t->data = nullptr;
    t->buffer = nullptr;
  }
  own = OwnPlacement{};
}

// In a shared arena, where `t` (tensor id `id` of a graph with `n_leafs` leafs and `listed`
// leafs and nodes) has its memory in the arena's buffers: whether it is what the graph reads
// there (another member's output, or a view of it). A node is computed by the graph, so its
// old bytes are nobody's input: it is placed again, whoever left it there (a member that read
// it may have moved it).
[[gnu::always_inline]] inline bool read_from_arena(ggml_tensor* t, std::size_t id, std::size_t n_leafs,
                                                   std::size_t listed) {
  if (id < n_leafs || id >= listed || t->view_src != nullptr) return true;
  t->data = nullptr;
  t->buffer = nullptr;
  return false;
}

// A graph with the last conversion's topology (the same leaf and node lists, the same
// source and view source pointers in every tensor) gets the same ids, so only the fields
// that are not edges are read again; without the hash lookups this is most of the gap to
// upstream's alloc_graph, which rebuilds a ggml graph of the same shape every time.
// false (and nothing of `out` to rely on but its ids) when the topology differs. With kArena
// (the allocator is in a shared arena) it places the allocator's own earlier tensors again
// and, with `search`, counts the tensors with memory of their own in `arena_buffers` (a
// view's root is a tensor of the graph too); only when there are any does
// fill_memory_details write theirs: usually there are none. A separate instance keeps the
// loop of the usual case as tight as it was.
template <bool kArena>
bool reconvert_same_topology(const ggml_cgraph* cgraph, Converted& out,
                             const std::vector<ggml_backend_buffer_t>& arena_buffers, bool search,
                             galloc::Status& status) {
  if (!same_lists(cgraph, out)) return false;
  // Locals, which the stores into the tensors below cannot alias: otherwise every store (and
  // push_back's call) makes the compiler load the vectors' bounds again.
  const OpTable& ops = op_table();
  const TypeTable& types = type_table();
  const ggml_backend_buffer_t* const arena_begin = arena_buffers.data();
  const ggml_backend_buffer_t* const arena_end = arena_begin + arena_buffers.size();
  ggml_backend_buffer_t outside = nullptr;  // the last buffer met that is not the arena's
  ggml_tensor* const* const ggml = out.ggml.data();
  const Converted::Edges* const all_edges = out.edges.data();
  galloc::Tensor* const tensors = out.graph.tensors.data();
  OwnPlacement* const own = kArena ? out.own.data() : nullptr;
  const std::size_t n = out.ggml.size(), listed = out.listed, n_leafs = out.graph.leafs.size();
  out.in_arena.clear();
  for (std::size_t i = 0; i < n; ++i) {
    ggml_tensor* const t = ggml[i];
    if (!same_edges(t, all_edges[i], i < listed)) return false;
    galloc::Tensor& g = tensors[i];
    if (!set_type(t, g, types)) {
      status = type_error(t);
      return true;
    }
    g.op = ops.of(t->op);
    g.flags = flags_of(t);
    // while the tensor is at hand, rather than in a second pass over the graph
    if constexpr (kArena) {
      forget_own_placement(t, own[i]);
      if (search && in_buffers(memory_buffer(t), arena_begin, arena_end, outside) &&
          read_from_arena(t, i, n_leafs, listed)) {
        out.in_arena.push_back(static_cast<TensorId>(i));
      }
    }
    g.has_memory = has_memory(t, MemoryRule::kGraph);
  }
  for (TensorId id : out.memory_elsewhere) out.graph[id].has_memory = true;
  if (kArena && search) fill_memory_details(out);
  status = galloc::Status::ok();
  return true;
}

// Whether `cgraph` is the graph of the last conversion (the same lists and edges), allocated
// by the last alloc_graph (Converted::allocated), with every tensor still holding memory (a
// view: a buffer, or a source without one): the usual ggml loop, one graph allocated again
// and again. Upstream then places nothing, and neither would the walk: the tensors the
// graph reads all have memory, which it keeps, as upstream does.
bool allocated_again(const ggml_cgraph* cgraph, const Converted& out) {
  if (!out.allocated || !same_lists(cgraph, out)) return false;
  // In id order, each tensor is reached from the lists through edges already compared, so
  // every pointer followed is one of this graph's.
  const std::size_t n = out.ggml.size(), listed = out.listed;
  for (std::size_t i = 0; i < n; ++i) {
    const ggml_tensor* const t = out.ggml[i];
    if (!same_edges(t, out.edges[i], i < listed)) return false;
    // what the walk would place: a tensor without memory, a view not initialised yet
    const ggml_tensor* const view_src = t->view_src;
    if (view_src == nullptr ? t->data == nullptr : t->buffer == nullptr && view_src->buffer != nullptr) return false;
  }
  return true;
}

// Sets has_memory on the tensors the graph reaches only as a view's source and that have no
// memory (Converted::memory_elsewhere). Leafs and nodes have the first ids.
void mark_memory_elsewhere(Converted& out) {
  out.memory_elsewhere.clear();
  galloc::Graph& g = out.graph;
  const std::size_t listed = g.leafs.size() + g.nodes.size();
  // Only a tensor reached through an edge and without memory can be one (usually none: the
  // KV cache, reached as a view's source, has memory).
  bool candidate = false;
  for (std::size_t i = listed; i < g.tensors.size() && !candidate; ++i) candidate = !g.tensors[i].has_memory;
  if (!candidate) return;
  std::vector<char> read(g.tensors.size(), 0);
  for (std::size_t i = 0; i < listed && i < read.size(); ++i) read[i] = 1;
  for (TensorId node : g.nodes) {
    for (TensorId src : g[node].src) {
      if (src != galloc::kNoTensor) read[static_cast<std::size_t>(src)] = 1;
    }
  }
  for (const galloc::Tensor& t : g.tensors) {
    if (!t.is_view()) continue;
    const auto root = static_cast<std::size_t>(t.view_src);
    if (read[root] || g.tensors[root].has_memory) continue;
    g.tensors[root].has_memory = true;
    read[root] = 1;  // once
    out.memory_elsewhere.push_back(t.view_src);
  }
}

// (declared above, with what it converts)
galloc::Status convert_graph(const ggml_cgraph* cgraph, Converted& out, Details details,
                             const std::vector<ggml_backend_buffer_t>& arena_buffers, Arenas arenas) {
  if (cgraph == nullptr) return galloc::invalid_argument("the graph is NULL");
  out.in_arena.clear();
  out.allocated = false;  // until an alloc_graph of this conversion succeeds
  galloc::Status status;
  const bool search = !arena_buffers.empty() && arenas == Arenas::kSearch;
  // Unsearched (Arenas::kUnchanged), nothing was placed in the arenas since this allocator's
  // last alloc, which read nothing there: its placement stands, and its own tensors with it.
  if (out.track_own && search ? reconvert_same_topology<true>(cgraph, out, arena_buffers, search, status)
                              : reconvert_same_topology<false>(cgraph, out, arena_buffers, false, status)) {
    if (status && details != Details::kSkip) fill_details(out, details);
    return status;
  }
  out.edges_valid = false;
  out.data_anywhere = true;  // the tensors keep what the last graph left in them
  out.in_arena.clear();
  // The own placements of the last conversion's ids, found again by tensor.
  std::vector<OwnPlacement> previous_own;
  TensorIds previous_ids;
  const bool remap_own = out.track_own && !out.own.empty();
  if (remap_own) {
    previous_own.swap(out.own);
    previous_ids = std::move(out.ids);
  }
  out.clear(static_cast<std::size_t>(cgraph->n_nodes) + static_cast<std::size_t>(cgraph->n_leafs));
  for (int i = 0; i < cgraph->n_leafs; ++i) {
    if (cgraph->leafs[i] == nullptr) return galloc::invalid_argument("leaf " + std::to_string(i) + " is NULL");
    out.graph.leafs.push_back(out.add(cgraph->leafs[i]));
  }
  for (int i = 0; i < cgraph->n_nodes; ++i) {
    if (cgraph->nodes[i] == nullptr) return galloc::invalid_argument("node " + std::to_string(i) + " is NULL");
    out.graph.nodes.push_back(out.add(cgraph->nodes[i]));
  }
  out.listed = out.ggml.size();
  const OpTable& ops = op_table();
  const TypeTable& types = type_table();
  std::vector<galloc::Tensor>& tensors = out.graph.tensors;
  const bool search_all = !arena_buffers.empty();  // another topology: always searched
  std::vector<OwnPlacement> own_now;               // the own placements by the new ids
  const ggml_backend_buffer_t* const arena_end = arena_buffers.data() + arena_buffers.size();
  ggml_backend_buffer_t outside = nullptr;
  const std::size_t n_leafs = out.graph.leafs.size();
  for (std::size_t i = 0; i < out.ggml.size(); ++i) {
    ggml_tensor* t = out.ggml[i];
    std::array<TensorId, galloc::kMaxSources> src;
    src.fill(galloc::kNoTensor);
    for (int s = 0; s < GGML_MAX_SRC && i < out.listed; ++s) {
      // ggml_cast sets src[1] to the result itself (as ggml_cpy's destination); no dependency
      if (t->src[s] != nullptr && t->src[s] != t) src[static_cast<std::size_t>(s)] = out.add(t->src[s]);
    }
    const TensorId view_src = t->view_src == nullptr ? galloc::kNoTensor : out.add(t->view_src);
    // keeps the elements of earlier calls (and their names' storage): they are overwritten
    if (tensors.size() < out.ggml.size()) tensors.resize(out.ggml.size());
    if (out.edges.size() < out.ggml.size()) out.edges.resize(out.ggml.size());
    if (out.track_own) {
      OwnPlacement record;
      if (remap_own) {
        const TensorId old = previous_ids.at(t);
        if (old != galloc::kNoTensor && static_cast<std::size_t>(old) < previous_own.size())
          record = previous_own[static_cast<std::size_t>(old)];
      }
      // only where the arenas are searched (a reserve or an alloc, not a measure)
      if (search_all) {
        forget_own_placement(t, record);
        if (in_buffers(memory_buffer(t), arena_buffers.data(), arena_end, outside) &&
            read_from_arena(t, i, n_leafs, out.listed)) {
          out.in_arena.push_back(static_cast<TensorId>(i));
        }
      }
      if (own_now.size() < out.ggml.size()) own_now.resize(out.ggml.size());
      own_now[i] = record;
    }
    galloc::Tensor& g = tensors[i];
    if (!set_type(t, g, types)) return type_error(t);
    g.op = ops.of(t->op);
    g.src = src;
    g.view_src = view_src;
    g.flags = flags_of(t);
    g.has_memory = has_memory(t, MemoryRule::kGraph);
    Converted::Edges& edges = out.edges[i];
    std::copy(t->src, t->src + GGML_MAX_SRC, edges.begin());
    edges[GGML_MAX_SRC] = t->view_src;
  }
  tensors.resize(out.ggml.size());
  out.edges.resize(out.ggml.size());
  if (out.track_own) {
    own_now.resize(out.ggml.size());
    out.own.swap(own_now);
  }
  mark_memory_elsewhere(out);
  out.edges_valid = true;
  if (details != Details::kSkip) fill_details(out, details);
  if (details == Details::kSkip && search_all) fill_memory_details(out);
  return galloc::Status::ok();
}

// The tensors of a context, in context order (their ids are 0..n-1), plus the view sources
// they reach (which may live in another context). No nodes or leafs.
galloc::Status convert_context(ggml_context* ctx, Converted& out, std::size_t& n_context) {
  out.allocated = false;
  out.clear(64);
  for (ggml_tensor* t = ggml_get_first_tensor(ctx); t != nullptr; t = ggml_get_next_tensor(ctx, t)) out.add(t);
  n_context = out.ggml.size();
  for (std::size_t i = 0; i < out.ggml.size(); ++i) {
    if (out.ggml[i]->view_src != nullptr) out.add(out.ggml[i]->view_src);
  }
  return fill_tensors(out, MemoryRule::kContext, /*with_sources=*/false);
}

}  // namespace
