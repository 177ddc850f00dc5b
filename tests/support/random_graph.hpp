// Random graphs in ggml's style for differential and property tests: views of views,
// in-place chains, inputs, outputs, existing memory, several buffer types with node/leaf
// buffer ids, small max sizes that force chunks, sizes off the alignment.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "galloc/buffer.hpp"
#include "galloc/graph.hpp"

namespace galloc::testing {

struct BufferTypeSpec {
  Bytes alignment = 8;
  Bytes max_size = kUnlimited;
  Bytes alloc_padding = 0;  // added to every non-empty tensor's size
};

struct RandomCase {
  std::uint64_t seed = 0;
  Graph graph;
  std::vector<BufferTypeSpec> types;      // distinct buffer types
  std::vector<int> buffer_type_of_id;     // buffer id -> index into types (ids may share a type)
  std::vector<BufferId> node_buffer_ids;  // empty when there is a single buffer id
  std::vector<BufferId> leaf_buffer_ids;

  // galloc buffer types for the case, one object per distinct type, and the per-id list.
  struct Types {
    std::vector<std::unique_ptr<NullBufferType>> owned;
    std::vector<const BufferType*> per_id;
  };
  [[nodiscard]] Types make_buffer_types() const;
};

struct RandomGraphOptions {
  int max_nodes = 40;
  int max_leafs = 8;
  int max_buffer_ids = 3;
  bool allow_small_max_size = true;
};

[[nodiscard]] RandomCase random_case(std::uint64_t seed, const RandomGraphOptions& options = {});

}  // namespace galloc::testing
