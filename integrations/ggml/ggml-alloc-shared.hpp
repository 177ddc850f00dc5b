// What the drop-in's two API generations share (ggml-alloc-shared.cpp): logging in ggml's way
// and GALLOC_DUMP's graph files. The drop-in is one translation unit (amalgamate.sh puts its
// files into one), so these have internal linkage: two packages' renamed copies of it link
// into one program.
#pragma once

#include <string>
#include <vector>

#include "galloc/buffer.hpp"
#include "galloc/graph.hpp"
#include "galloc/lifetimes.hpp"
#include "galloc/status.hpp"

#include "ggml.h"

// amalgamate.sh defines the commit the one-file drop-in was made from.
#ifdef GALLOC_REVISION
constexpr const char* kGallocRevision = GALLOC_REVISION;
#else
constexpr const char* kGallocRevision = "(built from source)";
#endif

static_assert(GGML_MAX_SRC <= galloc::kMaxSources && GGML_MAX_DIMS == galloc::kMaxDims,
              "this ggml has more sources or dimensions per tensor than galloc's graph model");

namespace {

// "FUNCTION: MESSAGE" as an error, through ggml's log (stderr for the 2023 ggml, which had none).
void log_error(const char* function, const std::string& message);
void log_error(const char* function, const galloc::Status& status);
// The exception being handled, logged as log_error does; for catch (...) at the C boundary.
void log_exception(const char* function);

// GALLOC_DUMP=DIR: `graph`, with its buffer types (`types`, and `type_of_id`: each buffer id's)
// and buffer ids, as the graph file DIR/ggml-<sequence>-<tag>.json. In a drop-in built without
// galloc's graph files, the first dump of an allocator (`dumps`, its count) logs that instead.
void dump_graph_file(const std::string& dir, const std::string& tag, const galloc::Graph& graph,
                     const std::vector<const galloc::BufferType*>& types, std::vector<int> type_of_id,
                     const galloc::BufferAssignment& assignment, int& dumps, const char* function);

}  // namespace
