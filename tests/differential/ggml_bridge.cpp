#include "ggml_bridge.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>

#include "ggml-alloc.h"
#include "ggml-backend-impl.h"
#include "ggml-backend.h"
#include "ggml-impl.h"
#include "ggml.h"

namespace galloc::ggml_bridge {

namespace {

// A planning-only ggml buffer type, configured like galloc's NullBufferType.
struct DummyType {
  testing::BufferTypeSpec spec;
  std::string name;
  ggml_backend_buffer_type buft{};
  std::vector<ggml_backend_buffer_t> live;  // in allocation order
  std::size_t base = 0;                     // fake base address of this type's buffers
};

DummyType* dummy_of(ggml_backend_buffer_type_t buft) { return static_cast<DummyType*>(buft->context); }

const char* dummy_name(ggml_backend_buffer_type_t buft) { return dummy_of(buft)->name.c_str(); }
size_t dummy_alignment(ggml_backend_buffer_type_t buft) { return dummy_of(buft)->spec.alignment; }
size_t dummy_max_size(ggml_backend_buffer_type_t buft) { return dummy_of(buft)->spec.max_size; }
size_t dummy_alloc_size(ggml_backend_buffer_type_t buft, const ggml_tensor* tensor) {
  const size_t size = ggml_nbytes(tensor);
  return size == 0 ? 0 : size + dummy_of(buft)->spec.alloc_padding;
}
bool dummy_is_host(ggml_backend_buffer_type_t) { return false; }

void dummy_free_buffer(ggml_backend_buffer_t buffer) {
  auto* type = static_cast<DummyType*>(buffer->context);
  type->live.erase(std::remove(type->live.begin(), type->live.end(), buffer), type->live.end());
}
void* dummy_get_base(ggml_backend_buffer_t buffer) {
  return reinterpret_cast<void*>(static_cast<DummyType*>(buffer->context)->base);
}
void dummy_clear(ggml_backend_buffer_t, uint8_t) {}

ggml_backend_buffer_t dummy_alloc_buffer(ggml_backend_buffer_type_t buft, size_t size) {
  DummyType* type = dummy_of(buft);
  ggml_backend_buffer_i iface{};
  iface.free_buffer = dummy_free_buffer;
  iface.get_base = dummy_get_base;
  iface.clear = dummy_clear;
  ggml_backend_buffer_t buffer = ggml_backend_buffer_init(buft, iface, type, size);
  type->live.push_back(buffer);
  return buffer;
}

std::unique_ptr<DummyType> make_dummy(const testing::BufferTypeSpec& spec, std::size_t index) {
  auto type = std::make_unique<DummyType>();
  type->spec = spec;
  type->name = "dummy" + std::to_string(index);
  type->base = (index + 1) << 40;  // far apart, aligned for any alignment used
  type->buft.iface.get_name = dummy_name;
  type->buft.iface.alloc_buffer = dummy_alloc_buffer;
  type->buft.iface.get_alignment = dummy_alignment;
  type->buft.iface.get_max_size = dummy_max_size;
  type->buft.iface.get_alloc_size = dummy_alloc_size;
  type->buft.iface.is_host = dummy_is_host;
  type->buft.device = nullptr;
  type->buft.context = type.get();
  return type;
}

// galloc op -> this ggml's op, by name (whisper.rn 0.4.0-rc.10's numbers its ops differently).
std::optional<ggml_op> ggml_op_of(Op op) {
  static const std::map<std::string, ggml_op> by_name = [] {
    std::map<std::string, ggml_op> m;
    for (int i = 0; i < GGML_OP_COUNT; ++i) m[ggml_op_name(static_cast<ggml_op>(i))] = static_cast<ggml_op>(i);
    return m;
  }();
  auto it = by_name.find(std::string(op_name(op)));
  if (it == by_name.end()) return std::nullopt;
  return it->second;
}

struct ContextFree {
  void operator()(ggml_context* ctx) const { ggml_free(ctx); }
};

}  // namespace

bool has_reserve_n_size() {
#ifdef GALLOC_GGML_WHISPER_RN_0_4_0_RC_10
  return false;
#else
  return true;
#endif
}

namespace {

// The case as ggml tensors and a ggml_cgraph, with its planning-only buffer types.
struct StockGraph {
  std::unique_ptr<ggml_context, ContextFree> ctx;
  std::vector<ggml_tensor*> tensors;
  ggml_cgraph* graph = nullptr;
  std::vector<std::unique_ptr<DummyType>> types;
  std::vector<ggml_backend_buffer_type_t> per_id;
  const int* node_ids = nullptr;
  const int* leaf_ids = nullptr;
};

// Where tensors with memory already existing point; nothing reads or writes it.
char existing_memory[64];

// Returns an error message, or "" with `out` filled.
std::string build_stock_graph(const testing::RandomCase& c, StockGraph& out) {
  const Graph& g = c.graph;
  const std::size_t n = g.tensors.size();
  ggml_init_params params{};
  params.mem_size = (n + 8) * ggml_tensor_overhead() + ggml_graph_overhead_custom(std::max<std::size_t>(n, 16), false);
  params.no_alloc = true;
  out.ctx.reset(ggml_init(params));

  out.tensors.assign(n, nullptr);
  for (std::size_t i = 0; i < n; ++i) {
    const Tensor& t = g.tensors[i];
    auto op = ggml_op_of(t.op);
    if (!op) return "this ggml has no op " + std::string(op_name(t.op));
    const int64_t ne[4] = {t.ne[0], t.ne[1], t.ne[2], t.ne[3]};
    // Create with the tensor's shape and type, then set every field the allocator reads.
    ggml_tensor* x = ggml_new_tensor(out.ctx.get(), static_cast<ggml_type>(t.type), 4, ne);
    ggml_set_name(x, t.name.c_str());
    for (int d = 0; d < 4; ++d) x->nb[d] = t.nb[static_cast<std::size_t>(d)];
    x->op = *op;
    x->flags = static_cast<int32_t>(t.flags);
    out.tensors[i] = x;
  }
  // Existing memory: ggml sees data set without a buffer ("allocated without ggml-backend").
  for (std::size_t i = 0; i < n; ++i) {
    const Tensor& t = g.tensors[i];
    ggml_tensor* x = out.tensors[i];
    for (int s = 0; s < kMaxSources; ++s) {
      const TensorId src = t.src[static_cast<std::size_t>(s)];
      x->src[s] = src == kNoTensor ? nullptr : out.tensors[static_cast<std::size_t>(src)];
    }
    if (t.view_src != kNoTensor) {
      x->view_src = out.tensors[static_cast<std::size_t>(t.view_src)];
      x->view_offs = t.view_offs;
    }
    if (t.has_memory) x->data = existing_memory;
  }

  const int size = static_cast<int>(std::max<std::size_t>(std::max(g.nodes.size(), g.leafs.size()), 16));
  out.graph = ggml_new_graph_custom(out.ctx.get(), size, false);
  for (TensorId id : g.nodes) out.graph->nodes[out.graph->n_nodes++] = out.tensors[static_cast<std::size_t>(id)];
  for (TensorId id : g.leafs) out.graph->leafs[out.graph->n_leafs++] = out.tensors[static_cast<std::size_t>(id)];

  for (std::size_t i = 0; i < c.types.size(); ++i) out.types.push_back(make_dummy(c.types[i], i));
  for (int t : c.buffer_type_of_id) out.per_id.push_back(&out.types[static_cast<std::size_t>(t)]->buft);
  out.node_ids = c.node_buffer_ids.empty() ? nullptr : c.node_buffer_ids.data();
  out.leaf_ids = c.leaf_buffer_ids.empty() ? nullptr : c.leaf_buffer_ids.data();
  return "";
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Puts every tensor back as build_stock_graph made it. ggml_gallocr_alloc_graph leaves data
// and buffer set, and a later reserve treats such tensors as allocated elsewhere: it would
// skip the whole allocation, which no application's reserve does (llama.cpp and whisper.cpp
// reserve freshly built graphs).
void unplace(const Graph& g, StockGraph& s) {
  for (std::size_t i = 0; i < g.tensors.size(); ++i) {
    ggml_tensor* x = s.tensors[i];
    x->buffer = nullptr;
    x->data = g.tensors[i].has_memory ? existing_memory : nullptr;
  }
}

}  // namespace

StockTiming time_stock(const testing::RandomCase& c, int repetitions) {
  StockTiming timing;
  StockGraph s;
  timing.error = build_stock_graph(c, s);
  if (!timing.error.empty()) return timing;
  ggml_gallocr_t galloc = ggml_gallocr_new_n(s.per_id.data(), static_cast<int>(s.per_id.size()));
  std::vector<double> reserve, alloc;
  for (int r = 0; r < repetitions; ++r) {
    unplace(c.graph, s);  // each round plans unplaced tensors, as the first does
    const auto t0 = std::chrono::steady_clock::now();
    const bool reserved = ggml_gallocr_reserve_n(galloc, s.graph, s.node_ids, s.leaf_ids);
    const auto t1 = std::chrono::steady_clock::now();
    const bool allocated = ggml_gallocr_alloc_graph(galloc, s.graph);
    const auto t2 = std::chrono::steady_clock::now();
    if (!reserved || !allocated) {
      timing.error = "stock ggml-alloc returned false";
      break;
    }
    reserve.push_back(std::chrono::duration<double>(t1 - t0).count());
    alloc.push_back(std::chrono::duration<double>(t2 - t1).count());
  }
  for (std::size_t b = 0; b < s.per_id.size(); ++b) {
    timing.total_size += ggml_gallocr_get_buffer_size(galloc, static_cast<int>(b));
  }
  ggml_gallocr_free(galloc);
  timing.reserve_seconds = median(reserve);
  timing.alloc_seconds = median(alloc);
  return timing;
}

StockResult run_stock(const testing::RandomCase& c) {
  StockResult result;
  const Graph& g = c.graph;
  const std::size_t n = g.tensors.size();
  StockGraph s;
  result.error = build_stock_graph(c, s);
  if (!result.error.empty()) return result;
  auto& tensors = s.tensors;
  auto& types = s.types;
  auto& per_id = s.per_id;
  ggml_cgraph* graph = s.graph;
  const int* node_ids = s.node_ids;
  const int* leaf_ids = s.leaf_ids;

#ifndef GALLOC_GGML_WHISPER_RN_0_4_0_RC_10
  {
    ggml_gallocr_t measure = ggml_gallocr_new_n(per_id.data(), static_cast<int>(per_id.size()));
    result.measured_sizes.resize(per_id.size());
    ggml_gallocr_reserve_n_size(measure, graph, node_ids, leaf_ids, result.measured_sizes.data());
    ggml_gallocr_free(measure);
  }
#endif

  ggml_gallocr_t galloc = ggml_gallocr_new_n(per_id.data(), static_cast<int>(per_id.size()));
  result.ok = ggml_gallocr_reserve_n(galloc, graph, node_ids, leaf_ids) && ggml_gallocr_alloc_graph(galloc, graph);
  if (!result.ok) result.error = "stock ggml-alloc returned false";

  result.tensors.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    ggml_tensor* x = tensors[i];
    if (x->buffer == nullptr || x->view_src != nullptr || g.tensors[i].has_memory) continue;
    for (std::size_t t = 0; t < types.size(); ++t) {
      auto& live = types[t]->live;
      auto it = std::find(live.begin(), live.end(), x->buffer);
      if (it == live.end()) continue;
      result.tensors[i] = {static_cast<int>(t), static_cast<int>(it - live.begin()),
                           static_cast<std::size_t>(static_cast<char*>(x->data) -
                                                    static_cast<char*>(ggml_backend_buffer_get_base(x->buffer)))};
    }
  }
  for (std::size_t b = 0; b < per_id.size(); ++b) {
    result.buffer_sizes.push_back(ggml_gallocr_get_buffer_size(galloc, static_cast<int>(b)));
  }
  for (const auto& type : types) {
    std::vector<std::size_t> sizes;
    for (ggml_backend_buffer_t buffer : type->live) sizes.push_back(ggml_backend_buffer_get_size(buffer));
    result.chunk_sizes.push_back(std::move(sizes));
  }
  ggml_gallocr_free(galloc);
  return result;
}

}  // namespace galloc::ggml_bridge
