// ggml_cgraph -> galloc::Graph: the definitions of cgraph_conversion.hpp, which says what each
// function does and why. Member functions that were defined in their class keep `inline`
// here (but grow, which is noinline), and the other functions keep what their declarations
// say: inlining stays as it was.
#include "cgraph_conversion.hpp"

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
#include <utility>
#include <vector>

#include "galloc/graph.hpp"
#include "galloc/status.hpp"

#include "api_generations.hpp"

namespace {

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

inline OpTable::OpTable() {
  for (int i = 0; i < GGML_OP_COUNT; ++i) {
    const auto ggml = static_cast<ggml_op>(i);
    op[static_cast<std::size_t>(i)] = galloc::op_from_name(ggml_op_name(ggml)).value_or(galloc::Op::Custom);
  }
}

const OpTable& op_table() {
  static const OpTable table;
  return table;
}

galloc::Op op_of(ggml_op op) { return op_table().of(op); }

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

inline TypeTable::TypeTable() {
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
      if (same(static_cast<galloc::DataType>(j))) type[static_cast<std::size_t>(i)] = static_cast<galloc::DataType>(j);
    }
  }
}

const TypeTable& type_table() {
  static const TypeTable table;
  return table;
}

// ------------------------------------------------------------------ graph conversion

inline void TensorIds::clear(std::size_t expected) {
  std::size_t capacity = 64;
  while (capacity < 2 * expected + 16) capacity *= 2;
  slots_.assign(capacity, Slot{});
  size_ = 0;
}

inline TensorId TensorIds::find_or_insert(const ggml_tensor* t, TensorId next) {
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

inline TensorId TensorIds::at(const ggml_tensor* t) const {
  for (std::size_t i = index(t);; i = (i + 1) & (slots_.size() - 1)) {
    if (slots_[i].tensor == t) return slots_[i].id;
    if (slots_[i].tensor == nullptr) return galloc::kNoTensor;
  }
}

inline std::size_t TensorIds::index(const ggml_tensor* t) const {
  const auto h = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(t)) * 0x9e3779b97f4a7c15ull;
  return static_cast<std::size_t>(h >> 20) & (slots_.size() - 1);
}

void TensorIds::grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(old.size() * 2, Slot{});
  size_ = 0;
  for (const Slot& slot : old) {
    if (slot.tensor != nullptr) find_or_insert(slot.tensor, slot.id);
  }
}

inline Converted::Converted() { graph.inplace_ops = this_ggml_inplace_ops(); }

inline void Converted::clear(std::size_t expected) {
  graph.nodes.clear();
  graph.leafs.clear();
  expected = std::max(expected, ggml.size());
  ggml.clear();
  ggml.reserve(expected);
  ids.clear(expected);
}

inline TensorId Converted::add(ggml_tensor* t) {
  const auto next = static_cast<TensorId>(ggml.size());
  const TensorId id = ids.find_or_insert(t, next);
  if (id == next) ggml.push_back(t);
  return id;
}

inline ggml_tensor* Converted::ggml_of(const galloc::Tensor& tensor) const {
  const galloc::Tensor* first = graph.tensors.data();
  if (&tensor < first || &tensor >= first + graph.tensors.size()) return nullptr;
  return ggml[static_cast<std::size_t>(&tensor - first)];
}

galloc::Status type_error(const ggml_tensor* t) {
  return galloc::invalid_argument("tensor '" + std::string(t->name) + "' has a type (" + std::to_string(t->type) +
                                  ", " + (ggml_type_name(t->type) ? ggml_type_name(t->type) : "?") +
                                  ") that galloc cannot represent");
}

bool set_type(const ggml_tensor* t, galloc::Tensor& g, const TypeTable& types) {
  const auto type = types.of(t->type);
  if (!type) return false;
  g.type = *type;
  return true;
}

bool has_memory(const ggml_tensor* t, MemoryRule rule) {
  return rule == MemoryRule::kGraph ? (t->data != nullptr || t->buffer != nullptr) : t->data != nullptr;
}

void copy_name(const ggml_tensor* t, std::string& name) {
  const auto* end = static_cast<const char*>(std::memchr(t->name, '\0', sizeof t->name));
  const std::size_t length = end == nullptr ? sizeof t->name : static_cast<std::size_t>(end - t->name);
  if (name.size() == length && std::memcmp(name.data(), t->name, length) == 0) return;
  name.assign(t->name, length);
}

void fill_details(Converted& out, Details details) {
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

ggml_backend_buffer_t memory_buffer(const ggml_tensor* t) { return (t->view_src != nullptr ? t->view_src : t)->buffer; }

bool in_buffers(ggml_backend_buffer_t buffer, const ggml_backend_buffer_t* begin, const ggml_backend_buffer_t* end,
                BuffersOutside& outside) {
  if (buffer == nullptr || buffer == outside[0] || buffer == outside[1]) return false;
  if (std::find(begin, end, buffer) != end) return true;
  outside[1] = outside[0];
  outside[0] = buffer;
  return false;
}

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

bool same_lists(const ggml_cgraph* cgraph, const Converted& out) {
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

bool same_edges(const ggml_tensor* t, const Converted::Edges& edges, bool listed) {
  if (listed) {
    for (int s = 0; s < GGML_MAX_SRC; ++s) {
      if (t->src[s] != edges[static_cast<std::size_t>(s)]) return false;
    }
  }
  return t->view_src == edges[GGML_MAX_SRC];
}

void forget_placement_in_arena(ggml_tensor* t, const OwnPlacement& own, std::uint64_t conversion) {
  if (t->view_src != nullptr || (own.conversion == conversion && t->buffer == own.buffer && t->data == own.data)) {
    t->data = nullptr;
    t->buffer = nullptr;
  }
}

bool read_from_arena(ggml_tensor* t, std::size_t id, std::size_t n_leafs, std::size_t listed) {
  if (id < n_leafs || id >= listed || t->view_src != nullptr) return true;
  t->data = nullptr;
  t->buffer = nullptr;
  return false;
}

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
  BuffersOutside outside{};
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
      if (in_buffers(t->buffer, arena_begin, arena_end, outside)) forget_placement_in_arena(t, own[i], out.conversion);
      if (search && in_buffers(memory_buffer(t), arena_begin, arena_end, outside) &&
          read_from_arena(t, i, n_leafs, listed)) {
        out.in_arena.push_back(static_cast<TensorId>(i));
      }
    }
    g.has_memory = has_memory(t, MemoryRule::kGraph);
  }
  for (TensorId id : out.memory_elsewhere) out.graph[id].has_memory = true;
  if (kArena && search) {
    fill_memory_details(out);
    ++out.conversion;  // the records are spent
  }
  status = galloc::Status::ok();
  return true;
}

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
  BuffersOutside outside{};
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
        if (in_buffers(t->buffer, arena_buffers.data(), arena_end, outside))
          forget_placement_in_arena(t, record, out.conversion);
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
    if (search_all) ++out.conversion;  // the records are spent
  }
  mark_memory_elsewhere(out);
  out.edges_valid = true;
  if (details != Details::kSkip) fill_details(out, details);
  if (details == Details::kSkip && search_all) fill_memory_details(out);
  return galloc::Status::ok();
}

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
