// Where the allocator put every tensor of a graph, as one hash: the `layout` lines of the
// drop-in programs, which compare.cmake requires to match stock with GALLOC_STRATEGY=ggml.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "test_support.hpp"
// ggml-backend.h through the internal (system) header, as the programs include it: it trips
// -Wshadow
#include "ggml-backend-impl.h"
#include "ggml-impl.h"  // struct ggml_cgraph (leafs)
#include "ggml.h"

namespace galloc::dropin_test {

// Every tensor of the graph (leafs, then nodes): which buffer (in order of first appearance)
// and which offset inside it, hashed.
inline std::string layout_hash(ggml_cgraph* gf) {
  std::vector<ggml_backend_buffer_t> seen;
  std::string text;
  auto add = [&](const ggml_tensor* t) {
    if (t->buffer == nullptr || t->data == nullptr) {
      text += "-;";
      return;
    }
    auto it = std::find(seen.begin(), seen.end(), t->buffer);
    if (it == seen.end()) it = seen.insert(seen.end(), t->buffer);
    const auto offset =
        static_cast<const char*>(t->data) - static_cast<const char*>(ggml_backend_buffer_get_base(t->buffer));
    text += std::to_string(it - seen.begin()) + ":" + std::to_string(offset) + ";";
  };
  for (int i = 0; i < gf->n_leafs; ++i) add(gf->leafs[i]);
  for (int i = 0; i < ggml_graph_n_nodes(gf); ++i) add(ggml_graph_node(gf, i));
  return hex(fnv1a(text.data(), text.size()));
}

}  // namespace galloc::dropin_test
