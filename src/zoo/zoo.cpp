// The zoo's registry: every family's recipes, in a stable order.
#include "galloc/zoo.hpp"

#include <cmath>
#include <string>

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
  for (const Recipe& recipe : recipes()) entries.push_back({recipe.name, recipe.description});
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
