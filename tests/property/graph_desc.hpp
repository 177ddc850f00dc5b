// A graph description that rapidcheck can generate and shrink, and the galloc graph it builds.
//
// Every field is a small integer that the builder reads modulo what is available, so any value
// of any field gives a valid graph: shrinking may drop nodes, drop sources or move a field
// toward 0 and the graph stays valid. References count back from the most recent readable
// tensor (0: the last one), so shrunk graphs become chains.
//
//   leafs:  inputs, weights (has_memory), plain leafs, "outside" tensors (sources that are
//           neither node nor leaf, allocated when first read)
//   nodes:  element-wise ops that can run in place, other ops, views (VIEW window, RESHAPE,
//           PERMUTE, TRANSPOSE) of views, writing views (CPY, SET_ROWS, SET, ACC into a tensor
//           or into a window of one, as ggml's cpy/set_rows/set_inplace/acc_inplace build
//           them) and NONE-op dependency views (ggml-backend's, never read by a later node)
//   buffers: 1-3 buffer types (alignments 1..4096, max sizes down to 16 bytes, alloc padding),
//           1-4 buffer ids that may share a type, a buffer id per node and leaf
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "galloc/buffer.hpp"
#include "galloc/graph.hpp"
#include "galloc/lifetimes.hpp"

namespace galloc::property {

struct TypeDesc {
  std::uint8_t alignment = 3;  // index into kAlignments
  std::uint8_t max_size = 0;   // index into kMaxSizes (0: unlimited)
  std::uint8_t padding = 0;    // alloc padding in bytes, mod 41
};

enum class LeafKind : std::uint8_t { kInput, kWeights, kPlain, kOutside };

struct LeafDesc {
  LeafKind kind = LeafKind::kInput;
  std::uint8_t type = 0;   // index into kTypes
  std::uint8_t shape = 0;  // index into kShapes
  bool output = false;
  std::uint8_t buffer = 0;  // buffer id, mod the number of ids
};

enum class NodeKind : std::uint8_t { kElementwise, kOther, kView, kWriteView, kDependency };

struct NodeDesc {
  NodeKind kind = NodeKind::kElementwise;
  std::uint8_t op = 0;                       // index into the kind's op list
  std::uint8_t n_src = 1;                    // 1..3 (mod)
  std::array<std::uint8_t, 3> src{0, 0, 0};  // back references into the readable tensors
  std::uint8_t layout = 0;                   // element-wise/other: < 3 copies a source's layout, else fresh
  std::uint8_t type = 0;
  std::uint8_t shape = 0;
  std::uint8_t window_offs = 0;  // VIEW windows: start and length, in elements, mod the room
  std::uint8_t window_len = 0;
  bool output = false;
  bool input = false;  // only honoured with BuildOptions::allow_input_nodes
  std::uint8_t buffer = 0;
};

struct GraphDesc {
  std::vector<TypeDesc> types;         // empty: one default type
  std::vector<std::uint8_t> id_types;  // per buffer id, the type (mod); empty: one id
  std::vector<LeafDesc> leafs;
  std::vector<NodeDesc> nodes;
};

struct BuildOptions {
  // An op node flagged input is allocated while children are still being counted; upstream
  // ggml may then take a leaf's memory for it in place and give the leaf a new address later
  // (graphs built by ggml never flag computed nodes as inputs).
  bool allow_input_nodes = false;
};

// A graph with its buffer types and buffer ids, ready for plan_graph.
struct BuiltCase {
  Graph graph;
  struct TypeSpec {
    Bytes alignment = 8;
    Bytes max_size = kUnlimited;
    Bytes padding = 0;
  };
  std::vector<TypeSpec> types;
  std::vector<int> id_types;              // per buffer id
  std::vector<BufferId> node_buffer_ids;  // empty with one id
  std::vector<BufferId> leaf_buffer_ids;

  std::vector<std::unique_ptr<NullBufferType>> owned;  // filled by make_types()
  std::vector<const BufferType*> per_id;

  void make_types();
  [[nodiscard]] BufferAssignment assignment() const { return {node_buffer_ids, leaf_buffer_ids}; }
};

[[nodiscard]] BuiltCase build_case(const GraphDesc& desc, const BuildOptions& options = {});

// The case as C++ that rebuilds it with the helpers of regressions_test.cpp, to turn a shrunk
// counterexample into a regression test by pasting.
[[nodiscard]] std::string case_to_cpp(const BuiltCase& c);

// rapidcheck prints counterexamples with this (found by argument-dependent lookup).
void showValue(const GraphDesc& desc, std::ostream& os);

}  // namespace galloc::property
