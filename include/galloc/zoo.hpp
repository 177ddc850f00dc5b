// The graph zoo: compute graphs of real models at real dimensions, built the way their ggml
// programs build them (llama.cpp, whisper.cpp, stable-diffusion.cpp, ggml's examples), for
// regression tests, benchmarks and the CLI.
//
//   for (const galloc::zoo::ZooEntry& entry : galloc::zoo::list()) {
//     galloc::Result<galloc::Graph> graph = galloc::zoo::build(entry.name);
//     ...
//   }
//   auto small = galloc::zoo::build("llama-7b-pp512", {.scale = 0.1});  // same ops, tiny shapes
//
// Every graph lists its nodes in ggml_build_forward_expand order and its leafs (weights, KV
// caches, inputs, fresh copy destinations) in first-visit order, with ggml's shapes and
// strides. Weights and caches have has_memory set (the planner never places them); inputs
// are flagged kFlagInput; what the program reads back (logits, the encoder output, the loss)
// is flagged kFlagOutput.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "galloc/graph.hpp"
#include "galloc/status.hpp"

namespace galloc::zoo {

struct ZooEntry {
  std::string name;         // "family-variant": "llama-7b-pp512", "whisper-base-encoder"
  std::string description;  // the model, its dimensions and what the graph is based on
  std::string follows;      // the program and version whose graph builder it follows
  // False when no shipped program plans this graph with the ggml-alloc of its time: a
  // combination of versions (whisper.cpp's fresh Q/K/V copies, which only the 2023 allocator
  // ran with, under today's allocator) or a model built from ggml's ops without one program
  // to follow. Such graphs stay out of headline figures; bench/graphs has the captured ones.
  bool shipped = true;
};

struct ZooOptions {
  // Shrinks a model for fast tests: 0 < scale <= 1, 1 is the real model. It multiplies the
  // widths (embedding and hidden sizes, heads, FFN sizes, channels, vocabulary, classes),
  // the lengths (tokens, KV cache and context sizes, audio frames, image and latent sides)
  // and the depth (layers, blocks per stage). Each result is rounded to keep the shapes valid
  // (widths stay multiples of 32 where quantised rows or group norms need it, image sides
  // multiples of the total stride) and every count stays at least 1. The graph keeps its
  // structure: the same ops in the same order, only fewer layers and smaller tensors.
  double scale = 1.0;
};

// All graphs, in a stable order (grouped by family).
[[nodiscard]] std::vector<ZooEntry> list();

// The graph of that name at full size. Unknown names are an invalid_argument error whose
// message lists the known names.
[[nodiscard]] Result<Graph> build(std::string_view name);
[[nodiscard]] Result<Graph> build(std::string_view name, const ZooOptions& options);

}  // namespace galloc::zoo
