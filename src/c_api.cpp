// The C API: every entry point catches everything, so no exception crosses into C.
#include "galloc/galloc.h"

#include <exception>
#include <memory>
#include <new>
#include <string>

#include "galloc/buffer.hpp"
#include "galloc/graph.hpp"
#include "galloc/graph_allocator.hpp"
#include "galloc/shared_arena.hpp"

struct galloc_graph {
  galloc::Graph graph;
};

struct galloc_buffer_type {
  std::unique_ptr<galloc::BufferType> type;
};

struct galloc_allocator {
  galloc::GraphAllocator allocator;
};

struct galloc_arena {
  std::shared_ptr<galloc::SharedArena> arena;
};

namespace {

thread_local std::string last_error;

galloc_status to_c(galloc::ErrorCode code) {
  switch (code) {
    case galloc::ErrorCode::kOk: return GALLOC_OK;
    case galloc::ErrorCode::kInvalidArgument: return GALLOC_ERROR_INVALID_ARGUMENT;
    case galloc::ErrorCode::kOutOfMemory: return GALLOC_ERROR_OUT_OF_MEMORY;
    case galloc::ErrorCode::kInfeasible: return GALLOC_ERROR_INFEASIBLE;
    case galloc::ErrorCode::kFailedPrecondition: return GALLOC_ERROR_FAILED_PRECONDITION;
    case galloc::ErrorCode::kDeadlineExceeded: return GALLOC_ERROR_DEADLINE_EXCEEDED;
    case galloc::ErrorCode::kInternal: return GALLOC_ERROR_INTERNAL;
  }
  return GALLOC_ERROR_INTERNAL;
}

galloc_status fail(galloc_status code, std::string message) {
  last_error = std::move(message);
  return code;
}

galloc_status report(const galloc::Status& status) {
  if (status.is_ok()) return GALLOC_OK;
  return fail(to_c(status.code()), status.message());
}

// Runs `body`, turning exceptions into status codes.
template <typename Body>
galloc_status guarded(const char* function, Body&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return fail(GALLOC_ERROR_OUT_OF_MEMORY, std::string(function) + ": out of memory");
  } catch (const std::exception& e) {
    return fail(GALLOC_ERROR_INTERNAL, std::string(function) + ": " + e.what());
  } catch (...) {
    return fail(GALLOC_ERROR_INTERNAL, std::string(function) + ": unknown exception");
  }
}

galloc_status null_argument(const char* function, const char* name) {
  return fail(GALLOC_ERROR_INVALID_ARGUMENT, std::string(function) + ": " + name + " is NULL");
}

galloc_status to_tensor(const galloc_tensor_desc& desc, galloc::Tensor& out) {
  const auto type = galloc::data_type_from_name(desc.type ? desc.type : "");
  if (!type) {
    return fail(GALLOC_ERROR_INVALID_ARGUMENT,
                std::string("unknown tensor type '") + (desc.type ? desc.type : "(null)") + "'");
  }
  const auto op = galloc::op_from_name(desc.op ? desc.op : "");
  if (!op) {
    return fail(GALLOC_ERROR_INVALID_ARGUMENT, std::string("unknown op '") + (desc.op ? desc.op : "(null)") + "'");
  }
  out.name = desc.name ? desc.name : "";
  out.type = *type;
  out.op = *op;
  bool contiguous = true;
  for (int d = 0; d < galloc::kMaxDims; ++d) {
    out.ne[static_cast<std::size_t>(d)] = desc.ne[d];
    out.nb[static_cast<std::size_t>(d)] = desc.nb[d];
    contiguous = contiguous && desc.nb[d] == 0;
  }
  if (contiguous) out.nb = galloc::contiguous_strides(out.type, out.ne);
  for (int s = 0; s < galloc::kMaxSources; ++s) out.src[static_cast<std::size_t>(s)] = desc.src[s];
  out.view_src = desc.view_src;
  out.view_offs = desc.view_offs;
  out.flags = desc.flags;
  out.has_memory = desc.has_memory != 0;
  return GALLOC_OK;
}

enum class ListKind { kNone, kNode, kLeaf };

galloc_status add(const char* function, galloc_graph* graph, const galloc_tensor_desc* desc, int32_t* out_id,
                  ListKind kind) {
  return guarded(function, [&] {
    if (!graph) return null_argument(function, "graph");
    if (!desc) return null_argument(function, "desc");
    galloc::Tensor tensor;
    if (galloc_status s = to_tensor(*desc, tensor); s != GALLOC_OK) return s;
    galloc::TensorId id = 0;
    switch (kind) {
      case ListKind::kNone: id = graph->graph.add(std::move(tensor)); break;
      case ListKind::kNode: id = graph->graph.add_node(std::move(tensor)); break;
      case ListKind::kLeaf: id = graph->graph.add_leaf(std::move(tensor)); break;
    }
    if (out_id) *out_id = id;
    return GALLOC_OK;
  });
}

galloc::BufferAssignment assignment_for(const galloc::Graph& graph, const int32_t* node_ids, const int32_t* leaf_ids) {
  galloc::BufferAssignment assignment;
  if (node_ids) assignment.node_buffer_ids = {node_ids, graph.nodes.size()};
  if (leaf_ids) assignment.leaf_buffer_ids = {leaf_ids, graph.leafs.size()};
  return assignment;
}

}  // namespace

extern "C" {

const char* galloc_last_error(void) { return last_error.c_str(); }

const char* galloc_status_name(galloc_status status) {
  switch (status) {
    case GALLOC_OK: return "ok";
    case GALLOC_ERROR_INVALID_ARGUMENT: return "invalid argument";
    case GALLOC_ERROR_OUT_OF_MEMORY: return "out of memory";
    case GALLOC_ERROR_INFEASIBLE: return "infeasible";
    case GALLOC_ERROR_FAILED_PRECONDITION: return "failed precondition";
    case GALLOC_ERROR_DEADLINE_EXCEEDED: return "deadline exceeded";
    case GALLOC_ERROR_INTERNAL: return "internal error";
    default: break;
  }
  return "unknown status";
}

galloc_tensor_desc galloc_tensor_desc_default(void) {
  galloc_tensor_desc desc{};
  desc.name = nullptr;
  desc.type = "f32";
  for (int d = 0; d < GALLOC_MAX_DIMS; ++d) desc.ne[d] = 1;
  desc.op = "NONE";
  for (int s = 0; s < GALLOC_MAX_SRC; ++s) desc.src[s] = -1;
  desc.view_src = -1;
  return desc;
}

galloc_graph* galloc_graph_new(void) {
  try {
    return new galloc_graph{};
  } catch (...) {
    fail(GALLOC_ERROR_OUT_OF_MEMORY, "galloc_graph_new: out of memory");
    return nullptr;
  }
}

void galloc_graph_free(galloc_graph* graph) { delete graph; }

galloc_status galloc_graph_add_tensor(galloc_graph* graph, const galloc_tensor_desc* desc, int32_t* out_id) {
  return add("galloc_graph_add_tensor", graph, desc, out_id, ListKind::kNone);
}
galloc_status galloc_graph_add_node(galloc_graph* graph, const galloc_tensor_desc* desc, int32_t* out_id) {
  return add("galloc_graph_add_node", graph, desc, out_id, ListKind::kNode);
}
galloc_status galloc_graph_add_leaf(galloc_graph* graph, const galloc_tensor_desc* desc, int32_t* out_id) {
  return add("galloc_graph_add_leaf", graph, desc, out_id, ListKind::kLeaf);
}

galloc_status galloc_graph_counts(const galloc_graph* graph, int32_t* n_tensors, int32_t* n_nodes, int32_t* n_leafs) {
  if (!graph) return null_argument("galloc_graph_counts", "graph");
  if (n_tensors) *n_tensors = static_cast<int32_t>(graph->graph.tensors.size());
  if (n_nodes) *n_nodes = static_cast<int32_t>(graph->graph.nodes.size());
  if (n_leafs) *n_leafs = static_cast<int32_t>(graph->graph.leafs.size());
  return GALLOC_OK;
}

galloc_status galloc_graph_tensor_data(const galloc_graph* graph, int32_t tensor, void** out_data) {
  if (!graph) return null_argument("galloc_graph_tensor_data", "graph");
  if (!out_data) return null_argument("galloc_graph_tensor_data", "out_data");
  if (!graph->graph.contains(tensor)) {
    return fail(GALLOC_ERROR_INVALID_ARGUMENT,
                "galloc_graph_tensor_data: tensor " + std::to_string(tensor) + " is not in the graph");
  }
  *out_data = graph->graph[tensor].data;
  return GALLOC_OK;
}

galloc_buffer_type* galloc_buffer_type_new_cpu(size_t alignment, size_t max_size) {
  if (!galloc::is_power_of_two(alignment)) {
    fail(GALLOC_ERROR_INVALID_ARGUMENT,
         "galloc_buffer_type_new_cpu: alignment " + std::to_string(alignment) + " is not a power of two");
    return nullptr;
  }
  try {
    return new galloc_buffer_type{
        std::make_unique<galloc::CpuBufferType>(alignment, max_size == 0 ? galloc::kUnlimited : max_size)};
  } catch (...) {
    fail(GALLOC_ERROR_OUT_OF_MEMORY, "galloc_buffer_type_new_cpu: out of memory");
    return nullptr;
  }
}

galloc_buffer_type* galloc_buffer_type_new_null(size_t alignment, size_t max_size, size_t fail_nth) {
  if (!galloc::is_power_of_two(alignment)) {
    fail(GALLOC_ERROR_INVALID_ARGUMENT,
         "galloc_buffer_type_new_null: alignment " + std::to_string(alignment) + " is not a power of two");
    return nullptr;
  }
  try {
    auto type = std::make_unique<galloc::NullBufferType>(alignment, max_size == 0 ? galloc::kUnlimited : max_size);
    type->fail_allocation(fail_nth);
    return new galloc_buffer_type{std::move(type)};
  } catch (...) {
    fail(GALLOC_ERROR_OUT_OF_MEMORY, "galloc_buffer_type_new_null: out of memory");
    return nullptr;
  }
}

void galloc_buffer_type_free(galloc_buffer_type* type) { delete type; }

galloc_status galloc_graph_set_tensor_data(galloc_graph* graph, int32_t tensor, void* data) {
  return guarded("galloc_graph_set_tensor_data", [&] {
    if (!graph) return null_argument("galloc_graph_set_tensor_data", "graph");
    if (!graph->graph.contains(tensor)) {
      return fail(GALLOC_ERROR_INVALID_ARGUMENT,
                  "galloc_graph_set_tensor_data: tensor " + std::to_string(tensor) + " is not in the graph");
    }
    galloc::Tensor& t = graph->graph[tensor];
    if (!t.has_memory) {
      return fail(GALLOC_ERROR_INVALID_ARGUMENT, "galloc_graph_set_tensor_data: tensor " + std::to_string(tensor) +
                                                     " has no memory of its own (has_memory is 0): alloc places it");
    }
    t.data = data;
    return GALLOC_OK;
  });
}

galloc_arena* galloc_arena_new(const galloc_buffer_type* type, const char* name) {
  if (!type) {
    null_argument("galloc_arena_new", "type");
    return nullptr;
  }
  try {
    return new galloc_arena{std::make_shared<galloc::SharedArena>(*type->type, name ? name : "arena")};
  } catch (...) {
    fail(GALLOC_ERROR_OUT_OF_MEMORY, "galloc_arena_new: out of memory");
    return nullptr;
  }
}

void galloc_arena_free(galloc_arena* arena) { delete arena; }

galloc_status galloc_arena_size(const galloc_arena* arena, size_t* out_size) {
  return guarded("galloc_arena_size", [&] {
    if (!arena) return null_argument("galloc_arena_size", "arena");
    if (!out_size) return null_argument("galloc_arena_size", "out_size");
    *out_size = arena->arena->size();
    return GALLOC_OK;
  });
}

galloc_status galloc_arena_set_checked(galloc_arena* arena, int checked) {
  return guarded("galloc_arena_set_checked", [&] {
    if (!arena) return null_argument("galloc_arena_set_checked", "arena");
    arena->arena->set_checked(checked != 0);
    return GALLOC_OK;
  });
}

galloc_status galloc_allocator_new(galloc_buffer_type* const* types, int32_t n_types, const char* strategy,
                                   galloc_allocator** out_allocator) {
  return guarded("galloc_allocator_new", [&] {
    if (!out_allocator) return null_argument("galloc_allocator_new", "out_allocator");
    *out_allocator = nullptr;
    if (!types) return null_argument("galloc_allocator_new", "types");
    if (n_types <= 0) {
      return fail(GALLOC_ERROR_INVALID_ARGUMENT,
                  "galloc_allocator_new: n_types is " + std::to_string(n_types) + "; at least 1 is needed");
    }
    std::vector<const galloc::BufferType*> list;
    for (int32_t i = 0; i < n_types; ++i) {
      if (!types[i]) {
        return fail(GALLOC_ERROR_INVALID_ARGUMENT,
                    "galloc_allocator_new: buffer type " + std::to_string(i) + " is NULL");
      }
      list.push_back(types[i]->type.get());
    }
    galloc::GraphAllocatorOptions options;
    if (strategy) {
      auto parsed = galloc::strategy_from_name(strategy);
      if (!parsed) return report(parsed.status());
      options.placement.strategy = *parsed;
    }
    *out_allocator = new galloc_allocator{galloc::GraphAllocator(std::move(list), options)};
    return GALLOC_OK;
  });
}

void galloc_allocator_free(galloc_allocator* allocator) { delete allocator; }

galloc_status galloc_allocator_reserve(galloc_allocator* allocator, const galloc_graph* graph,
                                       const int32_t* node_buffer_ids, const int32_t* leaf_buffer_ids) {
  return guarded("galloc_allocator_reserve", [&] {
    if (!allocator) return null_argument("galloc_allocator_reserve", "allocator");
    if (!graph) return null_argument("galloc_allocator_reserve", "graph");
    return report(
        allocator->allocator.reserve(graph->graph, assignment_for(graph->graph, node_buffer_ids, leaf_buffer_ids)));
  });
}

galloc_status galloc_allocator_measure(const galloc_allocator* allocator, const galloc_graph* graph,
                                       const int32_t* node_buffer_ids, const int32_t* leaf_buffer_ids, size_t* sizes) {
  return guarded("galloc_allocator_measure", [&] {
    if (!allocator) return null_argument("galloc_allocator_measure", "allocator");
    if (!graph) return null_argument("galloc_allocator_measure", "graph");
    if (!sizes) return null_argument("galloc_allocator_measure", "sizes");
    auto measured =
        allocator->allocator.measure(graph->graph, assignment_for(graph->graph, node_buffer_ids, leaf_buffer_ids));
    if (!measured) return report(measured.status());
    for (std::size_t i = 0; i < measured->size(); ++i) sizes[i] = (*measured)[i];
    return GALLOC_OK;
  });
}

galloc_status galloc_allocator_alloc(galloc_allocator* allocator, galloc_graph* graph) {
  return guarded("galloc_allocator_alloc", [&] {
    if (!allocator) return null_argument("galloc_allocator_alloc", "allocator");
    if (!graph) return null_argument("galloc_allocator_alloc", "graph");
    return report(allocator->allocator.alloc(graph->graph));
  });
}

galloc_status galloc_allocator_buffer_size(const galloc_allocator* allocator, int32_t buffer_id, size_t* out_size) {
  return guarded("galloc_allocator_buffer_size", [&] {
    if (!allocator) return null_argument("galloc_allocator_buffer_size", "allocator");
    if (!out_size) return null_argument("galloc_allocator_buffer_size", "out_size");
    auto size = allocator->allocator.buffer_size(buffer_id);
    if (!size) return report(size.status());
    *out_size = *size;
    return GALLOC_OK;
  });
}

galloc_status galloc_allocator_join(galloc_allocator* allocator, int32_t buffer_id, galloc_arena* arena) {
  return guarded("galloc_allocator_join", [&] {
    if (!allocator) return null_argument("galloc_allocator_join", "allocator");
    if (!arena) return null_argument("galloc_allocator_join", "arena");
    return report(allocator->allocator.join(buffer_id, arena->arena));
  });
}

galloc_status galloc_allocator_check(const galloc_allocator* allocator) {
  return guarded("galloc_allocator_check", [&] {
    if (!allocator) return null_argument("galloc_allocator_check", "allocator");
    return report(allocator->allocator.check_allocation());
  });
}

galloc_status galloc_allocator_tensor_placement(const galloc_allocator* allocator, int32_t tensor, int32_t* out_buffer,
                                                int32_t* out_chunk, size_t* out_offset) {
  return guarded("galloc_allocator_tensor_placement", [&] {
    if (!allocator) return null_argument("galloc_allocator_tensor_placement", "allocator");
    const auto& plan = allocator->allocator.plan();
    if (!plan) {
      return fail(GALLOC_ERROR_FAILED_PRECONDITION, "galloc_allocator_tensor_placement: nothing reserved yet");
    }
    if (tensor < 0 || static_cast<std::size_t>(tensor) >= plan->tensors.size()) {
      return fail(GALLOC_ERROR_INVALID_ARGUMENT, "galloc_allocator_tensor_placement: tensor " + std::to_string(tensor) +
                                                     " is not in the reserved graph");
    }
    const auto& slot = plan->tensors[static_cast<std::size_t>(tensor)];
    if (out_buffer) *out_buffer = slot.buffer;
    if (out_chunk) *out_chunk = slot.chunk;
    if (out_offset) *out_offset = slot.offset;
    return GALLOC_OK;
  });
}

}  // extern "C"
