// The graph file format: the bundled example, the documented error messages, robustness
// against malformed input, and write/read round trips that give the same plans.
#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "galloc/graph_file_gz.hpp"
#include "galloc/graph_json.hpp"
#include "galloc/planner.hpp"
#include "support/random_graph.hpp"

namespace galloc {
namespace {

std::filesystem::path repo_root() {
  // tests/unit/graph_json_test.cpp -> the repository root.
  return std::filesystem::path(__FILE__).parent_path().parent_path().parent_path();
}

std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The first ```json block of a markdown file.
std::string first_json_block(const std::string& markdown) {
  const std::string open = "```json\n";
  const auto begin = markdown.find(open);
  if (begin == std::string::npos) return {};
  const auto end = markdown.find("```", begin + open.size());
  return markdown.substr(begin + open.size(), end - begin - open.size());
}

TEST(GraphJson, BundledExampleLoads) {
  auto file = read_graph_file((repo_root() / "tests/data/example-graph.json").string());
  ASSERT_TRUE(file.is_ok()) << file.status().to_string();
  const Graph& g = file->graph;
  ASSERT_EQ(g.tensors.size(), 6u);
  EXPECT_EQ(g.nodes, (std::vector<TensorId>{2, 3, 4, 5}));
  EXPECT_EQ(g.leafs, (std::vector<TensorId>{0, 1}));
  EXPECT_EQ(g[0].name, "x");
  EXPECT_TRUE(g[0].is_input());
  EXPECT_TRUE(g[1].has_memory);
  EXPECT_EQ(g[1].type, DataType::F16);
  EXPECT_EQ(g[1].nb, (std::array<Bytes, 4>{2, 128, 8192, 8192}));
  EXPECT_EQ(g[2].op, Op::MulMat);
  EXPECT_EQ(g[2].src[0], 1);
  EXPECT_EQ(g[2].src[1], 0);
  EXPECT_EQ(g[2].src[2], kNoTensor);
  EXPECT_EQ(g[4].view_src, 3);
  EXPECT_EQ(g[4].view_offs, 256u);
  EXPECT_TRUE(g[5].is_output());
  ASSERT_EQ(file->buffer_types.size(), 1u);
  EXPECT_EQ(file->buffer_types[0], (BufferTypeDesc{"CPU", 32, kUnlimited, 0}));
  EXPECT_EQ(file->buffer_type_of_id, std::vector<int>{0});
  EXPECT_TRUE(file->node_buffer_ids.empty());

  // It plans: x (2 KiB) and h (2 KiB); g takes h's memory in place; x dies after h, so out
  // (256 B) goes where x was.
  auto types = make_null_buffer_types(*file);
  auto result = plan_graph(file->graph, types.per_id, file->assignment(), {.strategy = Strategy::kGgml});
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  EXPECT_EQ(result->plan.buffers[0].name, "CPU");
  EXPECT_EQ(result->plan.tensors[3].offset, result->plan.tensors[2].offset);
  EXPECT_EQ(result->plan.total_size(), 2048u + 2048u);
  EXPECT_EQ(result->plan.tensors[5].offset, result->plan.tensors[0].offset);
}

TEST(GraphJson, DocumentationExampleIsTheBundledFile) {
  const std::string doc = slurp(repo_root() / "docs/graph-format.md");
  const std::string block = first_json_block(doc);
  ASSERT_FALSE(block.empty()) << "docs/graph-format.md has no ```json block";
  EXPECT_EQ(block, slurp(repo_root() / "tests/data/example-graph.json"));
}

TEST(GraphJson, WriterOutputOfTheExampleIsStable) {
  auto file = read_graph_file((repo_root() / "tests/data/example-graph.json").string());
  ASSERT_TRUE(file.is_ok()) << file.status().to_string();
  const std::string text = write_graph_json(*file);
  // nb is left out where it is contiguous (row's explicit nb is), and so are empty fields.
  EXPECT_EQ(
      text,
      "{\n"
      "  \"format\": \"galloc-graph\",\n"
      "  \"version\": 1,\n"
      "  \"buffer_types\": [\n"
      "    {\"name\": \"CPU\", \"alignment\": 32}\n"
      "  ],\n"
      "  \"buffers\": [0],\n"
      "  \"tensors\": [\n"
      "    {\"id\": 0, \"name\": \"x\", \"type\": \"f32\", \"ne\": [64, 8, 1, 1], \"op\": \"NONE\", \"flags\": "
      "[\"input\"]},\n"
      "    {\"id\": 1, \"name\": \"w\", \"type\": \"f16\", \"ne\": [64, 64, 1, 1], \"op\": \"NONE\", \"has_memory\": "
      "true},\n"
      "    {\"id\": 2, \"name\": \"h\", \"type\": \"f32\", \"ne\": [64, 8, 1, 1], \"op\": \"MUL_MAT\", \"src\": [1, "
      "0]},\n"
      "    {\"id\": 3, \"name\": \"g\", \"type\": \"f32\", \"ne\": [64, 8, 1, 1], \"op\": \"UNARY\", \"src\": [2]},\n"
      "    {\"id\": 4, \"name\": \"row\", \"type\": \"f32\", \"ne\": [64, 1, 1, 1], \"op\": \"VIEW\", \"src\": [3], "
      "\"view_src\": 3, \"view_offs\": 256},\n"
      "    {\"id\": 5, \"name\": \"out\", \"type\": \"f32\", \"ne\": [64, 1, 1, 1], \"op\": \"SCALE\", \"src\": [4], "
      "\"flags\": [\"output\"]}\n"
      "  ],\n"
      "  \"nodes\": [2, 3, 4, 5],\n"
      "  \"leafs\": [0, 1]\n"
      "}\n");
}

// A valid file with one tensor replaced or one top-level field changed.
std::string with_tensor(const std::string& tensor3) {
  return R"({"format": "galloc-graph", "version": 1,
  "buffer_types": [{"name": "CPU", "alignment": 32}],
  "tensors": [
    {"id": 0, "name": "a", "type": "f32", "ne": [4, 1, 1, 1], "op": "NONE", "flags": ["input"]},
    {"id": 1, "name": "b", "type": "f32", "ne": [4, 1, 1, 1], "op": "SCALE", "src": [0]},
    {"id": 2, "name": "c", "type": "f32", "ne": [4, 1, 1, 1], "op": "ADD", "src": [0, 1]},
    )" + tensor3 +
         R"(
  ],
  "nodes": [1, 2, 3], "leafs": [0]})";
}
const std::string kGoodTensor3 =
    R"({"id": 3, "name": "kq", "type": "f32", "ne": [4, 1, 1, 1], "op": "MUL", "src": [2, 1]})";

std::string error_of(const std::string& text) {
  auto file = read_graph_json(text);
  if (file.is_ok()) return "(loaded)";
  EXPECT_EQ(file.status().code(), ErrorCode::kInvalidArgument) << file.status().message();
  return file.status().message();
}

TEST(GraphJson, TheTemplateIsValid) { EXPECT_EQ(error_of(with_tensor(kGoodTensor3)), "(loaded)"); }

// The messages docs/graph-format.md shows, word for word.
TEST(GraphJson, DocumentedErrorMessages) {
  EXPECT_EQ(
      error_of(with_tensor(R"({"id": 3, "name": "kq", "type": "f32", "ne": [4, 1, 1], "op": "MUL", "src": [2, 1]})")),
      "tensors[3] (id 3, 'kq'): field 'ne' must be an array of 4 integers, not [4,1,1]");
  EXPECT_EQ(error_of(with_tensor(R"({"id": 3, "name": "kq", "type": "f32", "ne": [4, "1", 1, 1], "op": "MUL"})")),
            "tensors[3] (id 3, 'kq'): field 'ne' must be an array of 4 integers (ne[1] is \"1\")");
  EXPECT_EQ(error_of(with_tensor(R"({"id": 3, "name": "kq", "type": "f32", "ne": [4, -1, 1, 1], "op": "MUL"})")),
            "tensors[3] (id 3, 'kq'): ne[1] is -1; sizes cannot be negative");
  EXPECT_EQ(error_of(with_tensor(R"({"id": 3, "name": "kq", "type": "f32", "ne": [4, 1, 1, 1], "op": "ADDD"})")),
            "tensors[3] (id 3, 'kq'): unknown op 'ADDD' (field 'op' takes ggml op names: \"NONE\", "
            "\"ADD\", \"MUL_MAT\", \"VIEW\", ...)");
  EXPECT_EQ(error_of(with_tensor(R"({"id": 3, "name": "kq", "type": "f33", "ne": [4, 1, 1, 1], "op": "MUL"})")),
            "tensors[3] (id 3, 'kq'): unknown type 'f33' (field 'type' takes ggml type names: \"f32\", "
            "\"f16\", \"q4_0\", \"q4_K\", ...)");
  EXPECT_EQ(error_of(with_tensor(R"({"id": 3, "name": "kq", "type": "f32", "ne": [4, 1, 1, 1]})")),
            "tensors[3] (id 3, 'kq'): missing field 'op'");
  EXPECT_EQ(error_of(with_tensor(
                R"({"id": 3, "name": "kq", "type": "f32", "ne": [4, 1, 1, 1], "op": "MUL", "src": [2, 12]})")),
            "tensors[3] (id 3, 'kq'): src[1] is tensor 12, which is not in the file (4 tensors, ids 0..3)");
  EXPECT_EQ(error_of(with_tensor(R"({"id": 7, "name": "kq", "type": "f32", "ne": [4, 1, 1, 1], "op": "MUL"})")),
            "tensors[3]: field 'id' is 7; tensor ids must be 0..n-1 in file order, so this one must be 3");
  EXPECT_EQ(error_of(with_tensor(
                R"({"id": 3, "name": "kq", "type": "f32", "ne": [4, 1, 1, 1], "op": "MUL", "flags": ["inptu"]})")),
            "tensors[3] (id 3, 'kq'): unknown flag 'inptu' (flags are \"input\", \"output\", \"param\", \"loss\")");
  EXPECT_EQ(
      error_of(with_tensor(R"({"id": 3, "name": "kq", "type": "f32", "ne": [4, 1, 1, 1], "op": "MUL", "shape": 1})")),
      "tensors[3] (id 3, 'kq'): unknown field 'shape' (known: id, name, type, ne, nb, op, src, "
      "view_src, view_offs, flags, has_memory)");
  EXPECT_EQ(
      error_of(with_tensor(
          R"({"id": 3, "name": "kq", "type": "f32", "ne": [4, 1, 1, 1], "op": "VIEW", "src": [2], "view_src": 2, "view_offs": 8})")),
      "tensor 3 (kq): view [8, +16) reaches past its source tensor 2 (c) (16 bytes)");
  EXPECT_EQ(error_of(R"({"format": "gguf", "version": 1})"),
            "not a galloc graph file: field 'format' is \"gguf\", expected \"galloc-graph\"");
  EXPECT_EQ(error_of(R"({"format": "galloc-graph", "version": 2})"),
            "graph file: unsupported version 2 (this reader reads version 1)");
  EXPECT_EQ(error_of(R"({"format": "galloc-graph", "version": 1, "buffer_types": [{"name": "GPU", "alignment": 48}]})"),
            "buffer_types[0] ('GPU'): alignment 48 is not a power of two");
  EXPECT_EQ(
      error_of(
          R"({"format": "galloc-graph", "version": 1, "buffer_types": [{"name": "GPU", "alignment": 32, "max_size": -1}]})"),
      "buffer_types[0] ('GPU'): field 'max_size' is -1; it cannot be negative");
  EXPECT_EQ(
      error_of(
          R"({"format": "galloc-graph", "version": 1, "buffer_types": [{"name": "GPU", "alignment": 32, "max_size": 18446744073709551616}]})"),
      "buffer_types[0] ('GPU'): field 'max_size' must be an integer from 0 to 2^64-1, not 1.8446744073709552e+19");
  EXPECT_EQ(
      error_of(
          R"({"format": "galloc-graph", "version": 1, "buffer_types": [{"name": "CPU", "alignment": 32}], "buffers": [0, 1]})"),
      "buffers[1]: 1 is not a buffer type index (1 buffer types, indices 0..0)");
  EXPECT_EQ(error_of(R"({"format": "galloc-graph", "version": 1, "buffer_types": [{"name": "CPU", "alignment": 32}],
                        "tensors": [], "nodes": [], "leafs": [], "node_buffer_ids": [0]})"),
            "graph file: field 'node_buffer_ids' has 1 entries for 0 nodes");
  EXPECT_EQ(error_of(R"({"format": "galloc-graph", "version": 1, "buffer_types": [{"name": "CPU", "alignment": 32}],
                        "tensors": [], "nodes": [0], "leafs": []})"),
            "nodes[0]: entry is tensor 0, which is not in the file (0 tensors, ids 0..0)");
  EXPECT_EQ(error_of(R"({"format": "galloc-graph", "version": 1, "format": "galloc-graph"})"),
            "graph file: the key 'format' appears twice in one object");
  EXPECT_EQ(error_of(R"({"format": "galloc-graph", "version": 1, "buffer_types": [{"name": "CPU", "alignment": 32}],
                        "tensors": [], "nodes": [], "leafs": [], "extra": 1})"),
            "graph file: unknown field 'extra' (known: format, version, buffer_types, buffers, tensors, "
            "nodes, leafs, node_buffer_ids, leaf_buffer_ids, inplace_ops, node_groups, "
            "inplace_across_buffers, inplace_through_views)");
  EXPECT_EQ(error_of(R"({"format": "galloc-graph", "version": 1, "buffer_types": [{"name": "CPU", "alignment": 32}],
                        "tensors": [], "nodes": [], "leafs": [], "inplace_ops": ["ADD", "ADDD"]})"),
            "graph file: inplace_ops[1]: unknown op 'ADDD'");
  EXPECT_EQ(error_of("{\"format\": \"galloc-graph\", "),
            "not valid JSON: parse error at line 1, column 28: syntax error while parsing object key - "
            "unexpected end of input; expected string literal");
}

TEST(GraphJson, ValidateGraphRunsAfterLoading) {
  // Node 1 reads node 2, which is computed after it.
  const std::string text = R"({"format": "galloc-graph", "version": 1,
    "buffer_types": [{"name": "CPU", "alignment": 32}],
    "tensors": [
      {"id": 0, "name": "a", "type": "f32", "ne": [4, 1, 1, 1], "op": "NONE"},
      {"id": 1, "name": "b", "type": "f32", "ne": [4, 1, 1, 1], "op": "SCALE", "src": [2]},
      {"id": 2, "name": "c", "type": "f32", "ne": [4, 1, 1, 1], "op": "SCALE", "src": [0]}],
    "nodes": [1, 2], "leafs": [0]})";
  EXPECT_EQ(error_of(text),
            "tensor 1 (b) (node 0): source 0 is tensor 2 (c), computed later at node 1 (a cycle, or "
            "nodes out of order)");
}

TEST(GraphJson, MalformedInputIsAnErrorNotACrash) {
  // Bad UTF-8 in a name.
  EXPECT_NE(
      error_of(with_tensor(
                   "{\"id\": 3, \"name\": \"k\xff\xfeq\", \"type\": \"f32\", \"ne\": [4, 1, 1, 1], \"op\": \"MUL\"}"))
          .find("not valid JSON: parse error"),
      std::string::npos);
  // Deep nesting.
  EXPECT_EQ(error_of(std::string(100000, '[') + std::string(100000, ']')),
            "not valid for this format: JSON nested deeper than 64 levels (at byte 64)");
  // Huge and negative sizes.
  EXPECT_EQ(error_of(with_tensor(
                R"({"id": 3, "name": "kq", "type": "f32", "ne": [4, 1, 1, 99999999999999999999], "op": "MUL"})")),
            "tensors[3] (id 3, 'kq'): field 'ne' must be an array of 4 integers (ne[3] is 1e+20)");
  EXPECT_EQ(error_of(with_tensor(
                R"({"id": 3, "name": "kq", "type": "f32", "ne": [4, 1, 1, 9223372036854775808], "op": "MUL"})")),
            "tensors[3] (id 3, 'kq'): ne[3] is 9223372036854775808, above 9223372036854775807");
  EXPECT_EQ(error_of(with_tensor(
                R"({"id": 3, "name": "kq", "type": "f32", "ne": [4, 1, 1, 1], "nb": [4, 16, 16, -16], "op": "MUL"})")),
            "tensors[3] (id 3, 'kq'): nb[3] is -16; it cannot be negative");
  EXPECT_EQ(error_of(with_tensor(
                R"({"id": 3, "name": "kq", "type": "f32", "ne": [4, 1, 1, 1], "nb": [4, 16, 16, 2.5], "op": "MUL"})")),
            "tensors[3] (id 3, 'kq'): nb[3] must be an integer from 0 to 2^64-1, not 2.5");
  // Sizes that overflow when multiplied: validate_graph's message.
  EXPECT_EQ(error_of(with_tensor(
                R"({"id": 3, "name": "kq", "type": "f32", "ne": [4, 1, 1, 9223372036854775807], "op": "MUL"})")),
            "tensor 3 (kq): size overflows (ne and nb too large)");
  // Wrong types everywhere.
  EXPECT_EQ(error_of("[]"), "not a galloc graph file: the top level must be an object, not a array");
  EXPECT_EQ(error_of(""),
            "not valid JSON: parse error at line 1, column 1: syntax error while parsing value - "
            "unexpected end of input; expected '[', '{', or a literal");
  EXPECT_EQ(
      error_of(with_tensor(R"({"id": 3, "name": "kq", "type": "f32", "ne": [4, 1, 1, 1], "op": "MUL", "src": "2"})")),
      "tensors[3] (id 3, 'kq'): field 'src' must be an array, not a string");
  EXPECT_EQ(error_of(with_tensor(
                R"({"id": 3, "name": "kq", "type": "f32", "ne": [4, 1, 1, 1], "op": "MUL", "has_memory": 1})")),
            "tensors[3] (id 3, 'kq'): field 'has_memory' must be true or false, not a number");
  EXPECT_EQ(error_of(with_tensor(R"({"id": 3, "name": 5, "type": "f32", "ne": [4, 1, 1, 1], "op": "MUL"})")),
            "tensors[3] (id 3): field 'name' must be a string, not a number");
  EXPECT_EQ(error_of(with_tensor(R"([3])")), "tensors[3] must be an object, not a array");
}

TEST(GraphJson, UnsignedSixtyFourBitSizesAreAccepted) {
  const std::string text = R"({"format": "galloc-graph", "version": 1,
    "buffer_types": [{"name": "big", "alignment": 9223372036854775808, "max_size": 18446744073709551615}],
    "tensors": [], "nodes": [], "leafs": []})";
  auto file = read_graph_json(text);
  ASSERT_TRUE(file.is_ok()) << file.status().to_string();
  EXPECT_EQ(file->buffer_types[0].alignment, Bytes{1} << 63);
  EXPECT_EQ(file->buffer_types[0].max_size, kUnlimited);
}

// Every prefix of the example, and random byte edits of it, load or fail cleanly.
TEST(GraphJson, MutatedFilesNeverCrash) {
  const std::string good = slurp(repo_root() / "tests/data/example-graph.json");
  for (std::size_t cut = 0; cut <= good.find_last_of('}'); ++cut) {
    auto file = read_graph_json(std::string_view(good).substr(0, cut));
    EXPECT_FALSE(file.is_ok()) << "prefix of " << cut << " bytes loaded";
  }
  std::mt19937_64 rng(7);
  const std::string alphabet = "{}[]\",:0123456789-e.nulltruefalse \xff\x80";
  for (int i = 0; i < 3000; ++i) {
    std::string text = good;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const std::size_t at = rng() % text.size();
      const char c = alphabet[rng() % alphabet.size()];
      switch (rng() % 3) {
        case 0: text[at] = c; break;
        case 1: text.insert(at, 1, c); break;
        default: text.erase(at, 1); break;
      }
    }
    auto file = read_graph_json(text);
    if (file.is_ok()) {
      auto types = make_null_buffer_types(*file);
      auto planned = plan_graph(file->graph, types.per_id, file->assignment());
      (void)planned;
    } else {
      EXPECT_FALSE(file.status().message().empty());
    }
  }
}

GraphFile file_of(const testing::RandomCase& c) {
  GraphFile file;
  file.graph = c.graph;
  for (std::size_t i = 0; i < c.types.size(); ++i) {
    file.buffer_types.push_back(
        {"type" + std::to_string(i), c.types[i].alignment, c.types[i].max_size, c.types[i].alloc_padding});
  }
  file.buffer_type_of_id = c.buffer_type_of_id;
  file.node_buffer_ids = c.node_buffer_ids;
  file.leaf_buffer_ids = c.leaf_buffer_ids;
  return file;
}

void expect_same_graph(const Graph& a, const Graph& b, std::uint64_t seed) {
  ASSERT_EQ(a.tensors.size(), b.tensors.size()) << "seed " << seed;
  for (std::size_t i = 0; i < a.tensors.size(); ++i) {
    const Tensor& x = a.tensors[i];
    const Tensor& y = b.tensors[i];
    EXPECT_EQ(x.name, y.name) << "seed " << seed << " tensor " << i;
    EXPECT_EQ(x.type, y.type) << "seed " << seed << " tensor " << i;
    EXPECT_EQ(x.ne, y.ne) << "seed " << seed << " tensor " << i;
    EXPECT_EQ(x.nb, y.nb) << "seed " << seed << " tensor " << i;
    EXPECT_EQ(x.op, y.op) << "seed " << seed << " tensor " << i;
    EXPECT_EQ(x.src, y.src) << "seed " << seed << " tensor " << i;
    EXPECT_EQ(x.view_src, y.view_src) << "seed " << seed << " tensor " << i;
    EXPECT_EQ(x.view_offs, y.view_offs) << "seed " << seed << " tensor " << i;
    EXPECT_EQ(x.flags, y.flags) << "seed " << seed << " tensor " << i;
    EXPECT_EQ(x.has_memory, y.has_memory) << "seed " << seed << " tensor " << i;
  }
  EXPECT_EQ(a.nodes, b.nodes) << "seed " << seed;
  EXPECT_EQ(a.leafs, b.leafs) << "seed " << seed;
}

TEST(GraphJson, RoundTripGivesTheSameGraphAndTheSamePlans) {
  for (std::uint64_t seed = 0; seed < 300; ++seed) {
    const auto c = testing::random_case(seed);
    const GraphFile original = file_of(c);
    const std::string text = write_graph_json(original);
    auto loaded = read_graph_json(text);
    ASSERT_TRUE(loaded.is_ok()) << "seed " << seed << ": " << loaded.status().to_string() << "\n" << text;
    expect_same_graph(original.graph, loaded->graph, seed);
    EXPECT_EQ(loaded->buffer_types, original.buffer_types) << "seed " << seed;
    EXPECT_EQ(loaded->buffer_type_of_id, original.buffer_type_of_id) << "seed " << seed;
    EXPECT_EQ(loaded->node_buffer_ids, original.node_buffer_ids) << "seed " << seed;
    EXPECT_EQ(loaded->leaf_buffer_ids, original.leaf_buffer_ids) << "seed " << seed;
    EXPECT_EQ(write_graph_json(*loaded), text) << "seed " << seed;

    auto want_types = c.make_buffer_types();
    auto got_types = make_null_buffer_types(*loaded);
    for (Strategy strategy : all_strategies()) {
      // The exact search runs on a tenth of the seeds, with a short budget.
      if (strategy == Strategy::kExact && seed % 10 != 0) continue;
      PlacementOptions options{.strategy = strategy};
      options.exact.time_limit_seconds = 0.01;
      auto want = plan_graph(c.graph, want_types.per_id, {c.node_buffer_ids, c.leaf_buffer_ids}, options);
      auto got = plan_graph(loaded->graph, got_types.per_id, loaded->assignment(), options);
      ASSERT_TRUE(want.is_ok() && got.is_ok()) << "seed " << seed;
      EXPECT_EQ(want->plan.tensors, got->plan.tensors) << "seed " << seed << " " << strategy_name(strategy);
      ASSERT_EQ(want->plan.buffers.size(), got->plan.buffers.size());
      for (std::size_t b = 0; b < want->plan.buffers.size(); ++b) {
        EXPECT_EQ(want->plan.buffers[b].chunk_sizes, got->plan.buffers[b].chunk_sizes)
            << "seed " << seed << " " << strategy_name(strategy) << " buffer " << b;
      }
    }
  }
}

// A graph whose in-place ops are not the default list carries them in the file; a default
// one writes no field.
TEST(GraphJson, InplaceOpsRoundTrip) {
  GraphFile file;
  file.buffer_types.push_back({"CPU", 32, kUnlimited});
  const TensorId x = file.graph.add_leaf(file.graph.new_tensor("x", DataType::F32, {8}));
  file.graph.add_node(file.graph.new_op("y", Op::Clamp, DataType::F32, {8}, {x}));
  EXPECT_EQ(write_graph_json(file).find("inplace_ops"), std::string::npos);

  file.graph.inplace_ops.reset();
  file.graph.inplace_ops.set(static_cast<std::size_t>(Op::Add));
  file.graph.inplace_ops.set(static_cast<std::size_t>(Op::Clamp));
  const std::string text = write_graph_json(file);
  EXPECT_NE(text.find(R"("inplace_ops": ["ADD", "CLAMP"])"), std::string::npos) << text;
  auto loaded = read_graph_json(text);
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  EXPECT_EQ(loaded->graph.inplace_ops, file.graph.inplace_ops);
}

// Node groups (a parse order with barriers) travel in the file; a graph without them writes no field.
TEST(GraphJson, NodeGroupsRoundTrip) {
  GraphFile file;
  file.buffer_types.push_back({"CPU", 32, kUnlimited});
  const TensorId x = file.graph.add_leaf(file.graph.new_tensor("x", DataType::F32, {8}));
  const TensorId y = file.graph.add_node(file.graph.new_op("y", Op::Scale, DataType::F32, {8}, {x}));
  file.graph.add_node(file.graph.new_op("z", Op::Scale, DataType::F32, {8}, {y}));
  EXPECT_EQ(write_graph_json(file).find("node_groups"), std::string::npos);

  file.graph.node_groups = {0, 1};
  const std::string text = write_graph_json(file);
  EXPECT_NE(text.find(R"("node_groups": [0, 1])"), std::string::npos) << text;
  auto loaded = read_graph_json(text);
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  EXPECT_EQ(loaded->graph.node_groups, file.graph.node_groups);

  file.graph.inplace_across_buffers = false;
  auto within = read_graph_json(write_graph_json(file));
  ASSERT_TRUE(within.is_ok()) << within.status().to_string();
  EXPECT_FALSE(within->graph.inplace_across_buffers);
  file.graph.inplace_through_views = true;
  auto through = read_graph_json(write_graph_json(file));
  ASSERT_TRUE(through.is_ok()) << through.status().to_string();
  EXPECT_TRUE(through->graph.inplace_through_views);

  std::string short_list = text;
  short_list.replace(short_list.find("[0, 1]"), 6, "[0]");
  EXPECT_FALSE(read_graph_json(short_list).is_ok());
}

TEST(GraphJson, WriteAndReadAFile) {
  const auto c = testing::random_case(42);
  const GraphFile original = file_of(c);
  const auto path = std::filesystem::temp_directory_path() / "galloc_graph_json_test.json";
  ASSERT_TRUE(write_graph_file(path.string(), original).is_ok());
  auto loaded = read_graph_file(path.string());
  std::filesystem::remove(path);
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  expect_same_graph(original.graph, loaded->graph, 42);

  auto missing = read_graph_file("/nonexistent/graph.json");
  ASSERT_FALSE(missing.is_ok());
  EXPECT_EQ(missing.status().message(), "/nonexistent/graph.json: cannot open the file");
}

// bench/graphs keeps its captures gzip'd: read_graph_file_any reads them as the plain file, and
// a broken one is an error that names it.
TEST(GraphJson, ReadsAGzippedFileAndNamesABrokenOne) {
  const GraphFile original = file_of(testing::random_case(43));
  const std::string text = write_graph_json(original);
  const auto path = std::filesystem::temp_directory_path() / "galloc_graph_json_test_gz.json.gz";
  gzFile out = gzopen(path.string().c_str(), "wb");
  ASSERT_NE(out, nullptr);
  ASSERT_EQ(gzwrite(out, text.data(), static_cast<unsigned>(text.size())), static_cast<int>(text.size()));
  ASSERT_EQ(gzclose(out), Z_OK);
  auto loaded = read_graph_file_any(path.string());
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  expect_same_graph(original.graph, loaded->graph, 43);

  std::filesystem::resize_file(path, std::filesystem::file_size(path) / 2);
  auto truncated = read_graph_file_any(path.string());
  std::filesystem::remove(path);
  ASSERT_FALSE(truncated.is_ok());
  EXPECT_EQ(truncated.status().message().rfind(path.string() + ": not a readable gzip file", 0), 0u)
      << truncated.status().message();

  auto missing = read_graph_file_any("/nonexistent/graph.json.gz");
  ASSERT_FALSE(missing.is_ok());
  EXPECT_EQ(missing.status().message(), "/nonexistent/graph.json.gz: cannot open the file");
}

TEST(GraphJson, NullBufferTypesShareObjectsPerDesc) {
  GraphFile file;
  file.buffer_types = {{"CPU", 64, kUnlimited, 0}, {"GPU", 256, 4096, 32}};
  file.buffer_type_of_id = {1, 0, 1};
  auto types = make_null_buffer_types(file);
  ASSERT_EQ(types.owned.size(), 2u);
  ASSERT_EQ(types.per_id.size(), 3u);
  EXPECT_EQ(types.per_id[0], types.per_id[2]);
  EXPECT_NE(types.per_id[0], types.per_id[1]);
  EXPECT_EQ(types.per_id[0]->name(), "GPU");
  EXPECT_EQ(types.per_id[0]->alignment(), 256u);
  EXPECT_EQ(types.per_id[0]->max_size(), 4096u);
  Graph g;
  const Tensor t = g.new_tensor("t", DataType::F32, {10});
  EXPECT_EQ(types.per_id[0]->alloc_size(t), 40u + 32u);
  EXPECT_EQ(types.per_id[1]->alloc_size(t), 40u);
}

}  // namespace
}  // namespace galloc
