// The zoo's registry: every family's recipes, in a stable order.
#include "galloc/zoo.hpp"

#include <cmath>
#include <string>
#include <string_view>
#include <utility>

#include "builder.hpp"

namespace galloc::zoo {

namespace {

const std::vector<Recipe>& recipes() {
  static const std::vector<Recipe> all = [] {
    std::vector<Recipe> out;
    add_llama_recipes(out);
    add_whisper_recipes(out);
    add_unet_recipes(out);
    add_gpt2_recipes(out);
    add_cnn_recipes(out);
    add_vit_recipes(out);
    add_training_recipes(out);
    return out;
  }();
  return all;
}

// Which program each graph follows, and whether a shipped version of it plans that graph with
// its own ggml-alloc (ZooEntry::shipped).
struct Provenance {
  std::string_view prefix;  // of the graph names it covers
  std::string_view follows;
  bool shipped;
};
constexpr Provenance kProvenance[] = {
    {"llama-7b-", "llama.cpp of early 2025 (KV cache written with ggml_cpy into 1-D views)", true},
    {"llama-", "llama.cpp of 2025-26 (KV cache written with ggml_set_rows, swiglu)", true},
    {"whisper-",
     "whisper.cpp up to whisper.rn 0.4.0-rc.8 (Q/K/V copied into fresh tensors), planned by today's ggml-alloc: "
     "that version ran with the 2023 allocator, later ones permute instead of copying",
     false},
    {"unet-", "stable-diffusion.cpp's UNet", true},
    {"gpt2-", "ggml's examples/gpt-2 (main-ctx.cpp's graph)", true},
    {"cnn-", "no single program: the model from ggml's ops (conv as im2col + mul_mat, pooling)", false},
    {"vit-b16-", "no single program: a ViT from ggml's ops as ggml image encoders build one", false},
    {"vit-clip-", "clip.cpp (the LLaVA 1.5 image encoder)", true},
    {"training-", "ggml's examples/mnist and ggml-opt (forward, backward, AdamW)", true},
};

const Provenance* provenance_of(std::string_view name) {
  for (const Provenance& p : kProvenance) {
    if (name.starts_with(p.prefix)) return &p;
  }
  return nullptr;
}

std::string known_names() {
  std::string text;
  for (const Recipe& recipe : recipes()) {
    if (!text.empty()) text += ", ";
    text += recipe.name;
  }
  return text;
}

}  // namespace

std::vector<ZooEntry> list() {
  std::vector<ZooEntry> entries;
  entries.reserve(recipes().size());
  for (const Recipe& recipe : recipes()) {
    ZooEntry entry{recipe.name, recipe.description, "", false};
    if (const Provenance* p = provenance_of(recipe.name)) {
      entry.follows = p->follows;
      entry.shipped = p->shipped;
    }
    entries.push_back(std::move(entry));
  }
  return entries;
}

Result<Graph> build(std::string_view name) { return build(name, ZooOptions{}); }

namespace {

Result<Graph> build_with(std::string_view name, const ZooOptions& options, BuilderMirror* mirror) {
  if (!(options.scale > 0.0 && options.scale <= 1.0)) {  // also rejects NaN
    return invalid_argument("zoo scale must be in (0, 1], got " + std::to_string(options.scale));
  }
  for (const Recipe& recipe : recipes()) {
    if (recipe.name != name) continue;
    Result<Graph> graph = recipe.build(Scaler(options.scale), mirror);
    if (!graph.is_ok()) return graph.status();
    // A graph the zoo cannot build correctly is a bug in the zoo, not the caller's problem.
    Status valid = validate_graph(graph.value());
    if (!valid.is_ok()) return internal_error("zoo graph " + recipe.name + ": " + valid.message());
    return graph;
  }
  return invalid_argument("unknown zoo graph '" + std::string(name) + "'; known graphs: " + known_names());
}

}  // namespace

Result<Graph> build(std::string_view name, const ZooOptions& options) { return build_with(name, options, nullptr); }

Result<Graph> build(std::string_view name, const ZooOptions& options, BuilderMirror& mirror) {
  return build_with(name, options, &mirror);
}

}  // namespace galloc::zoo
