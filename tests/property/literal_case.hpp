// Literal graphs for regression tests, in the form case_to_cpp prints a counterexample:
//
//   Case c;
//   c.types = {{8, kUnlimited, 0}};   // alignment, max size, alloc padding per buffer type
//   c.id_types = {0};                 // buffer id -> type
//   c.add(kLeaf, 0, "x", "f32", {16, 1, 1, 1}, {4, 64, 64, 64}, op("NONE"), {}, -1, 0, 1, false);
//   //    list   buffer id  name type ne  nb  op  sources  view_src  view_offs  flags  has_memory
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

#include "property/graph_desc.hpp"

namespace galloc::property {

enum ListKind { kTensor, kLeaf, kNode };

inline Op op(std::string_view name) { return *op_from_name(name); }

struct Case {
  std::vector<BuiltCase::TypeSpec> types;
  std::vector<int> id_types;
  Graph graph;
  std::vector<BufferId> node_buffer_ids;
  std::vector<BufferId> leaf_buffer_ids;

  TensorId add(ListKind list, BufferId buffer, std::string name, std::string_view type,
               std::array<std::int64_t, kMaxDims> ne, std::array<Bytes, kMaxDims> nb, Op op,
               std::initializer_list<TensorId> src, TensorId view_src, Bytes view_offs, std::uint32_t flags,
               bool has_memory) {
    Tensor t;
    t.name = std::move(name);
    t.type = *data_type_from_name(type);
    t.ne = ne;
    t.nb = nb;
    t.op = op;
    std::size_t i = 0;
    for (TensorId s : src) t.src[i++] = s;
    t.view_src = view_src;
    t.view_offs = view_offs;
    t.flags = flags;
    t.has_memory = has_memory;
    switch (list) {
      case kTensor: return graph.add(std::move(t));
      case kLeaf: leaf_buffer_ids.push_back(buffer); return graph.add_leaf(std::move(t));
      case kNode: node_buffer_ids.push_back(buffer); return graph.add_node(std::move(t));
    }
    return kNoTensor;
  }

  [[nodiscard]] BuiltCase build() const {
    BuiltCase c;
    c.graph = graph;
    c.types = types;
    c.id_types = id_types;
    if (id_types.size() > 1) {
      c.node_buffer_ids = node_buffer_ids;
      c.leaf_buffer_ids = leaf_buffer_ids;
    }
    c.make_types();
    return c;
  }
};

}  // namespace galloc::property
