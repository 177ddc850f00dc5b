// The graph zoo: every graph builds at full size and scaled down, is a valid graph whose
// shapes follow ggml's rules, plans without placement issues, and has the node counts and
// memory totals of the program it follows.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "galloc/lifetimes.hpp"
#include "galloc/placement.hpp"
#include "galloc/plan.hpp"
#include "galloc/planner.hpp"
#include "galloc/validator.hpp"
#include "galloc/zoo.hpp"
#include "zoo/builder_mirror.hpp"

namespace galloc {
namespace {

constexpr Bytes kMiB = 1024 * 1024;
constexpr double kSmallScale = 0.1;

std::vector<std::string> zoo_names() {
  std::vector<std::string> names;
  for (const zoo::ZooEntry& entry : zoo::list()) names.push_back(entry.name);
  return names;
}

Graph build_or_fail(const std::string& name, double scale = 1.0) {
  Result<Graph> graph = zoo::build(name, {scale});
  EXPECT_TRUE(graph.is_ok()) << name << " @" << scale << ": " << graph.status().to_string();
  return graph.is_ok() ? std::move(graph).value() : Graph{};
}

std::int64_t elements(const Tensor& t) { return t.ne[0] * t.ne[1] * t.ne[2] * t.ne[3]; }

// The largest tensor the planner places: a node that is neither a view nor existing memory.
Bytes largest_planned(const Graph& graph) {
  Bytes largest = 0;
  for (TensorId id : graph.nodes) {
    const Tensor& t = graph[id];
    if (!t.is_view() && !t.has_memory) largest = std::max(largest, tensor_nbytes(t));
  }
  return largest;
}

std::size_t count_op(const Graph& graph, Op op) {
  return static_cast<std::size_t>(
      std::count_if(graph.nodes.begin(), graph.nodes.end(), [&](TensorId id) { return graph[id].op == op; }));
}

// ---- the registry ---------------------------------------------------------------------------

TEST(ZooTest, ListIsStableUniqueAndNamedFamilyVariant) {
  const std::vector<zoo::ZooEntry> first = zoo::list();
  const std::vector<zoo::ZooEntry> second = zoo::list();
  ASSERT_EQ(first.size(), second.size());
  const std::regex form("[a-z0-9]+(-[a-z0-9]+)+");
  std::set<std::string> names;
  std::set<std::string> families;
  for (std::size_t i = 0; i < first.size(); ++i) {
    EXPECT_EQ(first[i].name, second[i].name);
    EXPECT_TRUE(std::regex_match(first[i].name, form)) << first[i].name;
    EXPECT_FALSE(first[i].description.empty()) << first[i].name;
    EXPECT_FALSE(first[i].follows.empty()) << first[i].name << " names no program it follows";
    EXPECT_TRUE(names.insert(first[i].name).second) << "duplicate " << first[i].name;
    families.insert(first[i].name.substr(0, first[i].name.find('-')));
  }
  EXPECT_GE(first.size(), 14u);
  EXPECT_GE(families.size(), 6u);
  for (const char* family : {"llama", "whisper", "unet", "gpt2", "cnn", "vit", "training"}) {
    EXPECT_TRUE(families.count(family)) << family;
  }
}

// whisper.cpp's graphs in the zoo copy Q/K/V into fresh tensors, which no shipped version plans
// with today's allocator (bench/graphs has whisper.cpp's real ones); llama.cpp's are as shipped.
TEST(ZooTest, WhisperGraphsAreMarkedAsNotShippedAndLlamasAsShipped) {
  for (const zoo::ZooEntry& entry : zoo::list()) {
    if (entry.name.starts_with("whisper-")) {
      EXPECT_FALSE(entry.shipped) << entry.name;
    } else if (entry.name.starts_with("llama-")) {
      EXPECT_TRUE(entry.shipped) << entry.name;
    }
  }
}

TEST(ZooTest, UnknownNameIsAnErrorListingTheKnownNames) {
  const Result<Graph> graph = zoo::build("llama-70b-pp512");
  ASSERT_FALSE(graph.is_ok());
  EXPECT_EQ(graph.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(graph.status().message().find("llama-70b-pp512"), std::string::npos);
  for (const std::string& name : zoo_names()) {
    EXPECT_NE(graph.status().message().find(name), std::string::npos) << name;
  }
}

TEST(ZooTest, ScaleOutsideZeroToOneIsAnError) {
  for (double scale : {0.0, -0.5, 1.5, std::nan("")}) {
    const Result<Graph> graph = zoo::build("gpt2-small-tg1", {scale});
    ASSERT_FALSE(graph.is_ok()) << scale;
    EXPECT_EQ(graph.status().code(), ErrorCode::kInvalidArgument);
  }
}

TEST(ZooTest, BuildingTwiceGivesTheSameGraph) {
  for (const char* name : {"llama-3-8b-pp512", "whisper-base-encoder", "training-llama-2l"}) {
    const Graph a = build_or_fail(name, kSmallScale);
    const Graph b = build_or_fail(name, kSmallScale);
    ASSERT_EQ(a.tensors.size(), b.tensors.size()) << name;
    EXPECT_EQ(a.nodes, b.nodes) << name;
    EXPECT_EQ(a.leafs, b.leafs) << name;
    for (std::size_t i = 0; i < a.tensors.size(); ++i) {
      const Tensor& x = a.tensors[i];
      const Tensor& y = b.tensors[i];
      EXPECT_TRUE(x.name == y.name && x.op == y.op && same_layout(x, y) && x.src == y.src && x.view_src == y.view_src &&
                  x.view_offs == y.view_offs && x.flags == y.flags)
          << name << " tensor " << i;
    }
  }
}

// ---- every graph, at full size and scaled down -----------------------------------------------

class ZooGraphTest : public ::testing::TestWithParam<std::string> {};

// Shapes and strides the way ggml computes them, checked per op independently of the builder.
void expect_ggml_shapes(const Graph& graph, const std::string& name) {
  for (TensorId id : graph.nodes) {
    const Tensor& t = graph[id];
    const std::string where = name + ": " + describe_tensor(graph, id) + " (" + std::string(op_name(t.op)) + ")";
    auto src = [&](int i) -> const Tensor& { return graph[t.src[static_cast<std::size_t>(i)]]; };
    switch (t.op) {
      case Op::MulMat:
        EXPECT_EQ(src(0).ne[0], src(1).ne[0]) << where;
        EXPECT_EQ(t.ne, (std::array<std::int64_t, kMaxDims>{src(0).ne[1], src(1).ne[1], src(1).ne[2], src(1).ne[3]}))
            << where;
        EXPECT_EQ(t.type, DataType::F32) << where;
        EXPECT_EQ(t.nb, contiguous_strides(t.type, t.ne)) << where;
        break;
      case Op::Add:
      case Op::Mul:
        EXPECT_EQ(t.ne, src(0).ne) << where;
        for (int d = 0; d < kMaxDims; ++d) EXPECT_EQ(t.ne[d] % src(1).ne[d], 0) << where << " dim " << d;
        break;
      case Op::Reshape:
        EXPECT_EQ(elements(t), elements(src(0))) << where;
        EXPECT_EQ(t.nb, contiguous_strides(t.type, t.ne)) << where;
        EXPECT_TRUE(t.is_view()) << where;
        break;
      case Op::Permute:
      case Op::Transpose: {
        // the same (ne, nb) pairs, reordered
        std::vector<std::pair<std::int64_t, Bytes>> mine;
        std::vector<std::pair<std::int64_t, Bytes>> theirs;
        for (int d = 0; d < kMaxDims; ++d) {
          mine.emplace_back(t.ne[d], t.nb[d]);
          theirs.emplace_back(src(0).ne[d], src(0).nb[d]);
        }
        std::sort(mine.begin(), mine.end());
        std::sort(theirs.begin(), theirs.end());
        EXPECT_EQ(mine, theirs) << where;
        EXPECT_TRUE(t.is_view()) << where;
        break;
      }
      case Op::Cpy:
        EXPECT_EQ(elements(t), elements(src(0))) << where;
        if (t.src[1] != kNoTensor) {  // ggml_cpy: a view of the destination
          EXPECT_TRUE(t.is_view()) << where;
          EXPECT_TRUE(same_layout(t, src(1))) << where;
        }
        break;
      case Op::Cont:
        EXPECT_EQ(elements(t), elements(src(0))) << where;
        EXPECT_EQ(t.nb, contiguous_strides(t.type, t.ne)) << where;
        break;
      case Op::GetRows:
        EXPECT_EQ(t.ne[0], src(0).ne[0]) << where;
        EXPECT_EQ(t.ne[1], src(1).ne[0]) << where;
        break;
      default: break;
    }
    // A view of a view points at the root, as ggml does.
    if (t.is_view()) {
      EXPECT_FALSE(graph[t.view_src].is_view()) << where;
    }
  }
}

// Leafs are weights or caches (existing memory), inputs, views (ggml_view_tensor), or fresh
// tensors the graph writes through a CPY view of them (the leaf pattern).
void expect_leafs_are_known_kinds(const Graph& graph, const std::string& name) {
  std::set<TensorId> written;
  for (TensorId id : graph.nodes) {
    const Tensor& t = graph[id];
    if (t.op == Op::Cpy && t.is_view()) written.insert(t.view_src);
  }
  for (TensorId id : graph.leafs) {
    const Tensor& t = graph[id];
    EXPECT_EQ(t.op, Op::None) << name << ": " << describe_tensor(graph, id);
    EXPECT_TRUE(t.has_memory || t.is_input() || t.is_view() || written.count(id))
        << name << ": leaf " << describe_tensor(graph, id) << " is neither memory, input nor written";
  }
}

// Every strategy plans the graph through plan_graph (the lifetimes each strategy is meant
// for), validly, between the lower bound and the no-reuse size; best is never above ggml.
void expect_plans(const Graph& graph, const std::string& name) {
  NullBufferType type(32);
  const std::vector<const BufferType*> types{&type};
  Bytes ggml_size = 0;
  for (Strategy strategy : all_strategies()) {
    PlacementOptions options;
    options.strategy = strategy;
    options.exact.time_limit_seconds = 0.02;
    Result<PlanningResult> planned = plan_graph(graph, types, {}, options);
    ASSERT_TRUE(planned.is_ok()) << name << ": " << planned.status().to_string();
    const std::vector<PlacementIssue> issues = validate_placement(planned->lifetimes, planned->placement);
    EXPECT_TRUE(issues.empty()) << name << " (" << strategy_name(strategy) << "): " << issues.size()
                                << " issues, first: " << issues.front().message;
    const Bytes size = planned->plan.total_size();
    const Bytes lower_bound = live_lower_bound(planned->lifetimes)[0];
    EXPECT_LE(lower_bound, size) << name;
    EXPECT_LE(size, no_reuse_size(planned->lifetimes)[0]) << name;
    EXPECT_GE(lower_bound, largest_planned(graph)) << name;
    if (strategy == Strategy::kGgml) ggml_size = size;
    if (strategy == Strategy::kBest) {
      EXPECT_LE(size, ggml_size) << name << ": best above ggml";
    }
  }
}

TEST_P(ZooGraphTest, BuildsValidatesAndPlansAtFullSize) {
  const std::string& name = GetParam();
  const Graph graph = build_or_fail(name);
  ASSERT_FALSE(graph.nodes.empty()) << name;
  const Status valid = validate_graph(graph);
  ASSERT_TRUE(valid.is_ok()) << name << ": " << valid.to_string();
  expect_ggml_shapes(graph, name);
  expect_leafs_are_known_kinds(graph, name);
  // Data comes in through inputs (or, for whisper's cross graph, a view of the encoder's
  // result) and leaves through outputs (or copies into existing memory: the KV caches).
  EXPECT_TRUE(std::any_of(graph.leafs.begin(), graph.leafs.end(),
                          [&](TensorId id) { return graph[id].is_input() || graph[id].is_view(); }))
      << name << " reads nothing";
  EXPECT_TRUE(std::any_of(graph.nodes.begin(), graph.nodes.end(),
                          [&](TensorId id) {
                            const Tensor& t = graph[id];
                            return t.is_output() || ((t.op == Op::Cpy || t.op == Op::SetRows) && t.is_view() &&
                                                     graph[t.view_src].has_memory);
                          }))
      << name << " writes nothing";
  expect_plans(graph, name);
}

TEST_P(ZooGraphTest, BuildsValidatesAndPlansScaledDown) {
  const std::string& name = GetParam();
  const Graph small = build_or_fail(name, kSmallScale);
  const Graph full = build_or_fail(name);
  ASSERT_FALSE(small.nodes.empty()) << name;
  const Status valid = validate_graph(small);
  ASSERT_TRUE(valid.is_ok()) << name << ": " << valid.to_string();
  expect_ggml_shapes(small, name);
  expect_leafs_are_known_kinds(small, name);
  EXPECT_LE(small.nodes.size(), full.nodes.size()) << name;
  EXPECT_LE(largest_planned(small), largest_planned(full)) << name;
  expect_plans(small, name);
}

INSTANTIATE_TEST_SUITE_P(AllGraphs, ZooGraphTest, ::testing::ValuesIn(zoo_names()),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           std::string id = param.param;
                           std::replace(id.begin(), id.end(), '-', '_');
                           return id;
                         });

// ---- node counts at full size, derived from the programs' op sequences -----------------------

// Per-layer node counts (views are nodes, as in ggml):
//  llama legacy:  rms_norm, mul, 3 mul_mat, 3 reshape, 2 rope, K: view + cpy, V: reshape +
//                 view + transpose + cpy, 2 cache views, permute q, kq, soft_max, kqv, permute,
//                 cont, wo, add, rms_norm, mul, gate, silu, up, mul, down, add             = 34
//                 with flash attention: V view without transpose, 5 attention nodes become
//                 flash_attn_ext + reshape                                                  = 30
//  llama current: 10 as above, K: view + set_rows, V: 3 reshapes + set_rows, 2 cache views,
//                 q view, 3 permutes, kq, soft_max, kqv, permute, cont, wo, add, rms_norm,
//                 mul, gate, up, glu, down, add (the reshaped V cache is a node: set_rows
//                 reads its destination as src[2])                                           = 36
//                 with flash attention: V: view + set_rows, flash_attn_ext + reshape         = 31
//  + 6 outside the layers: embedding get_rows, 2 get_rows (output ids) in the last layer,
//    final rms_norm, mul, output mul_mat; + 1 for the legacy f16 mask cast with flash attention.
//  gpt-2: 48 a layer (norm + 2 repeat + mul + add twice, 4 linears of mul_mat + repeat + add,
//    3 qkv views, 2 cache views + 2 cpy, Q cpy + permute, K view + reshape + permute, kq, scale,
//    diag_mask, soft_max, V view + reshape + permute + cpy, kqv, permute, cpy, 2 residual adds,
//    gelu) + 9 (2 get_rows, add, final norm of 5, lm_head).
//  whisper encoder: conv stem 20 (e_pe view, mel view + cont, 2 x (im2col, 2 reshapes,
//    mul_mat, reshape, add, gelu), transpose, cont, add) + 32 a layer + 3 (final norm);
//    decoder: 54 a layer + 7; cross: 10 a layer.
//  UNet: conv 9 (im2col, 2 reshapes, mul_mat, reshape, permute, cont, bias reshape, add),
//    group norm 5, res block 36 (+9 with a projection skip), spatial transformer 104, time
//    embedding 6, upsample 10: 6 + 966 (input blocks) + 176 (middle) + 1518 (output blocks,
//    12 x (concat + 45) + 9 transformers + 3 upsamples) + 15 (out).
//  ResNet-50: conv+bn 9, stem 11, bottleneck 31 (+9 projection), 4 x 40 + 12 x 31, head 4.
//  MobileNetV2: conv+bn 3, stem 4, 1 block of 7 + 16 blocks of 11 + 10 residual adds,
//    last conv 4, head 4.
//  ViT: patch embedding 14, 40 a layer, head 6; CLIP: + pre-norm 3, 23 of 24 layers, no head.
//  training-mlp: 9 forward (4 parameters + 5 ops) + 4 loss/metrics + 10 backward + 4 AdamW.
const std::map<std::string, std::size_t>& expected_nodes() {
  static const std::map<std::string, std::size_t> counts{
      {"llama-7b-pp512", 32 * 34 + 6},
      {"llama-7b-pp2048", 32 * 34 + 6},
      {"llama-7b-tg1-kv4096", 32 * 34 + 6},
      {"llama-7b-pp512-fa", 32 * 30 + 6 + 1},
      {"llama-3-8b-pp512", 32 * 36 + 6},
      {"llama-3-8b-pp512-fa", 32 * 31 + 6},
      {"llama-3-8b-tg1-kv8192", 32 * 36 + 6},
      {"llama-tinyllama-pp512", 22 * 36 + 6},
      {"whisper-base-encoder", 20 + 6 * 32 + 3},
      {"whisper-base-cross", 6 * 10},
      {"whisper-base-decoder", 6 * 54 + 7},
      {"whisper-large-encoder", 20 + 32 * 32 + 3},
      {"whisper-large-decoder", 32 * 54 + 7},
      {"unet-sd15-32", 6 + 966 + 176 + 1518 + 15},
      {"unet-sd15-64", 6 + 966 + 176 + 1518 + 15},
      {"gpt2-small-pp1024", 12 * 48 + 9},
      {"gpt2-small-tg1", 12 * 48 + 9},
      {"cnn-resnet50", 11 + 4 * 40 + 12 * 31 + 4},
      {"cnn-mobilenetv2", 4 + 7 + 16 * 11 + 10 + 4 + 4},
      {"vit-b16-224", 14 + 12 * 40 + 6},
      {"vit-clip-l14-336", 14 + 3 + 23 * 40},
      {"training-mlp", 9 + 4 + 10 + 4},
  };
  return counts;
}

TEST(ZooTest, NodeCountsFollowTheProgramsOpSequences) {
  for (const std::string& name : zoo_names()) {
    const Graph graph = build_or_fail(name);
    const auto it = expected_nodes().find(name);
    if (it != expected_nodes().end()) {
      EXPECT_EQ(graph.nodes.size(), it->second) << name;
    } else {
      // Graphs without a closed formula: at least one node per tensor-producing step.
      EXPECT_GE(graph.nodes.size(), 100u) << name;
    }
  }
}

TEST(ZooTest, LlamaLeafsAreWeightsCachesAndInputs) {
  // 32 layers x (9 weights + K and V cache) + token_embd, output_norm, output + 4 inputs
  // (tokens, positions, mask, output ids); the current llama.cpp adds the K and V row indices.
  EXPECT_EQ(build_or_fail("llama-7b-pp512").leafs.size(), 32u * 11 + 3 + 4);
  EXPECT_EQ(build_or_fail("llama-3-8b-pp512").leafs.size(), 32u * 11 + 3 + 4 + 2);
}

TEST(ZooTest, TrainingGraphsHaveOneAdamwStepPerParameter) {
  // training-llama-2l parameters: token embedding, 9 a layer, output norm and output.
  const Graph graph = build_or_fail("training-llama-2l");
  EXPECT_EQ(count_op(graph, Op::OptStepAdamw), 1u + 2 * 9 + 2);
  EXPECT_EQ(count_op(graph, Op::SoftMaxBack), 2u);
  EXPECT_EQ(count_op(graph, Op::RmsNormBack), 2u * 2 + 1);
  EXPECT_EQ(count_op(graph, Op::SiluBack), 2u);
  EXPECT_EQ(count_op(graph, Op::RopeBack), 2u * 2);
  EXPECT_EQ(count_op(graph, Op::GetRowsBack), 1u);
  const Graph mlp = build_or_fail("training-mlp");
  EXPECT_EQ(count_op(mlp, Op::OptStepAdamw), 4u);
  EXPECT_EQ(count_op(mlp, Op::OutProd), 2u);  // the weight gradients
  std::size_t params = 0;
  for (TensorId id : mlp.nodes) params += (mlp[id].flags & kFlagParam) != 0 ? 1 : 0;
  EXPECT_EQ(params, 4u);  // parameters are nodes in ggml (op NONE, flagged param)
}

// ---- memory totals ------------------------------------------------------------------------------

struct Totals {
  Bytes largest = 0;
  Bytes lower_bound = 0;
  Bytes ggml = 0;
};

Totals totals_of(const std::string& name) {
  const Graph graph = build_or_fail(name);
  NullBufferType type(32);
  const std::vector<const BufferType*> types{&type};
  Result<GraphProblem> lifetimes = analyze_lifetimes(graph, types);
  EXPECT_TRUE(lifetimes.is_ok()) << lifetimes.status().to_string();
  if (!lifetimes.is_ok()) return {};
  Totals totals;
  totals.largest = largest_planned(graph);
  totals.lower_bound = live_lower_bound(*lifetimes)[0];
  const Placement ggml = place_ggml(*lifetimes);
  for (Bytes chunk : ggml.chunk_sizes[0]) totals.ggml += chunk;
  return totals;
}

TEST(ZooTest, LlamaTotalsAreTheLogitsAndTheAttentionScores) {
  // pp512 with a 512-cell cache: the largest activation is the f32 logits [vocab, 512]; the
  // lower bound is the logits plus the final norm output (both outputs, live to the end).
  Totals t = totals_of("llama-7b-pp512");
  EXPECT_EQ(t.largest, Bytes{32000} * 512 * 4);
  EXPECT_EQ(t.lower_bound, Bytes{32000} * 512 * 4 + Bytes{4096} * 512 * 4);
  t = totals_of("llama-3-8b-pp512");
  EXPECT_EQ(t.largest, Bytes{128256} * 512 * 4);
  EXPECT_EQ(t.lower_bound, Bytes{128256} * 512 * 4 + Bytes{4096} * 512 * 4);
  // pp2048: KQ [2048, 2048, 32] f32 (512 MiB) outgrows the logits (250 MiB).
  t = totals_of("llama-7b-pp2048");
  EXPECT_EQ(t.largest, Bytes{2048} * 2048 * 32 * 4);
  // generation: KQ [4096, 1, 32] is the largest; the whole buffer is a few MiB.
  t = totals_of("llama-7b-tg1-kv4096");
  EXPECT_EQ(t.largest, Bytes{4096} * 1 * 32 * 4);
  EXPECT_LT(t.ggml, 4 * kMiB);
  // flash attention needs no KQ, so pp512 stays at the logits.
  t = totals_of("llama-7b-pp512-fa");
  EXPECT_EQ(t.largest, Bytes{32000} * 512 * 4);
}

TEST(ZooTest, OtherFamiliesTotals) {
  // Whisper base encoder: KQ [1500, 1500, 8] f32; the fresh Q/K/V/KQV copy destinations of all
  // 6 layers are leafs, live from step 0 (f32 + f16 + f16 + f32 of 512 x 1500 each).
  Totals t = totals_of("whisper-base-encoder");
  EXPECT_EQ(t.largest, Bytes{1500} * 1500 * 8 * 4);
  EXPECT_GE(t.lower_bound, t.largest + 6 * Bytes{512} * 1500 * (4 + 2 + 2 + 4));
  // Whisper decoders (448 tokens): the logits [n_vocab, 448].
  EXPECT_EQ(totals_of("whisper-base-decoder").largest, Bytes{51865} * 448 * 4);
  EXPECT_EQ(totals_of("whisper-large-decoder").largest, Bytes{51866} * 448 * 4);
  // SD 1.5 at 64x64: self-attention scores over 4096 positions, 8 heads: 512 MiB.
  t = totals_of("unet-sd15-64");
  EXPECT_EQ(t.largest, Bytes{4096} * 4096 * 8 * 4);
  EXPECT_LT(t.ggml, 600 * kMiB);
  EXPECT_EQ(totals_of("unet-sd15-32").largest, Bytes{1024} * 1024 * 8 * 4);
  // GPT-2 pp1024: the logits [50257, 1024] f32.
  EXPECT_EQ(totals_of("gpt2-small-pp1024").largest, Bytes{50257} * 1024 * 4);
  // ResNet-50: the stem's im2col [7*7*3, 112, 112] f16.
  EXPECT_EQ(totals_of("cnn-resnet50").largest, Bytes{147} * 112 * 112 * 2);
  // ViT-B/16: attention scores [197, 197, 12] f32 vs the MLP [3072, 197] f32: the MLP.
  EXPECT_EQ(totals_of("vit-b16-224").largest, Bytes{3072} * 197 * 4);
}

// ---- the builder's mirror -------------------------------------------------------------------

// Records the calls as a replaying library sees them: each result is new (name and the
// graph-level calls return their argument or nothing), each tensor argument a result it has
// already seen.
class RecordingMirror final : public zoo::BuilderMirror {
 public:
  void on_call(const zoo::BuilderCall& call) override {
    ++calls[call.fn];
    for (TensorId t : call.tensors) {
      if (t != kNoTensor && seen.count(t) == 0) ++unknown_arguments;
    }
    if (call.fn == zoo::BuilderFn::kName) {
      if (call.result != call.tensors[0] || call.name.empty()) ++bad_results;
    } else if (call.result != kNoTensor) {
      if (!seen.insert(call.result).second) ++bad_results;
    }
  }
  std::map<zoo::BuilderFn, int> calls;
  std::set<TensorId> seen;
  int unknown_arguments = 0;
  int bad_results = 0;
};

TEST(ZooTest, MirrorSeesEachOutermostCallWithArgumentsItKnows) {
  for (const std::string& name : zoo_names()) {
    RecordingMirror mirror;
    Result<Graph> mirrored = zoo::build(name, {kSmallScale}, mirror);
    ASSERT_TRUE(mirrored.is_ok()) << name << ": " << mirrored.status().to_string();
    EXPECT_EQ(mirror.unknown_arguments, 0) << name;
    EXPECT_EQ(mirror.bad_results, 0) << name;
    EXPECT_GT(mirror.calls[zoo::BuilderFn::kExpand], 0) << name;
    // the mirror only watches: the graph is the one built without it
    const Graph plain = build_or_fail(name, kSmallScale);
    ASSERT_EQ(mirrored.value().tensors.size(), plain.tensors.size()) << name;
    EXPECT_EQ(mirrored.value().nodes, plain.nodes) << name;
    EXPECT_EQ(mirrored.value().leafs, plain.leafs) << name;
    for (std::size_t i = 0; i < plain.tensors.size(); ++i) {
      EXPECT_TRUE(same_layout(mirrored.value().tensors[i], plain.tensors[i])) << name << " tensor " << i;
    }
  }
  // Composite functions report themselves, not the calls they make.
  RecordingMirror unet;
  ASSERT_TRUE(zoo::build("unet-sd15-32", {kSmallScale}, unet).is_ok());
  EXPECT_GT(unet.calls[zoo::BuilderFn::kConv2d], 0);
  EXPECT_EQ(unet.calls[zoo::BuilderFn::kIm2col], 0);
  RecordingMirror whisper;
  ASSERT_TRUE(zoo::build("whisper-base-encoder", {kSmallScale}, whisper).is_ok());
  EXPECT_EQ(whisper.calls[zoo::BuilderFn::kConv1dPh], 2);
  EXPECT_EQ(whisper.calls[zoo::BuilderFn::kConv1d], 0);
  EXPECT_EQ(whisper.calls[zoo::BuilderFn::kIm2col], 0);
  RecordingMirror training;
  ASSERT_TRUE(zoo::build("training-mlp", {kSmallScale}, training).is_ok());
  EXPECT_EQ(training.calls[zoo::BuilderFn::kParam], 4);
  EXPECT_EQ(training.calls[zoo::BuilderFn::kWeight], 4 * 2 + 1);  // AdamW moments, the loss gradient seed
}

}  // namespace
}  // namespace galloc
