#include "galloc/graph.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <vector>

#include "tensor_sources.hpp"

namespace galloc {

namespace {

struct TypeRow {
  DataType type;
  DataTypeTraits traits;
};

// Block sizes and bytes per block of ggml's types (upstream ggml, llama.rn 0.12.9).
constexpr std::array<TypeRow, 35> kTypes{{
    {DataType::F32, {"f32", 1, 4}},
    {DataType::F16, {"f16", 1, 2}},
    {DataType::Q4_0, {"q4_0", 32, 18}},
    {DataType::Q4_1, {"q4_1", 32, 20}},
    {DataType::Q5_0, {"q5_0", 32, 22}},
    {DataType::Q5_1, {"q5_1", 32, 24}},
    {DataType::Q8_0, {"q8_0", 32, 34}},
    {DataType::Q8_1, {"q8_1", 32, 36}},
    {DataType::Q2_K, {"q2_K", 256, 84}},
    {DataType::Q3_K, {"q3_K", 256, 110}},
    {DataType::Q4_K, {"q4_K", 256, 144}},
    {DataType::Q5_K, {"q5_K", 256, 176}},
    {DataType::Q6_K, {"q6_K", 256, 210}},
    {DataType::Q8_K, {"q8_K", 256, 292}},
    {DataType::IQ2_XXS, {"iq2_xxs", 256, 66}},
    {DataType::IQ2_XS, {"iq2_xs", 256, 74}},
    {DataType::IQ3_XXS, {"iq3_xxs", 256, 98}},
    {DataType::IQ1_S, {"iq1_s", 256, 50}},
    {DataType::IQ4_NL, {"iq4_nl", 32, 18}},
    {DataType::IQ3_S, {"iq3_s", 256, 110}},
    {DataType::IQ2_S, {"iq2_s", 256, 82}},
    {DataType::IQ4_XS, {"iq4_xs", 256, 136}},
    {DataType::I8, {"i8", 1, 1}},
    {DataType::I16, {"i16", 1, 2}},
    {DataType::I32, {"i32", 1, 4}},
    {DataType::I64, {"i64", 1, 8}},
    {DataType::F64, {"f64", 1, 8}},
    {DataType::IQ1_M, {"iq1_m", 256, 56}},
    {DataType::BF16, {"bf16", 1, 2}},
    {DataType::TQ1_0, {"tq1_0", 256, 54}},
    {DataType::TQ2_0, {"tq2_0", 256, 66}},
    {DataType::MXFP4, {"mxfp4", 32, 17}},
    {DataType::NVFP4, {"nvfp4", 64, 36}},
    {DataType::Q1_0, {"q1_0", 128, 18}},
    {DataType::Q2_0, {"q2_0", 64, 18}},
}};

constexpr std::array<std::string_view, static_cast<std::size_t>(Op::Count)> kOpNames{
#define GALLOC_OP_NAME(name, str) str,
    GALLOC_OP_LIST(GALLOC_OP_NAME)
#undef GALLOC_OP_NAME
};

}  // namespace

namespace {
// Indexed by ggml's type value; block_size 0 marks values ggml does not define.
using detail::kTypeSlots;
constexpr std::array<DataTypeTraits, kTypeSlots> kTypeByValue = [] {
  std::array<DataTypeTraits, kTypeSlots> table{};
  for (const TypeRow& row : kTypes) table[static_cast<std::size_t>(row.type)] = row.traits;
  return table;
}();
}  // namespace

constexpr std::array<detail::TypeSize, detail::kTypeSlots> detail::kTypeSizes = [] {
  std::array<TypeSize, kTypeSlots> table{};
  for (std::size_t i = 0; i < kTypeSlots; ++i) table[i] = {kTypeByValue[i].block_size, kTypeByValue[i].type_size};
  return table;
}();

std::optional<DataTypeTraits> data_type_traits(DataType type) {
  const auto index = static_cast<std::size_t>(type);
  if (index >= kTypeSlots || kTypeByValue[index].block_size == 0) return std::nullopt;
  return kTypeByValue[index];
}

std::optional<DataType> data_type_from_name(std::string_view name) {
  for (const TypeRow& row : kTypes) {
    if (row.traits.name == name) return row.type;
  }
  return std::nullopt;
}

std::string_view data_type_name(DataType type) {
  auto traits = data_type_traits(type);
  return traits ? traits->name : std::string_view("unknown");
}

std::string_view op_name(Op op) {
  const auto index = static_cast<std::size_t>(op);
  return index < kOpNames.size() ? kOpNames[index] : std::string_view("UNKNOWN");
}

std::optional<Op> op_from_name(std::string_view name) {
  for (std::size_t i = 0; i < kOpNames.size(); ++i) {
    if (kOpNames[i] == name) return static_cast<Op>(i);
  }
  return std::nullopt;
}

bool op_can_inplace(Op op) {
  switch (op) {
    case Op::Fill:
    case Op::Scale:
    case Op::DiagMaskZero:
    case Op::DiagMaskInf:
    case Op::Add:
    case Op::AddId:
    case Op::Add1:
    case Op::Sub:
    case Op::Mul:
    case Op::Div:
    case Op::Sqr:
    case Op::Sqrt:
    case Op::Log:
    case Op::Unary:
    case Op::Rope:
    case Op::RopeBack:
    case Op::SiluBack:
    case Op::RmsNorm:
    case Op::RmsNormBack:
    case Op::SoftMax:
    case Op::SoftMaxBack: return true;
    default: return false;
  }
}

OpSet default_inplace_ops() {
  static const OpSet ops = [] {
    OpSet set;
    for (std::size_t i = 0; i < set.size(); ++i) set[i] = op_can_inplace(static_cast<Op>(i));
    return set;
  }();
  return ops;
}

std::array<Bytes, kMaxDims> contiguous_strides(DataType type, const std::array<std::int64_t, kMaxDims>& ne) {
  const auto traits = data_type_traits(type).value_or(DataTypeTraits{"", 1, 1});
  std::array<Bytes, kMaxDims> nb{};
  nb[0] = traits.type_size;
  nb[1] = nb[0] * static_cast<Bytes>(ne[0] / traits.block_size);
  for (int i = 2; i < kMaxDims; ++i) nb[i] = nb[i - 1] * static_cast<Bytes>(ne[i - 1]);
  return nb;
}

namespace {
std::array<std::int64_t, kMaxDims> shape_of(std::initializer_list<std::int64_t> ne) {
  std::array<std::int64_t, kMaxDims> shape{1, 1, 1, 1};
  std::size_t i = 0;
  for (std::int64_t n : ne) {
    if (i < shape.size()) shape[i++] = n;
  }
  return shape;
}
}  // namespace

Tensor Graph::new_tensor(std::string name, DataType type, std::initializer_list<std::int64_t> ne) const {
  Tensor t;
  t.name = std::move(name);
  t.type = type;
  t.ne = shape_of(ne);
  t.nb = contiguous_strides(type, t.ne);
  return t;
}

Tensor Graph::new_op(std::string name, Op op, DataType type, std::initializer_list<std::int64_t> ne,
                     std::initializer_list<TensorId> sources) const {
  Tensor t = new_tensor(std::move(name), type, ne);
  t.op = op;
  std::size_t i = 0;
  for (TensorId s : sources) {
    if (i < t.src.size()) t.src[i++] = s;
  }
  return t;
}

Tensor Graph::new_view(std::string name, Op op, TensorId source, Bytes offset,
                       std::initializer_list<std::int64_t> ne) const {
  const Tensor& s = (*this)[source];
  Tensor t = new_tensor(std::move(name), s.type, ne);
  t.op = op;
  t.src[0] = source;
  t.view_src = s.is_view() ? s.view_src : source;
  t.view_offs = s.is_view() ? s.view_offs + offset : offset;
  return t;
}

TensorId Graph::add(Tensor tensor) {
  tensors.push_back(std::move(tensor));
  return static_cast<TensorId>(tensors.size() - 1);
}

TensorId Graph::add_node(Tensor tensor) {
  const TensorId id = add(std::move(tensor));
  nodes.push_back(id);
  return id;
}

TensorId Graph::add_leaf(Tensor tensor) {
  const TensorId id = add(std::move(tensor));
  leafs.push_back(id);
  return id;
}

std::optional<TensorId> Graph::find(std::string_view name) const {
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].name == name) return static_cast<TensorId>(i);
  }
  return std::nullopt;
}

std::string describe_tensor(const Graph& graph, TensorId id) {
  std::string text = "tensor " + std::to_string(id);
  if (graph.contains(id) && !graph[id].name.empty()) text += " (" + graph[id].name + ")";
  return text;
}

namespace {

// Every real tensor has ne below 2^31 and strides below 2^29: then no term of ggml_nbytes
// reaches 2^60, the sum stays far below half the address space, and checked_nbytes would pass.
bool size_cannot_overflow(const Tensor& t) {
  const auto ne_bits = static_cast<std::uint64_t>(t.ne[0] | t.ne[1] | t.ne[2] | t.ne[3]);
  const Bytes nb_bits = t.nb[0] | t.nb[1] | t.nb[2] | t.nb[3];
  return ne_bits < (std::uint64_t{1} << 31) && nb_bits < (Bytes{1} << 29);
}

// ggml_nbytes with every product checked, so absurd shapes are an error, not a wrap.
bool checked_nbytes(const Tensor& t, Bytes& out) {
  const auto index = static_cast<std::uint32_t>(t.type);
  if (index >= kTypeSlots || kTypeByValue[index].block_size == 0) return false;
  const DataTypeTraits& traits = kTypeByValue[index];
  if (t.ne[0] <= 0 || t.ne[1] <= 0 || t.ne[2] <= 0 || t.ne[3] <= 0) {
    out = 0;
    return true;
  }
  const bool blocked = traits.block_size != 1;
  Bytes total = traits.type_size;
  if (blocked) {
    if (__builtin_mul_overflow(static_cast<Bytes>(t.ne[0]), t.nb[0], &total)) return false;
    total /= static_cast<Bytes>(traits.block_size);
  }
  for (int i = blocked ? 1 : 0; i < kMaxDims; ++i) {
    Bytes term = 0;
    if (__builtin_mul_overflow(static_cast<Bytes>(t.ne[i] - 1), t.nb[i], &term)) return false;
    if (__builtin_add_overflow(total, term, &total)) return false;
  }
  // Keep every size within half the address space, as ggml's allocators assume.
  if (total > std::numeric_limits<Bytes>::max() / 2) return false;
  out = total;
  return true;
}

// The checks with their messages: the first problem in a fixed order (lists, then per tensor
// type, shape, op, size, sources, view source; then view ranges).
Status diagnose_graph(const Graph& graph) {
  const std::size_t n = graph.tensors.size();
  if (n > static_cast<std::size_t>(std::numeric_limits<TensorId>::max())) {
    return invalid_argument("graph has " + std::to_string(n) + " tensors; at most 2^31-1 are supported");
  }
  // 0: not listed, 1: leaf, 2: node (position recorded for the order check)
  std::vector<std::int64_t> node_position(n, -1);
  std::vector<char> listed(n, 0);
  for (std::size_t i = 0; i < graph.leafs.size(); ++i) {
    const TensorId id = graph.leafs[i];
    if (!graph.contains(id)) {
      return invalid_argument("leaf " + std::to_string(i) + " is tensor " + std::to_string(id) +
                              ", which is not in the graph (" + std::to_string(n) + " tensors)");
    }
    if (listed[static_cast<std::size_t>(id)]) {
      return invalid_argument(describe_tensor(graph, id) + " is listed twice among leafs and nodes");
    }
    listed[static_cast<std::size_t>(id)] = 1;
  }
  for (std::size_t i = 0; i < graph.nodes.size(); ++i) {
    const TensorId id = graph.nodes[i];
    if (!graph.contains(id)) {
      return invalid_argument("node " + std::to_string(i) + " is tensor " + std::to_string(id) +
                              ", which is not in the graph (" + std::to_string(n) + " tensors)");
    }
    if (listed[static_cast<std::size_t>(id)]) {
      return invalid_argument(describe_tensor(graph, id) + " is listed twice among leafs and nodes");
    }
    listed[static_cast<std::size_t>(id)] = 2;
    node_position[static_cast<std::size_t>(id)] = static_cast<std::int64_t>(i);
  }

  std::vector<Bytes> nbytes(n, 0);
  for (std::size_t t = 0; t < n; ++t) {
    const Tensor& tensor = graph.tensors[t];
    const auto id = static_cast<TensorId>(t);
    if (!data_type_traits(tensor.type)) {
      return invalid_argument(describe_tensor(graph, id) + ": unknown type " +
                              std::to_string(static_cast<int>(tensor.type)));
    }
    for (int d = 0; d < kMaxDims; ++d) {
      if (tensor.ne[d] < 0) {
        return invalid_argument(describe_tensor(graph, id) + ": ne[" + std::to_string(d) + "] is negative (" +
                                std::to_string(tensor.ne[d]) + ")");
      }
    }
    if (static_cast<int>(tensor.op) < 0 || tensor.op >= Op::Count) {
      return invalid_argument(describe_tensor(graph, id) + ": unknown op " +
                              std::to_string(static_cast<int>(tensor.op)));
    }
    if (!checked_nbytes(tensor, nbytes[t])) {
      return invalid_argument(describe_tensor(graph, id) + ": size overflows (ne and nb too large)");
    }
    for (int s = 0; s < kMaxSources; ++s) {
      const TensorId src = tensor.src[s];
      if (src == kNoTensor) continue;
      if (!graph.contains(src)) {
        return invalid_argument(describe_tensor(graph, id) + ": source " + std::to_string(s) + " is tensor " +
                                std::to_string(src) + ", which is not in the graph");
      }
      const std::int64_t own = node_position[t];
      const std::int64_t theirs = node_position[static_cast<std::size_t>(src)];
      if (src == id) {
        return invalid_argument(describe_tensor(graph, id) + ": source " + std::to_string(s) +
                                " is the tensor itself (a cycle)");
      }
      if (own >= 0 && theirs >= own) {
        return invalid_argument(describe_tensor(graph, id) + " (node " + std::to_string(own) + "): source " +
                                std::to_string(s) + " is " + describe_tensor(graph, src) + ", computed later at node " +
                                std::to_string(theirs) + " (a cycle, or nodes out of order)");
      }
    }
    if (tensor.view_src != kNoTensor) {
      if (!graph.contains(tensor.view_src)) {
        return invalid_argument(describe_tensor(graph, id) + ": view source is tensor " +
                                std::to_string(tensor.view_src) + ", which is not in the graph");
      }
      if (tensor.view_src == id) {
        return invalid_argument(describe_tensor(graph, id) + " is a view of itself");
      }
      if (graph[tensor.view_src].is_view()) {
        return invalid_argument(describe_tensor(graph, id) + ": view source " +
                                describe_tensor(graph, tensor.view_src) +
                                " is itself a view; point view_src at the tensor that owns the "
                                "memory and add the offsets (as ggml does)");
      }
    }
  }
  // Views must lie inside their source (sizes are known for all tensors now).
  for (std::size_t t = 0; t < n; ++t) {
    const Tensor& tensor = graph.tensors[t];
    if (tensor.view_src == kNoTensor) continue;
    const Bytes source_size = nbytes[static_cast<std::size_t>(tensor.view_src)];
    Bytes end = 0;
    if (__builtin_add_overflow(tensor.view_offs, nbytes[t], &end) || end > source_size) {
      return invalid_argument(describe_tensor(graph, static_cast<TensorId>(t)) + ": view [" +
                              std::to_string(tensor.view_offs) + ", +" + std::to_string(nbytes[t]) +
                              ") reaches past its source " + describe_tensor(graph, tensor.view_src) + " (" +
                              std::to_string(source_size) + " bytes)");
    }
  }
  return Status::ok();
}

// The same checks without the messages, for the success path (reserve runs them every call):
// true exactly when diagnose_graph finds nothing.
bool passes_graph_checks(const Graph& graph) {
  const std::size_t n = graph.tensors.size();
  if (n > static_cast<std::size_t>(std::numeric_limits<TensorId>::max())) return false;
  // Per tensor: its node position, or kLeaf / kNotListed (both below every position).
  constexpr std::int32_t kLeaf = -1;
  constexpr std::int32_t kNotListed = -2;
  std::vector<std::int32_t> position(n, kNotListed);
  for (const TensorId id : graph.leafs) {
    if (static_cast<std::uint32_t>(id) >= n || position[static_cast<std::size_t>(id)] != kNotListed) return false;
    position[static_cast<std::size_t>(id)] = kLeaf;
  }
  for (std::size_t i = 0; i < graph.nodes.size(); ++i) {
    const TensorId id = graph.nodes[i];
    if (static_cast<std::uint32_t>(id) >= n || position[static_cast<std::size_t>(id)] != kNotListed) return false;
    position[static_cast<std::size_t>(id)] = static_cast<std::int32_t>(i);
  }
  bool any_view = false;
  for (std::size_t t = 0; t < n; ++t) {
    const Tensor& tensor = graph.tensors[t];
    const auto type = static_cast<std::uint32_t>(tensor.type);
    if (type >= kTypeSlots || kTypeByValue[type].block_size == 0) return false;
    if ((tensor.ne[0] | tensor.ne[1] | tensor.ne[2] | tensor.ne[3]) < 0) return false;
    if (static_cast<std::uint32_t>(tensor.op) >= static_cast<std::uint32_t>(Op::Count)) return false;
    Bytes size = 0;
    if (!size_cannot_overflow(tensor) && !checked_nbytes(tensor, size)) return false;
    const std::int32_t own = position[t];
    bool sources_ok = true;
    detail::for_each_source(tensor, [&](int, TensorId src) {
      const auto s = static_cast<std::uint32_t>(src);
      if (s >= n || s == t) {
        sources_ok = false;
      } else if (own >= 0 && position[s] >= own) {
        sources_ok = false;
      }
    });
    if (!sources_ok) return false;
    if (tensor.view_src != kNoTensor) {
      if (static_cast<std::uint32_t>(tensor.view_src) >= n || static_cast<std::size_t>(tensor.view_src) == t)
        return false;
      if (graph.tensors[static_cast<std::size_t>(tensor.view_src)].is_view()) return false;
      any_view = true;
    }
  }
  if (!any_view) return true;
  // Every size is known not to overflow now, so the unchecked ggml_nbytes gives the same values.
  for (const Tensor& tensor : graph.tensors) {
    if (tensor.view_src == kNoTensor) continue;
    Bytes end = 0;
    if (__builtin_add_overflow(tensor.view_offs, tensor_nbytes(tensor), &end) ||
        end > tensor_nbytes(graph.tensors[static_cast<std::size_t>(tensor.view_src)])) {
      return false;
    }
  }
  return true;
}

}  // namespace

Status validate_graph(const Graph& graph) {
  if (passes_graph_checks(graph)) return Status::ok();
  return diagnose_graph(graph);
}

}  // namespace galloc
