// galloc's drop-in for ggml's ggml-alloc.c: the whole public API of ggml-alloc.h on top of
// libgalloc. It adds no planning logic of its own: it converts a ggml_cgraph into a
// galloc::Graph (cgraph_conversion.cpp), lets galloc::GraphAllocator plan it, and applies the
// plan with ggml's own backend calls, in upstream's order.
//
// amalgamate.sh writes it as one file, ggml-alloc.cpp, which is compiled in place of
// ggml-alloc.c: galloc's core, the drop-in's headers, this file (what the API generations
// share), then ggml-alloc-2024.cpp (ggml-alloc.h from late 2024 on) and ggml-alloc-2023.cpp
// (the 2023 ggml-alloc.h of ggml_allocr_*). Which generation a ggml has is detected from its headers at
// compile time (api_generations.hpp), never from a version string; the other compiles to
// nothing.
//
//   GALLOC_STRATEGY=NAME                     placement strategy by name, as `galloc strategies`
//                                            lists them (default best; ggml reproduces
//                                            upstream's addresses and buffer sizes exactly)
//   GALLOC_SHARE=groups|1|0                  which ggml_gallocr share compute buffers: those in
//                                            share groups (galloc-ggml.h; the default, or
//                                            GALLOC_SHARE_DEFAULT's at compile time), every
//                                            one of the process, or none
//   GALLOC_SHARE_CHECK=1                     shared buffers poison what each alloc takes over
//   GALLOC_DUMP=DIR                          write every reserved graph to DIR as galloc JSON

#include "ggml-alloc-shared.hpp"

#include "ggml-impl.h"
#include "ggml.h"

#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "galloc/buffer.hpp"
#include "galloc/graph.hpp"
#include "galloc/status.hpp"

#include "api_generations.hpp"
#include "dropin_env.hpp"

namespace {

void log_error(const char* function, const std::string& message) {
#if GALLOC_GGML_2023_API
  std::fprintf(stderr, "%s: %s\n", function, message.c_str());
#else
  GGML_LOG_ERROR("%s: %s\n", function, message.c_str());
#endif
}

void log_error(const char* function, const galloc::Status& status) { log_error(function, status.to_string()); }

void log_exception(const char* function) {
  try {
    throw;
  } catch (const std::bad_alloc&) {
    log_error(function, "out of memory (galloc)");
  } catch (const std::exception& e) {
    log_error(function, std::string("galloc: ") + e.what());
  } catch (...) {
    log_error(function, "galloc: unknown exception");
  }
}

void dump_graph_file(const std::string& dir, const std::string& tag, const galloc::Graph& graph,
                     const std::vector<const galloc::BufferType*>& types, std::vector<int> type_of_id,
                     const galloc::BufferAssignment& assignment, int& dumps, const char* function) {
#ifdef GALLOC_DROPIN_JSON
  ++dumps;
  galloc::GraphFile file;
  file.graph = graph;
  // a device's per-tensor alloc size cannot be written down: the file assumes none
  for (const galloc::BufferType* type : types) {
    file.buffer_types.push_back({type->name(), type->alignment(), type->max_size(), 0});
  }
  file.buffer_type_of_id = std::move(type_of_id);
  file.node_buffer_ids.assign(assignment.node_buffer_ids.begin(), assignment.node_buffer_ids.end());
  file.leaf_buffer_ids.assign(assignment.leaf_buffer_ids.begin(), assignment.leaf_buffer_ids.end());
  if (galloc::Status s = write_dump(dir, tag, file); !s) log_error(function, s);
#else
  (void)dir, (void)tag, (void)graph, (void)types, (void)type_of_id, (void)assignment;
  if (dumps++ == 0) log_error(function, "GALLOC_DUMP is set, but this drop-in was built without galloc's graph files");
#endif
}

}  // namespace
