// Renders the memory timeline of a small transformer block to HTML for the browser test.
//
//   galloc_render_sample OUT.html [STRATEGY]     (strategy: ggml, greedy, exact, best; default best)
//
// Prints what the page must contain, one "key value" a line, for timeline_browser_test.sh:
// the number of rect.storage elements, of .peak-marker lines and of panels; then the ASCII
// timeline of the same plan.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

#include "galloc/planner.hpp"
#include "galloc/timeline.hpp"
#include "galloc/validator.hpp"

namespace {

using namespace galloc;

// One pre-norm transformer layer: attention over 32 positions of width 64, then an MLP of
// width 256. Weights already have memory; only activations are planned.
Graph transformer_block() {
  constexpr std::int64_t kDim = 64, kSeq = 32, kHidden = 256;
  Graph g;
  auto weight = [&](const char* name, std::int64_t rows, std::int64_t cols) {
    Tensor t = g.new_tensor(name, DataType::F16, {rows, cols});
    t.has_memory = true;
    return g.add_leaf(std::move(t));
  };
  const TensorId inp = g.add_leaf(g.new_tensor("inp", DataType::F32, {kDim, kSeq}));
  g[inp].flags |= kFlagInput;
  const TensorId norm_w = weight("attn_norm.weight", kDim, 1);
  const TensorId wq = weight("wq", kDim, kDim);
  const TensorId wk = weight("wk", kDim, kDim);
  const TensorId wv = weight("wv", kDim, kDim);
  const TensorId wo = weight("wo", kDim, kDim);
  const TensorId ffn_norm_w = weight("ffn_norm.weight", kDim, 1);
  const TensorId w1 = weight("ffn_up", kDim, kHidden);
  const TensorId w2 = weight("ffn_down", kHidden, kDim);

  auto node = [&](const char* name, Op op, std::initializer_list<std::int64_t> ne,
                  std::initializer_list<TensorId> src) {
    return g.add_node(g.new_op(name, op, DataType::F32, ne, src));
  };
  const TensorId n1 = node("attn_norm", Op::RmsNorm, {kDim, kSeq}, {inp});
  const TensorId n1w = node("attn_norm_w", Op::Mul, {kDim, kSeq}, {n1, norm_w});
  const TensorId q = node("Qcur", Op::MulMat, {kDim, kSeq}, {wq, n1w});
  const TensorId k = node("Kcur", Op::MulMat, {kDim, kSeq}, {wk, n1w});
  const TensorId v = node("Vcur", Op::MulMat, {kDim, kSeq}, {wv, n1w});
  const TensorId kq = node("kq", Op::MulMat, {kSeq, kSeq}, {k, q});
  const TensorId kq_soft = node("kq_soft_max", Op::SoftMax, {kSeq, kSeq}, {kq});
  Tensor vt = g.new_view("Vcur_T", Op::Transpose, v, 0, {kSeq, kDim});
  vt.nb = {g[v].nb[1], g[v].nb[0], g[v].nb[2], g[v].nb[3]};
  const TensorId v_t = g.add_node(std::move(vt));
  const TensorId v_cont = node("Vcur_T_cont", Op::Cont, {kSeq, kDim}, {v_t});
  const TensorId kqv = node("kqv", Op::MulMat, {kDim, kSeq}, {v_cont, kq_soft});
  const TensorId attn = node("attn_out", Op::MulMat, {kDim, kSeq}, {wo, kqv});
  const TensorId res = node("ffn_inp", Op::Add, {kDim, kSeq}, {attn, inp});
  const TensorId n2 = node("ffn_norm", Op::RmsNorm, {kDim, kSeq}, {res});
  const TensorId n2w = node("ffn_norm_w", Op::Mul, {kDim, kSeq}, {n2, ffn_norm_w});
  const TensorId up = node("ffn_up", Op::MulMat, {kHidden, kSeq}, {w1, n2w});
  const TensorId act = node("ffn_gelu", Op::Unary, {kHidden, kSeq}, {up});
  const TensorId down = node("ffn_down", Op::MulMat, {kDim, kSeq}, {w2, act});
  const TensorId out = node("l_out", Op::Add, {kDim, kSeq}, {down, res});
  g[out].flags |= kFlagOutput;
  return g;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: %s OUT.html [STRATEGY]\n", argv[0]);
    return 2;
  }
  auto strategy = strategy_from_name(argc == 3 ? argv[2] : "best");
  if (!strategy) {
    std::fprintf(stderr, "%s\n", strategy.status().to_string().c_str());
    return 2;
  }
  const Graph graph = transformer_block();
  CpuBufferType cpu(64, kUnlimited, "CPU");
  const std::vector<const BufferType*> types{&cpu};
  PlacementOptions options;
  options.strategy = *strategy;
  auto result = plan_graph(graph, types, {}, options);
  if (!result) {
    std::fprintf(stderr, "%s\n", result.status().to_string().c_str());
    return 1;
  }
  if (auto issues = validate_placement(result->lifetimes, result->placement); !issues.empty()) {
    std::fprintf(stderr, "invalid placement: %s\n", issues[0].message.c_str());
    return 1;
  }
  HtmlTimelineOptions html;
  html.title = "galloc memory timeline: one transformer block";
  std::ofstream(argv[1]) << render_timeline_html(graph, *result, html);

  std::size_t panels = 0;
  for (const auto& chunks : result->placement.chunk_sizes) panels += chunks.size();
  std::cout << "storage_rects " << timeline_extents(result->lifetimes, result->placement).size() << "\n"
            << "peak_markers " << panels << "\n"
            << "panels " << panels << "\n"
            << "size " << result->plan.total_size() << "\n"
            << "lower_bound " << result->plan.total_lower_bound() << "\n\n"
            << draw_timeline(graph, *result);
  return 0;
}
