// The galloc graph file: a graph, its buffer types and its buffer ids as JSON, so that a
// graph captured from ggml (or drawn by hand) can be planned, compared and replayed offline.
// The format is described field by field in docs/graph-format.md and by the JSON Schema in
// docs/graph-format.schema.json.
//
//   auto file = galloc::read_graph_file("llama.json");
//   if (!file) { std::puts(file.status().to_string().c_str()); return 1; }
//   auto types = galloc::make_null_buffer_types(*file);
//   auto result = galloc::plan_graph(file->graph, types.per_id, file->assignment());
//
// Reading never throws and never aborts: malformed JSON, wrong types, out-of-range ids and
// graphs that fail validate_graph all come back as kInvalidArgument with a message that names
// the JSON path ("tensors[12] (id 12, 'kq'): field 'ne' must be an array of 4 integers").
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "galloc/buffer.hpp"
#include "galloc/graph.hpp"
#include "galloc/lifetimes.hpp"
#include "galloc/status.hpp"
#include "galloc/types.hpp"

namespace galloc {

inline constexpr std::string_view kGraphFormatName = "galloc-graph";
inline constexpr int kGraphFormatVersion = 1;

// One distinct buffer type, as a device would describe it to the planner.
struct BufferTypeDesc {
  std::string name;
  Bytes alignment = 1;          // a power of two
  Bytes max_size = kUnlimited;  // "max_size" absent in the file: unlimited
  Bytes alloc_padding = 0;      // added to every non-empty tensor's alloc size
  friend bool operator==(const BufferTypeDesc& a, const BufferTypeDesc& b) {
    return a.name == b.name && a.alignment == b.alignment && a.max_size == b.max_size &&
           a.alloc_padding == b.alloc_padding;
  }
  friend bool operator!=(const BufferTypeDesc& a, const BufferTypeDesc& b) { return !(a == b); }
};

struct GraphFile {
  Graph graph;
  std::vector<BufferTypeDesc> buffer_types;  // distinct types
  // Per buffer id, the index into buffer_types of its type. Ids naming the same index share
  // one buffer type object, and so one allocator and one buffer (as in ggml_gallocr_new_n).
  std::vector<int> buffer_type_of_id;
  std::vector<BufferId> node_buffer_ids;  // per node; empty: every node in buffer id 0
  std::vector<BufferId> leaf_buffer_ids;  // per leaf; empty: every leaf in buffer id 0

  [[nodiscard]] BufferAssignment assignment() const { return {node_buffer_ids, leaf_buffer_ids}; }
};

// Planning-only buffer types for a file: one NullBufferType per desc, and the per-id list
// for GraphAllocator, analyze_lifetimes or plan_graph. `owned` must outlive `per_id`.
struct NullBufferTypes {
  std::vector<std::unique_ptr<NullBufferType>> owned;  // per desc
  std::vector<const BufferType*> per_id;               // per buffer id
};
[[nodiscard]] NullBufferTypes make_null_buffer_types(const GraphFile& file);

// Parses and checks a graph file: the JSON, every field, ids and buffer ids in range, and then
// validate_graph. Never throws.
[[nodiscard]] Result<GraphFile> read_graph_json(std::string_view text);
// Reads `path` and parses it; errors are prefixed with the path.
[[nodiscard]] Result<GraphFile> read_graph_file(const std::string& path);

// The file for a graph: one tensor per line, fields at their defaults left out (nb when
// contiguous, empty src, no view, no flags, has_memory false, max_size when unlimited,
// alloc_padding 0). Names that are not valid UTF-8 get U+FFFD for the bad bytes.
// read_graph_json(write_graph_json(f)) gives back f for every f that passes validate_graph.
[[nodiscard]] std::string write_graph_json(const GraphFile& file);
[[nodiscard]] Status write_graph_file(const std::string& path, const GraphFile& file);

}  // namespace galloc
