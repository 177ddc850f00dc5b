// Runs a galloc graph through real ggml: converts it to a ggml_cgraph, plans it with stock
// ggml-alloc on planning-only buffer types, and reads back where ggml put every tensor.
// Compiled once per ggml build (llama.rn 0.12.9's and whisper.rn 0.4.0-rc.10's); only ggml's public and backend API
// plus struct ggml_cgraph are used.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "galloc/graph.hpp"
#include "support/random_graph.hpp"

namespace galloc::ggml_bridge {

struct StockTensor {
  int type = -1;  // index of the distinct buffer type holding it; -1: not placed by ggml
  int chunk = -1;
  std::size_t offset = 0;
};

struct StockResult {
  bool ok = false;                                    // reserve and alloc_graph both returned true
  std::string error;                                  // why the case could not run (an op this ggml lacks)
  std::vector<StockTensor> tensors;                   // per galloc tensor id
  std::vector<std::size_t> buffer_sizes;              // ggml_gallocr_get_buffer_size per id
  std::vector<std::vector<std::size_t>> chunk_sizes;  // per distinct type: sizes of its buffers
  std::vector<std::size_t> measured_sizes;            // reserve_n_size per id (llama.rn 0.12.9's only)
};

// True when this ggml has the _size API (llama.rn 0.12.9's; whisper.rn 0.4.0-rc.10's has not).
[[nodiscard]] bool has_reserve_n_size();

struct StockTiming {
  std::string error;
  double reserve_seconds = 0;  // median of ggml_gallocr_reserve_n on one gallocr
  double alloc_seconds = 0;    // median of ggml_gallocr_alloc_graph right after
  std::size_t total_size = 0;  // sum of ggml_gallocr_get_buffer_size
};

// Times stock reserve and alloc_graph, `repetitions` times each, alternating.
[[nodiscard]] StockTiming time_stock(const testing::RandomCase& c, int repetitions);

// Plans the case with stock ggml-alloc (one fresh ggml_gallocr: reserve_n, then alloc_graph).
[[nodiscard]] StockResult run_stock(const testing::RandomCase& c);

}  // namespace galloc::ggml_bridge
