// A galloc graph file made into a ggml_cgraph again: every tensor with its type, shape,
// strides, op, sources, view and flags, the nodes and leafs in the file's order. What ggml-alloc
// reads of a graph is all there (ggml_op_can_inplace reads the op, nothing reads op params),
// so stock ggml-alloc and the drop-in plan the replayed graph as they planned the captured one,
// up to the ops each ggml version may compute in place. ggml_bench_support.cpp replays
// bench/graphs this way.
//
// Tensors the file marks as having memory, and tensors the graph reads without computing them
// (neither node nor leaf: another graph's output), get addresses in `memory`, a buffer the
// caller makes; a view of such a tensor gets its address as ggml gives it (data set, no
// buffer).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "galloc/graph_json.hpp"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-impl.h"  // struct ggml_cgraph (leafs)
#include "ggml.h"

namespace galloc::dropin_test {

struct ReplayedGraph {
  ggml_context* ctx = nullptr;  // no_alloc: the tensors and the graph
  ggml_cgraph* graph = nullptr;
  std::vector<ggml_tensor*> tensors;   // by galloc tensor id
  std::vector<ggml_tensor*> external;  // the tensors that get memory, roots only
  std::string error;                   // why the file cannot be replayed, when graph is null

  ReplayedGraph() = default;
  ReplayedGraph(const ReplayedGraph&) = delete;
  ReplayedGraph& operator=(const ReplayedGraph&) = delete;
  ~ReplayedGraph() {
    if (ctx != nullptr) ggml_free(ctx);
  }
};

// ggml's op of the name galloc writes (ggml_op_name's), or GGML_OP_COUNT when this ggml has none
inline ggml_op ggml_op_named(std::string_view name) {
  for (int op = 0; op < GGML_OP_COUNT; ++op) {
    if (name == ggml_op_name(static_cast<ggml_op>(op))) return static_cast<ggml_op>(op);
  }
  return GGML_OP_COUNT;
}

// Builds the graph of `file`; on failure `error` says why and `graph` stays null.
inline void replay_graph_file(const galloc::GraphFile& file, ReplayedGraph& out) {
  const galloc::Graph& g = file.graph;
  const std::size_t n = g.tensors.size();
  const std::size_t graph_size = std::max<std::size_t>(GGML_DEFAULT_GRAPH_SIZE, g.nodes.size() + g.leafs.size());
  ggml_init_params params{};
  params.mem_size = n * ggml_tensor_overhead() + ggml_graph_overhead_custom(graph_size, false);
  params.no_alloc = true;
  out.ctx = ggml_init(params);
  out.tensors.assign(n, nullptr);
  for (std::size_t id = 0; id < n; ++id) {
    const galloc::Tensor& t = g.tensors[id];
    ggml_tensor* x = ggml_new_tensor(out.ctx, static_cast<ggml_type>(t.type), GGML_MAX_DIMS, t.ne.data());
    ggml_set_name(x, t.name.c_str());
    if (t.nb[0] != 0) {
      for (int d = 0; d < GGML_MAX_DIMS; ++d) x->nb[d] = t.nb[static_cast<std::size_t>(d)];
    }
    const ggml_op op = ggml_op_named(galloc::op_name(t.op));
    if (op == GGML_OP_COUNT) {
      out.error =
          "op " + std::string(galloc::op_name(t.op)) + " of tensor " + std::to_string(id) + " is not in this ggml";
      return;
    }
    x->op = op;
    x->flags = static_cast<int32_t>(t.flags);
    out.tensors[id] = x;
  }
  std::vector<bool> in_graph(n, false);
  for (galloc::TensorId id : g.nodes) in_graph[static_cast<std::size_t>(id)] = true;
  for (galloc::TensorId id : g.leafs) in_graph[static_cast<std::size_t>(id)] = true;
  for (std::size_t id = 0; id < n; ++id) {
    const galloc::Tensor& t = g.tensors[id];
    ggml_tensor* x = out.tensors[id];
    for (std::size_t s = 0; s < galloc::kMaxSources && s < GGML_MAX_SRC; ++s) {
      if (t.src[s] != galloc::kNoTensor) x->src[s] = out.tensors[static_cast<std::size_t>(t.src[s])];
    }
    if (t.is_view()) {
      x->view_src = out.tensors[static_cast<std::size_t>(t.view_src)];
      x->view_offs = t.view_offs;
    } else if (t.has_memory || !in_graph[id]) {
      out.external.push_back(x);
    }
  }
  out.graph = ggml_new_graph_custom(out.ctx, graph_size, false);
  for (galloc::TensorId id : g.nodes) ggml_graph_add_node(out.graph, out.tensors[static_cast<std::size_t>(id)]);
  for (galloc::TensorId id : g.leafs)
    out.graph->leafs[out.graph->n_leafs++] = out.tensors[static_cast<std::size_t>(id)];
}

// After the external tensors got their addresses: a view of one gets its own, as ggml_view_*
// gives it when its source has data (data set, buffer left for ggml-alloc to fill in).
inline void address_views_of_external(ReplayedGraph& replayed) {
  for (ggml_tensor* x : replayed.tensors) {
    if (x->view_src != nullptr && x->view_src->data != nullptr) {
      x->data = static_cast<char*>(x->view_src->data) + x->view_offs;
    }
  }
}

}  // namespace galloc::dropin_test
