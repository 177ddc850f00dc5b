// Graph files that may be gzip'd: bench/graphs keeps its captures as FILE.json.gz. Apart from
// galloc/graph_json.hpp because it needs zlib, which the core and the one-file drop-in (which
// takes graph_json.cpp for GALLOC_DUMP) do without.
//
//   auto file = galloc::read_graph_file_any("bench/graphs/llama-rn-0.12.9-llama-3.1-8b-ctx4096-tg-attn.json.gz");
#pragma once

#include <string>

#include "galloc/graph_json.hpp"
#include "galloc/status.hpp"

namespace galloc {

// Reads the graph file at `path`, gunzipping it first when the name ends in ".gz"; errors are
// prefixed with the path (a truncated or corrupt .gz: "PATH: not a readable gzip file (...)").
[[nodiscard]] Result<GraphFile> read_graph_file_any(const std::string& path);

}  // namespace galloc
