// Every zoo graph built with ggml's own API. The zoo's builder reports each call its model
// files make (galloc::zoo::BuilderMirror); GgmlMirror makes the same call to ggml
// (ggml_mul_mat, ggml_view_2d, ggml_conv_2d, ...), so one run builds a galloc::Graph and the
// ggml_cgraph of the same model side by side. Linked twice, like dropin_graphs.cpp: against
// libggml-stock.a (upstream's ggml-alloc.c) and libggml-galloc.a (galloc's drop-in).
//
//   zoo_ggml [check]     for each graph: the ggml graph is the zoo's graph (node for node: op,
//                        type, ne, nb, sources, view source and offset, flags; leaf for leaf),
//                        then at a small scale, with random weights and inputs, computed by the
//                        CPU backend through ggml_gallocr. Prints `exact` (output hashes),
//                        `size` (compute buffer) and `layout` lines for compare.cmake.
//   zoo_ggml bench [N]   every graph at real dimensions, nothing computed: weights in a buffer
//                        without memory, compute buffers without memory; ggml_gallocr_reserve
//                        and ggml_gallocr_alloc_graph timed (median of N, default 15). Prints
//                        `bench NAME nodes=.. buffer=.. reserve_us=.. alloc_us=.. bound=..` lines
//                        that zoo_bench.cmake puts side by side (bound: the live lower bound).
//   zoo_ggml bench [N] --files FILE...   the same for graph files (bench/graphs' captures),
//                        replayed through ggml's API (graph_file_ggml.hpp); one bench line each
//   zoo_ggml ... --filter SUBSTRING   only the graphs whose name contains it
//
// Built a third time with GALLOC_PAIRED (galloc_zoo_ggml_llama-rn-0.12.9_paired: stock ggml-alloc.c and
// the drop-in renamed by paired_dropin.cpp, in one program), `bench N --files FILE...` times
// stock, the drop-in's `ggml`, its `best` and `best` in a share group on each graph by turns and
// prints `pair` lines with galloc / stock ratios (shared / best for the last), then their
// geometric means.
#include <algorithm>
#include <array>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "galloc/graph_file_gz.hpp"
#include "galloc/planner.hpp"
#include "galloc/zoo.hpp"
#include "ggml-alloc.h"
#include "ggml-backend-impl.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml-impl.h"  // struct ggml_cgraph (leafs)
#include "ggml.h"
#include "graph_file_ggml.hpp"
#include "layout_hash.hpp"
#include "test_support.hpp"
#include "zoo/builder_mirror.hpp"

namespace {

using namespace galloc::dropin_test;

using galloc::kNoTensor;
using galloc::TensorId;
namespace zoo = galloc::zoo;

// ------------------------------------------------------------------ the mirror

ggml_type to_ggml(galloc::DataType type) { return static_cast<ggml_type>(static_cast<int>(type)); }

ggml_unary_op to_ggml(zoo::UnaryOp op) {
  switch (op) {
    case zoo::UnaryOp::kGelu: return GGML_UNARY_OP_GELU;
    case zoo::UnaryOp::kSilu: return GGML_UNARY_OP_SILU;
    case zoo::UnaryOp::kRelu: return GGML_UNARY_OP_RELU;
    case zoo::UnaryOp::kStep: return GGML_UNARY_OP_STEP;
    case zoo::UnaryOp::kTanh: return GGML_UNARY_OP_TANH;
    case zoo::UnaryOp::kNone: break;
  }
  fail("unary op without a kind");
}

// What an integer input indexes, so that random inputs stay valid.
struct InputUse {
  std::int64_t bound = 0;  // get_rows / set_rows / get_rows_back: indices below this
  bool adamw = false;      // opt_step_adamw's hyper-parameters
};

class GgmlMirror final : public zoo::BuilderMirror {
 public:
  static constexpr std::size_t kGraphSize = 65536;
  static constexpr std::size_t kMaxTensors = 3 * kGraphSize;

  GgmlMirror() {
    ggml_init_params p{};
    p.mem_size = kMaxTensors * ggml_tensor_overhead();
    p.no_alloc = true;
    weights_ctx_ = ggml_init(p);
    p.mem_size += ggml_graph_overhead_custom(kGraphSize, false);
    graph_ctx_ = ggml_init(p);
    check(weights_ctx_ != nullptr && graph_ctx_ != nullptr, "ggml_init");
    gf_ = ggml_new_graph_custom(graph_ctx_, kGraphSize, false);
  }
  ~GgmlMirror() override {
    ggml_free(graph_ctx_);
    ggml_free(weights_ctx_);
  }
  GgmlMirror(const GgmlMirror&) = delete;
  GgmlMirror& operator=(const GgmlMirror&) = delete;

  ggml_context* weights_ctx() const { return weights_ctx_; }
  ggml_context* graph_ctx() const { return graph_ctx_; }
  ggml_cgraph* graph() const { return gf_; }
  const std::vector<ggml_tensor*>& inputs() const { return inputs_; }
  const std::vector<ggml_tensor*>& outputs() const { return outputs_; }
  InputUse use_of(const ggml_tensor* t) const {
    auto it = uses_.find(t);
    return it == uses_.end() ? InputUse{} : it->second;
  }

  // The first builder function this ggml does not have (whisper.rn 0.4.0-rc.10's): empty if none.
  const std::string& unsupported() const { return unsupported_; }

  void on_call(const zoo::BuilderCall& c) override {
    if (!unsupported_.empty()) return;  // the graph cannot be built here: stop
    ggml_tensor* r = make(c);
    if (!unsupported_.empty()) return;
    if (c.result == kNoTensor) return;
    const auto id = static_cast<std::size_t>(c.result);
    if (tensors_.size() <= id) tensors_.resize(id + 1, nullptr);
    tensors_[id] = r;
  }

 private:
  ggml_tensor* t(const zoo::BuilderCall& c, int i) const {
    const TensorId id = c.tensors[static_cast<std::size_t>(i)];
    if (id == kNoTensor) return nullptr;
    check(static_cast<std::size_t>(id) < tensors_.size() && tensors_[static_cast<std::size_t>(id)] != nullptr,
          "builder tensor " + std::to_string(id) + " has no ggml tensor");
    return tensors_[static_cast<std::size_t>(id)];
  }
  int i(const zoo::BuilderCall& c, int k) const { return static_cast<int>(c.ints[static_cast<std::size_t>(k)]); }
  std::int64_t n(const zoo::BuilderCall& c, int k) const { return c.ints[static_cast<std::size_t>(k)]; }
  std::size_t z(const zoo::BuilderCall& c, int k) const {
    return static_cast<std::size_t>(c.ints[static_cast<std::size_t>(k)]);
  }

  ggml_tensor* fresh(ggml_context* ctx, const zoo::BuilderCall& c, ggml_type type) {
    const std::int64_t ne[4] = {n(c, 0), n(c, 1), n(c, 2), n(c, 3)};
    ggml_tensor* r = ggml_new_tensor(ctx, type, 4, ne);
    if (!c.name.empty()) ggml_set_name(r, std::string(c.name).c_str());
    return r;
  }

  void uses(ggml_tensor* index, std::int64_t bound) {
    InputUse& use = uses_[index];
    use.bound = use.bound == 0 ? bound : std::min(use.bound, bound);
  }

  ggml_tensor* make(const zoo::BuilderCall& c) {
    using F = zoo::BuilderFn;
    ggml_context* ctx = graph_ctx_;
    switch (c.fn) {
      case F::kWeight: return fresh(weights_ctx_, c, to_ggml(c.type));
      case F::kInput: {
        ggml_tensor* r = fresh(ctx, c, to_ggml(c.type));
        ggml_set_input(r);
        inputs_.push_back(r);
        return r;
      }
      case F::kParam: {
        ggml_tensor* r = fresh(weights_ctx_, c, GGML_TYPE_F32);
#ifdef GALLOC_GGML_WHISPER_RN_0_4_0_RC_10
        ggml_set_param(weights_ctx_, r);
#else
        ggml_set_param(r);
#endif
        return r;
      }
      case F::kNewTensor: return fresh(ctx, c, to_ggml(c.type));
      case F::kAdd: return ggml_add(ctx, t(c, 0), t(c, 1));
      case F::kAddInplace: return ggml_add_inplace(ctx, t(c, 0), t(c, 1));
      case F::kMul: return ggml_mul(ctx, t(c, 0), t(c, 1));
      case F::kMulInplace: return ggml_mul_inplace(ctx, t(c, 0), t(c, 1));
      case F::kScale: return ggml_scale(ctx, t(c, 0), 0.5f);
      case F::kScaleInplace: return ggml_scale_inplace(ctx, t(c, 0), 0.5f);
      case F::kUnary: return ggml_unary(ctx, t(c, 0), to_ggml(c.unary));
      case F::kUnaryInplace: return ggml_unary_inplace(ctx, t(c, 0), to_ggml(c.unary));
      case F::kClamp: return ggml_clamp(ctx, t(c, 0), 0.0f, 6.0f);
#ifdef GALLOC_GGML_WHISPER_RN_0_4_0_RC_10
      case F::kGluSplit: return lacks("ggml_glu_split");
#else
      case F::kGluSplit:
        return ggml_glu_split(ctx, t(c, 0), t(c, 1),
                              c.unary == zoo::UnaryOp::kSilu ? GGML_GLU_OP_SWIGLU : GGML_GLU_OP_GEGLU);
#endif
      case F::kRepeat: return ggml_repeat(ctx, t(c, 0), t(c, 1));
      case F::kRepeatBack: return ggml_repeat_back(ctx, t(c, 0), t(c, 1));
      case F::kNorm: return ggml_norm(ctx, t(c, 0), 1e-5f);
      case F::kRmsNorm: return ggml_rms_norm(ctx, t(c, 0), 1e-5f);
      case F::kGroupNorm: return ggml_group_norm(ctx, t(c, 0), i(c, 0), 1e-6f);
      case F::kSoftMax: return ggml_soft_max(ctx, t(c, 0));
      case F::kSoftMaxInplace: return ggml_soft_max_inplace(ctx, t(c, 0));
      case F::kSoftMaxExt: return ggml_soft_max_ext(ctx, t(c, 0), t(c, 1), 0.125f, 0.0f);
      case F::kDiagMaskInf: return ggml_diag_mask_inf(ctx, t(c, 0), 0);
      case F::kDiagMaskInfInplace: return ggml_diag_mask_inf_inplace(ctx, t(c, 0), 0);
      case F::kRope: {
        ggml_tensor* a = t(c, 0);
        return ggml_rope_ext(ctx, a, t(c, 1), t(c, 2), static_cast<int>(a->ne[0]), 0, 4096, 10000.0f, 1.0f, 0.0f, 1.0f,
                             0.0f, 0.0f);
      }
      case F::kFlashAttnExt: return ggml_flash_attn_ext(ctx, t(c, 0), t(c, 1), t(c, 2), t(c, 3), 0.125f, 0.0f, 0.0f);
      case F::kMulMat: return ggml_mul_mat(ctx, t(c, 0), t(c, 1));
      case F::kOutProd: return ggml_out_prod(ctx, t(c, 0), t(c, 1));
      case F::kGetRows: uses(t(c, 1), t(c, 0)->ne[1]); return ggml_get_rows(ctx, t(c, 0), t(c, 1));
#ifdef GALLOC_GGML_WHISPER_RN_0_4_0_RC_10
      case F::kSetRows: return lacks("ggml_set_rows");
#else
      case F::kSetRows: uses(t(c, 2), t(c, 0)->ne[1]); return ggml_set_rows(ctx, t(c, 0), t(c, 1), t(c, 2));
#endif
      case F::kConcat: return ggml_concat(ctx, t(c, 0), t(c, 1), i(c, 0));
      case F::kArgmax: return ggml_argmax(ctx, t(c, 0));
      case F::kCountEqual: return ggml_count_equal(ctx, t(c, 0), t(c, 1));
      case F::kCont: return ggml_cont(ctx, t(c, 0));
      case F::kCont2d: return ggml_cont_2d(ctx, t(c, 0), n(c, 0), n(c, 1));
      case F::kCont3d: return ggml_cont_3d(ctx, t(c, 0), n(c, 0), n(c, 1), n(c, 2));
      case F::kCpy: return ggml_cpy(ctx, t(c, 0), t(c, 1));
      case F::kCast: return ggml_cast(ctx, t(c, 0), to_ggml(c.type));
      case F::kViewTensor: return ggml_view_tensor(ctx, t(c, 0));
      case F::kView1d: return ggml_view_1d(ctx, t(c, 0), n(c, 0), z(c, 1));
      case F::kView2d: return ggml_view_2d(ctx, t(c, 0), n(c, 0), n(c, 1), z(c, 2), z(c, 3));
      case F::kView3d: return ggml_view_3d(ctx, t(c, 0), n(c, 0), n(c, 1), n(c, 2), z(c, 3), z(c, 4), z(c, 5));
      case F::kView4d:
        return ggml_view_4d(ctx, t(c, 0), n(c, 0), n(c, 1), n(c, 2), n(c, 3), z(c, 4), z(c, 5), z(c, 6), z(c, 7));
      case F::kReshape1d: return ggml_reshape_1d(ctx, t(c, 0), n(c, 0));
      case F::kReshape2d: return ggml_reshape_2d(ctx, t(c, 0), n(c, 0), n(c, 1));
      case F::kReshape3d: return ggml_reshape_3d(ctx, t(c, 0), n(c, 0), n(c, 1), n(c, 2));
      case F::kReshape4d: return ggml_reshape_4d(ctx, t(c, 0), n(c, 0), n(c, 1), n(c, 2), n(c, 3));
      case F::kReshapeLike: return ggml_reshape(ctx, t(c, 0), t(c, 1));
      case F::kPermute: return ggml_permute(ctx, t(c, 0), i(c, 0), i(c, 1), i(c, 2), i(c, 3));
      case F::kTranspose: return ggml_transpose(ctx, t(c, 0));
      case F::kIm2col:
        return ggml_im2col(ctx, t(c, 0), t(c, 1), i(c, 0), i(c, 1), i(c, 2), i(c, 3), i(c, 4), i(c, 5), c.is_2d,
                           to_ggml(c.type));
      case F::kConv1d: return ggml_conv_1d(ctx, t(c, 0), t(c, 1), i(c, 0), i(c, 1), i(c, 2));
      case F::kConv1dPh: return ggml_conv_1d_ph(ctx, t(c, 0), t(c, 1), i(c, 0), i(c, 1));
      case F::kConv2d: return ggml_conv_2d(ctx, t(c, 0), t(c, 1), i(c, 0), i(c, 1), i(c, 2), i(c, 3), i(c, 4), i(c, 5));
#ifdef GALLOC_GGML_WHISPER_RN_0_4_0_RC_10
      case F::kConv2dDirect: return lacks("ggml_conv_2d_direct");
      case F::kConv2dDwDirect: return lacks("ggml_conv_2d_dw_direct");
#else
      case F::kConv2dDirect:
        return ggml_conv_2d_direct(ctx, t(c, 0), t(c, 1), i(c, 0), i(c, 1), i(c, 2), i(c, 3), i(c, 4), i(c, 5));
      case F::kConv2dDwDirect:
        return ggml_conv_2d_dw_direct(ctx, t(c, 0), t(c, 1), i(c, 0), i(c, 1), i(c, 2), i(c, 3), i(c, 4), i(c, 5));
#endif
      case F::kPool2d:
        return ggml_pool_2d(ctx, t(c, 0), c.pool == zoo::PoolOp::kMax ? GGML_OP_POOL_MAX : GGML_OP_POOL_AVG, i(c, 0),
                            i(c, 1), i(c, 2), i(c, 3), static_cast<float>(i(c, 4)), static_cast<float>(i(c, 5)));
#ifdef GALLOC_GGML_WHISPER_RN_0_4_0_RC_10
      case F::kUpscale: return ggml_upscale(ctx, t(c, 0), i(c, 0));
#else
      case F::kUpscale: return ggml_upscale(ctx, t(c, 0), i(c, 0), GGML_SCALE_MODE_NEAREST);
#endif
      case F::kTimestepEmbedding: return ggml_timestep_embedding(ctx, t(c, 0), i(c, 0), 10000);
      case F::kCrossEntropyLoss: return ggml_cross_entropy_loss(ctx, t(c, 0), t(c, 1));
#ifdef GALLOC_GGML_WHISPER_RN_0_4_0_RC_10
      // rc.10's order: logits, labels, the scalar gradient
      case F::kCrossEntropyLossBack: return ggml_cross_entropy_loss_back(ctx, t(c, 1), t(c, 2), t(c, 0));
#else
      // llama.rn 0.12.9's definition: a = the scalar gradient, b = logits, c = labels (its header says otherwise)
      case F::kCrossEntropyLossBack: return ggml_cross_entropy_loss_back(ctx, t(c, 0), t(c, 1), t(c, 2));
#endif
      case F::kSiluBack: return ggml_silu_back(ctx, t(c, 0), t(c, 1));
      case F::kRmsNormBack: return ggml_rms_norm_back(ctx, t(c, 0), t(c, 1), 1e-5f);
#ifdef GALLOC_GGML_WHISPER_RN_0_4_0_RC_10
      case F::kSoftMaxExtBack: return ggml_soft_max_back(ctx, t(c, 0), t(c, 1));
#else
      case F::kSoftMaxExtBack: return ggml_soft_max_ext_back(ctx, t(c, 0), t(c, 1), 1.0f, 0.0f);
#endif
      case F::kRopeBack: {
        ggml_tensor* a = t(c, 0);
        const int n_dims = static_cast<int>(a->ne[0]);
#ifdef GALLOC_GGML_WHISPER_RN_0_4_0_RC_10
        return ggml_rope_back(ctx, a, t(c, 1), nullptr, n_dims, 0, 4096, 10000.0f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f);
#else
        return ggml_rope_ext_back(ctx, a, t(c, 1), nullptr, n_dims, 0, 4096, 10000.0f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f);
#endif
      }
      case F::kGetRowsBack: uses(t(c, 1), t(c, 2)->ne[1]); return ggml_get_rows_back(ctx, t(c, 0), t(c, 1), t(c, 2));
      case F::kOptStepAdamw:
        uses_[t(c, 4)].adamw = true;
        return ggml_opt_step_adamw(ctx, t(c, 0), t(c, 1), t(c, 2), t(c, 3), t(c, 4));
      case F::kName: {
        ggml_tensor* r = t(c, 0);
        ggml_set_name(r, std::string(c.name).c_str());
        return r;
      }
      case F::kSetOutput:
        ggml_set_output(t(c, 0));
        outputs_.push_back(t(c, 0));
        return nullptr;
      case F::kSetLoss: ggml_set_loss(t(c, 0)); return nullptr;
      case F::kExpand: ggml_build_forward_expand(gf_, t(c, 0)); return nullptr;
    }
    fail("unknown builder function " + std::to_string(static_cast<int>(c.fn)));
  }

  ggml_tensor* lacks(const char* function) {
    unsupported_ = function;
    return nullptr;
  }

  std::string unsupported_;
  ggml_context* weights_ctx_ = nullptr;  // weights, caches, parameters: memory of their own
  ggml_context* graph_ctx_ = nullptr;    // everything the graph allocator places
  ggml_cgraph* gf_ = nullptr;
  std::vector<ggml_tensor*> tensors_;  // by builder id
  std::vector<ggml_tensor*> inputs_;
  std::vector<ggml_tensor*> outputs_;
  std::unordered_map<const ggml_tensor*, InputUse> uses_;
};

// ------------------------------------------------------------------ the same graph?

std::string shape_text(const std::int64_t* ne, const std::size_t* nb) {
  char buf[200];
  std::snprintf(buf, sizeof buf, "ne [%" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 "] nb [%zu %zu %zu %zu]", ne[0],
                ne[1], ne[2], ne[3], nb[0], nb[1], nb[2], nb[3]);
  return buf;
}

// Differences between ggml's graph and the zoo's, one line each (the first few).
std::vector<std::string> compare_graphs(const ggml_cgraph* gf, const galloc::Graph& g) {
  std::vector<std::string> diffs;
  auto differ = [&](const std::string& what) {
    if (diffs.size() < 12) diffs.push_back(what);
  };
  const int n_nodes = ggml_graph_n_nodes(const_cast<ggml_cgraph*>(gf));
  if (static_cast<std::size_t>(n_nodes) != g.nodes.size()) {
    differ("nodes: ggml " + std::to_string(n_nodes) + ", zoo " + std::to_string(g.nodes.size()));
  }
  if (static_cast<std::size_t>(gf->n_leafs) != g.leafs.size()) {
    differ("leafs: ggml " + std::to_string(gf->n_leafs) + ", zoo " + std::to_string(g.leafs.size()));
  }
  std::unordered_map<const ggml_tensor*, TensorId> id_of;
  for (int k = 0; k < n_nodes && static_cast<std::size_t>(k) < g.nodes.size(); ++k)
    id_of[gf->nodes[k]] = g.nodes[static_cast<std::size_t>(k)];
  for (int k = 0; k < gf->n_leafs && static_cast<std::size_t>(k) < g.leafs.size(); ++k)
    id_of[gf->leafs[k]] = g.leafs[static_cast<std::size_t>(k)];

  auto same_tensor = [&](const std::string& where, const ggml_tensor* x, const galloc::Tensor& y) {
    std::size_t nb[4];
    std::int64_t ne[4];
    for (int d = 0; d < 4; ++d) {
      nb[d] = static_cast<std::size_t>(y.nb[static_cast<std::size_t>(d)]);
      ne[d] = y.ne[static_cast<std::size_t>(d)];
    }
    const std::string xs = shape_text(x->ne, x->nb);
    const std::string ys = shape_text(ne, nb);
    const std::string op_x = ggml_op_name(x->op);
    const std::string op_y(galloc::op_name(y.op));
    const int type_x = static_cast<int>(x->type);
    const int type_y = static_cast<int>(y.type);
    const std::uint32_t flags_x = static_cast<std::uint32_t>(x->flags) & 0xFu;  // input, output, param, loss
    if (op_x != op_y || type_x != type_y || xs != ys || flags_x != y.flags) {
      differ(where + " '" + x->name + "': ggml " + op_x + " type " + std::to_string(type_x) + " " + xs + " flags " +
             std::to_string(flags_x) + "; zoo '" + y.name + "' " + op_y + " type " + std::to_string(type_y) + " " + ys +
             " flags " + std::to_string(y.flags));
      return;
    }
    for (int s = 0; s < GGML_MAX_SRC; ++s) {
      const ggml_tensor* src = x->src[s];
      const TensorId ys_id = y.src[static_cast<std::size_t>(s)];
      if (src == x) src = nullptr;  // ggml_cast's self-reference (the graph model has none)
      const bool ok = src == nullptr ? ys_id == kNoTensor : (id_of.count(src) != 0 && id_of.at(src) == ys_id);
      if (!ok) {
        differ(where + " '" + x->name + "' src[" + std::to_string(s) + "]: ggml '" + (src ? src->name : "-") +
               "', zoo '" + (ys_id == kNoTensor ? std::string("-") : g[ys_id].name) + "'");
        return;
      }
    }
    const bool view_x = x->view_src != nullptr;
    if (view_x != y.is_view() || (view_x && x->view_offs != static_cast<std::size_t>(y.view_offs))) {
      differ(where + " '" + x->name + "': view of '" + (view_x ? x->view_src->name : "-") + "' at " +
             std::to_string(x->view_offs) + " in ggml, of '" + (y.is_view() ? g[y.view_src].name : "-") + "' at " +
             std::to_string(y.view_offs) + " in the zoo");
      return;
    }
    if (view_x) {
      auto it = id_of.find(x->view_src);
      const galloc::Tensor& root = g[y.view_src];
      const bool ok = it != id_of.end()
                          ? it->second == y.view_src
                          : (root.has_memory && static_cast<int>(root.type) == static_cast<int>(x->view_src->type) &&
                             std::equal(root.ne.begin(), root.ne.end(), x->view_src->ne));
      if (!ok)
        differ(where + " '" + x->name + "': view source '" + x->view_src->name + "' differs from '" + root.name + "'");
    }
  };
  for (int k = 0; k < n_nodes && static_cast<std::size_t>(k) < g.nodes.size(); ++k) {
    same_tensor("node " + std::to_string(k), gf->nodes[k], g[g.nodes[static_cast<std::size_t>(k)]]);
  }
  for (int k = 0; k < gf->n_leafs && static_cast<std::size_t>(k) < g.leafs.size(); ++k) {
    same_tensor("leaf " + std::to_string(k), gf->leafs[k], g[g.leafs[static_cast<std::size_t>(k)]]);
  }
  return diffs;
}

// Builds `name` at `scale` both ways and compares them (the differences go to stderr).
struct Built {
  std::unique_ptr<GgmlMirror> mirror;
  galloc::Graph graph;
};

enum class Outcome { kSame, kDiffers, kUnsupported, kError };

Outcome build_both(const std::string& name, double scale, Built& out) {
  out.mirror = std::make_unique<GgmlMirror>();
  galloc::Result<galloc::Graph> graph = zoo::build(name, {scale}, *out.mirror);
  if (!graph.is_ok()) {
    std::fprintf(stderr, "%s: %s\n", name.c_str(), graph.status().to_string().c_str());
    return Outcome::kError;
  }
  if (!out.mirror->unsupported().empty()) return Outcome::kUnsupported;
  out.graph = std::move(graph).value();
  const std::vector<std::string> diffs = compare_graphs(out.mirror->graph(), out.graph);
#ifdef GALLOC_GGML_WHISPER_RN_0_4_0_RC_10
  // The zoo follows llama.rn 0.12.9's ggml; rc.10's graphs differ in places (source orders of
  // the backward ops): reported, and rc.10's own graph is what gets computed.
  if (!diffs.empty()) std::printf("info zoo.%s@%g.differs_from_zoo %s\n", name.c_str(), scale, diffs.front().c_str());
#else
  for (const std::string& d : diffs) std::fprintf(stderr, "%s @%g: %s\n", name.c_str(), scale, d.c_str());
#endif
  return diffs.empty() ? Outcome::kSame : Outcome::kDiffers;
}

// ------------------------------------------------------------------ check: compute at small scale

ggml_backend_t g_cpu = nullptr;

void fill_random(ggml_tensor* t, Rng& rng, float scale) {
  const std::int64_t n = ggml_nelements(t);
  std::vector<float> f(static_cast<std::size_t>(n));
  for (float& x : f) x = rng.uniform(scale);
  if (t->type == GGML_TYPE_F32) {
    ggml_backend_tensor_set(t, f.data(), 0, ggml_nbytes(t));
  } else if (t->type == GGML_TYPE_F16) {
    std::vector<ggml_fp16_t> h(f.size());
    ggml_fp32_to_fp16_row(f.data(), h.data(), n);
    ggml_backend_tensor_set(t, h.data(), 0, ggml_nbytes(t));
  } else if (ggml_is_quantized(t->type)) {
    std::vector<unsigned char> q(ggml_nbytes(t));
    const std::int64_t per_row = t->ne[0];
    ggml_quantize_chunk(t->type, f.data(), q.data(), 0, n / per_row, per_row, nullptr);
    ggml_backend_tensor_set(t, q.data(), 0, q.size());
  } else {
    fail(std::string("no random data for ") + t->name + " of type " + ggml_type_name(t->type));
  }
}

// Integer inputs: indices below what they index (distinct where they are rows to write), or
// positions 0, 1, 2, ...; the AdamW hyper-parameters; everything else random.
void fill_input(const GgmlMirror& mirror, ggml_tensor* t, Rng& rng) {
  const InputUse use = mirror.use_of(t);
  const std::int64_t n = ggml_nelements(t);
  if (use.adamw) {
    const float beta1 = 0.9f, beta2 = 0.999f;
    const std::vector<float> p{1e-3f, beta1, beta2, 1e-8f, 0.0f, 1.0f / (1.0f - beta1), 1.0f / (1.0f - beta2)};
    check(ggml_nbytes(t) == p.size() * sizeof(float), "adamw parameters");
    ggml_backend_tensor_set(t, p.data(), 0, ggml_nbytes(t));
  } else if (t->type == GGML_TYPE_I32) {
    std::vector<std::int32_t> v(static_cast<std::size_t>(n));
    for (std::int64_t k = 0; k < n; ++k) {
      v[static_cast<std::size_t>(k)] = static_cast<std::int32_t>(use.bound > 0 ? rng.below(use.bound) : k);
    }
    ggml_backend_tensor_set(t, v.data(), 0, ggml_nbytes(t));
  } else if (t->type == GGML_TYPE_I64) {
    check(use.bound > 0, std::string("I64 input ") + t->name + " indexes nothing");
    std::vector<std::int64_t> v(static_cast<std::size_t>(n));
    const std::int64_t first = std::max<std::int64_t>(0, use.bound - n);  // the end of the cache
    for (std::int64_t k = 0; k < n; ++k) v[static_cast<std::size_t>(k)] = (first + k) % use.bound;
    ggml_backend_tensor_set(t, v.data(), 0, ggml_nbytes(t));
  } else {
    fill_random(t, rng, 1.0f);
  }
}

std::uint64_t hash_tensor(const ggml_tensor* t, std::uint64_t h, std::size_t* non_finite) {
  std::vector<unsigned char> bytes(ggml_nbytes(t));
  ggml_backend_tensor_get(t, bytes.data(), 0, bytes.size());
  if (t->type == GGML_TYPE_F32) {
    const auto* f = reinterpret_cast<const float*>(bytes.data());
    for (std::size_t k = 0; k < bytes.size() / sizeof(float); ++k) *non_finite += std::isfinite(f[k]) ? 0 : 1;
  }
  return fnv1a(bytes.data(), bytes.size(), h);
}

// The scale each graph is computed at: small enough for well under a second of CPU time.
double check_scale(const std::string& name) {
  const bool heavy = name.rfind("llama-", 0) == 0 && name.find("-tg1") == std::string::npos;
  if (name.rfind("unet", 0) == 0) return 0.2;  // latents 8x8 and 16x16
  if (heavy || name.rfind("whisper-large", 0) == 0) return 0.1;
  return 0.25;
}

int check_all(const std::string& filter) {
  int failures = 0;
  std::uint64_t seed = 1;
  for (const zoo::ZooEntry& entry : zoo::list()) {
    if (entry.name.find(filter) == std::string::npos) continue;
    const double scale = check_scale(entry.name);
    const std::string key = "zoo." + entry.name;
    Built full;
    const Outcome at_full = build_both(entry.name, 1.0, full);  // real dimensions: structure only
    std::string lacking = full.mirror->unsupported();
    full.mirror.reset();
    Built b;
    const Outcome at_scale = at_full == Outcome::kUnsupported ? at_full : build_both(entry.name, scale, b);
    if (at_scale == Outcome::kUnsupported) {  // (whisper.rn 0.4.0-rc.10's ggml)
      if (lacking.empty()) lacking = b.mirror->unsupported();
      std::printf("exact %s.skipped needs_%s\n", key.c_str(), lacking.c_str());
      continue;
    }
    const bool same = at_full == Outcome::kSame && at_scale == Outcome::kSame;
    std::printf("exact %s.same_graph %s\n", key.c_str(), same ? "true" : "false");
    if (at_full == Outcome::kError || at_scale == Outcome::kError) {
      ++failures;
      continue;
    }
#ifndef GALLOC_GGML_WHISPER_RN_0_4_0_RC_10
    if (!same) {  // a zoo graph that is not ggml's is a bug in the zoo
      ++failures;
      continue;
    }
#endif
    std::printf("exact %s.nodes %zu\n", key.c_str(), b.graph.nodes.size());
    GgmlMirror& m = *b.mirror;
    Rng rng(seed++);
    // weights: random, scaled so that activations stay near 1 through the layers
    ggml_backend_buffer_t weights = ggml_backend_alloc_ctx_tensors(m.weights_ctx(), g_cpu);
    check(weights != nullptr, key + ": weights buffer");
    for (ggml_tensor* t = ggml_get_first_tensor(m.weights_ctx()); t != nullptr;
         t = ggml_get_next_tensor(m.weights_ctx(), t)) {
      int last = 3;  // the output dimension: what is left is the fan-in
      while (last > 0 && t->ne[last] == 1) --last;
      const std::int64_t fan_in = last == 0 ? 1 : ggml_nelements(t) / t->ne[last];
      fill_random(t, rng, 1.0f / std::sqrt(static_cast<float>(fan_in)));
    }
    ggml_gallocr_t galloc = ggml_gallocr_new(ggml_backend_cpu_buffer_type());
    // a graph one allocator refuses is reported as a difference, and the other graphs still run
    const bool allocated = ggml_gallocr_alloc_graph(galloc, m.graph());
    std::printf("exact %s.alloc_graph %s\n", key.c_str(), allocated ? "true" : "false");
    if (!allocated) {
      ggml_gallocr_free(galloc);
      ggml_backend_buffer_free(weights);
      continue;
    }
    for (ggml_tensor* in : m.inputs()) {
      if (in->buffer != nullptr) fill_input(m, in, rng);  // (an input the graph does not reach has none)
    }
    const auto t0 = std::chrono::steady_clock::now();
    check(ggml_backend_graph_compute(g_cpu, m.graph()) == GGML_STATUS_SUCCESS, key + ": compute");
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::size_t non_finite = 0;
    int k = 0;
    for (const ggml_tensor* out : m.outputs()) {
      std::printf("exact %s.out%d.%s %s\n", key.c_str(), k++, out->name,
                  hex(hash_tensor(out, 0xcbf29ce484222325ull, &non_finite)).c_str());
    }
    // what the graph wrote into existing memory (KV caches, parameters after AdamW)
    std::uint64_t h = 0xcbf29ce484222325ull;
    std::size_t ignored = 0;
    for (ggml_tensor* t = ggml_get_first_tensor(m.weights_ctx()); t != nullptr;
         t = ggml_get_next_tensor(m.weights_ctx(), t)) {
      h = hash_tensor(t, h, &ignored);
    }
    std::printf("exact %s.weights_after %s\n", key.c_str(), hex(h).c_str());
    std::printf("exact %s.non_finite_outputs %zu\n", key.c_str(), non_finite);
    std::printf("size %s.compute_buffer %zu\n", key.c_str(), ggml_gallocr_get_buffer_size(galloc, 0));
    std::printf("layout %s.layout %s\n", key.c_str(), layout_hash(m.graph()).c_str());
    std::printf("info %s.compute scale=%g nodes=%zu %.1fms\n", key.c_str(), scale, b.graph.nodes.size(), ms);
    std::fflush(stdout);
    ggml_gallocr_free(galloc);
    ggml_backend_buffer_free(weights);
  }
  return failures;
}

// ------------------------------------------------------------------ bench: real dimensions

// A buffer without memory: a base address nothing reads or writes (the graph is planned and
// its tensors get addresses, but nothing is computed), so that 20 GB of weights and
// gigabytes of compute buffer cost nothing.
void* fake_base(ggml_backend_buffer_t) { return reinterpret_cast<void*>(std::uintptr_t{1} << 40); }
const char* fake_name(ggml_backend_buffer_type_t) { return "NoMemory"; }
ggml_backend_buffer_t fake_alloc(ggml_backend_buffer_type_t buft, std::size_t size) {
  ggml_backend_buffer_i iface{};
  iface.get_base = fake_base;
  return ggml_backend_buffer_init(buft, iface, nullptr, size);
}
std::size_t fake_alignment(ggml_backend_buffer_type_t) {
  return ggml_backend_buft_get_alignment(ggml_backend_cpu_buffer_type());
}

ggml_backend_buffer_type fake_buffer_type() {
  ggml_backend_buffer_type t{};
  t.iface.get_name = fake_name;
  t.iface.alloc_buffer = fake_alloc;
  t.iface.get_alignment = fake_alignment;
  t.device = ggml_backend_cpu_buffer_type()->device;
  return t;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// `tensors` at addresses in a new buffer of `fake`, one after the other, as
// ggml_backend_alloc_ctx_tensors lays them out
ggml_backend_buffer_t place_in_buffer(ggml_backend_buffer_type& fake, const std::vector<ggml_tensor*>& tensors) {
  const std::size_t align = fake_alignment(&fake);
  std::size_t total = 0;
  for (ggml_tensor* t : tensors) total += GGML_PAD(ggml_nbytes(t), align);
  ggml_backend_buffer_t buffer = ggml_backend_buft_alloc_buffer(&fake, std::max<std::size_t>(total, align));
  std::size_t offset = 0;
  for (ggml_tensor* t : tensors) {
    void* address = static_cast<char*>(ggml_backend_buffer_get_base(buffer)) + offset;
#ifdef GALLOC_GGML_WHISPER_RN_0_4_0_RC_10
    ggml_backend_tensor_alloc(buffer, t, address);
#else
    check(ggml_backend_tensor_alloc(buffer, t, address) == GGML_STATUS_SUCCESS, "weight address");
#endif
    offset += GGML_PAD(ggml_nbytes(t), align);
  }
  return buffer;
}

// The live lower bound of `file`'s graph as the bench's ggml (llama.rn 0.12.9's) plans it: its
// in-place rules and the CPU alignment, where a capture from an older ggml has that ggml's in
// the file (whisper.rn rc.8's allocator also reuses memory through views). What no placement
// of the replayed graph can go under.
std::size_t lower_bound_of(galloc::GraphFile file, std::size_t alignment) {
  const galloc::Graph defaults;
  file.graph.inplace_ops = defaults.inplace_ops;
  file.graph.inplace_across_buffers = defaults.inplace_across_buffers;
  file.graph.inplace_through_views = defaults.inplace_through_views;
  for (galloc::BufferTypeDesc& type : file.buffer_types) type.alignment = alignment;
  const auto types = galloc::make_null_buffer_types(file);
  auto result = galloc::plan_graph(file.graph, types.per_id, file.assignment(), {.strategy = galloc::Strategy::kBest});
  return result.is_ok() ? result->plan.total_lower_bound() : 0;
}

// The address and buffer of each tensor of `fresh` as they are now (before any alloc), to
// put back before each timed alloc, as a program builds a new graph per evaluation.
class FreshTensors {
 public:
  explicit FreshTensors(const std::vector<ggml_tensor*>& fresh) : fresh_(fresh) {
    for (const ggml_tensor* t : fresh) saved_.push_back({t->data, t->buffer});
  }
  void restore() const {
    for (std::size_t k = 0; k < fresh_.size(); ++k) {
      fresh_[k]->data = saved_[k].data;
      fresh_[k]->buffer = saved_[k].buffer;
    }
  }

 private:
  struct Saved {
    void* data;
    ggml_backend_buffer_t buffer;
  };
  const std::vector<ggml_tensor*>& fresh_;
  std::vector<Saved> saved_;
};

// Reserves `graph` REPETITIONS times, then allocates it as often, each time from the state the
// tensors of `fresh` had before (as a program builds a new graph per evaluation); prints the
// `bench` line of zoo_bench.cmake. False when the reserve fails.
bool bench_graph(const std::string& name, ggml_cgraph* graph, const std::vector<ggml_tensor*>& fresh,
                 ggml_backend_buffer_type& fake, int repetitions, std::size_t bound) {
  const FreshTensors before(fresh);
  ggml_gallocr_t galloc = ggml_gallocr_new(&fake);
  std::vector<double> reserve_us, alloc_us;
  bool reserved = true;
  for (int r = 0; r < repetitions && reserved; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    reserved = ggml_gallocr_reserve(galloc, graph);
    reserve_us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  if (!reserved) {  // zoo_bench.cmake reports the graph missing from this run
    std::fprintf(stderr, "%s: ggml_gallocr_reserve failed\n", name.c_str());
    ggml_gallocr_free(galloc);
    return false;
  }
  for (int r = 0; r < repetitions; ++r) {
    before.restore();
    const auto t0 = std::chrono::steady_clock::now();
    check(ggml_gallocr_alloc_graph(galloc, graph), name + ": alloc_graph");
    alloc_us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::printf("bench %s nodes=%d buffer=%zu reserve_us=%.1f alloc_us=%.1f bound=%zu\n", name.c_str(),
              ggml_graph_n_nodes(graph), ggml_gallocr_get_buffer_size(galloc, 0), median(reserve_us), median(alloc_us),
              bound);
  std::fflush(stdout);
  ggml_gallocr_free(galloc);
  return true;
}

int bench_zoo(const std::string& filter, int repetitions) {
  ggml_backend_buffer_type fake = fake_buffer_type();
  int failures = 0;
  for (const zoo::ZooEntry& entry : zoo::list()) {
    if (entry.name.find(filter) == std::string::npos) continue;
    Built b;
    if (build_both(entry.name, 1.0, b) != Outcome::kSame) {
      ++failures;
      continue;
    }
    GgmlMirror& m = *b.mirror;
    std::vector<ggml_tensor*> weights, planned;
    for (ggml_tensor* t = ggml_get_first_tensor(m.weights_ctx()); t != nullptr;
         t = ggml_get_next_tensor(m.weights_ctx(), t))
      weights.push_back(t);
    for (ggml_tensor* t = ggml_get_first_tensor(m.graph_ctx()); t != nullptr;
         t = ggml_get_next_tensor(m.graph_ctx(), t))
      planned.push_back(t);
    ggml_backend_buffer_t buffer = place_in_buffer(fake, weights);
    galloc::GraphFile file;
    file.graph = std::move(b.graph);
    file.buffer_types = {{"CPU"}};  // lower_bound_of sets the alignment
    file.buffer_type_of_id = {0};
    const std::size_t bound = lower_bound_of(std::move(file), fake_alignment(&fake));
    if (!bench_graph(entry.name, m.graph(), planned, fake, repetitions, bound)) ++failures;
    ggml_backend_buffer_free(buffer);
  }
  return failures;
}

#ifdef GALLOC_PAIRED
// ------------------------------------------------------------------ paired bench

}  // namespace

// paired_dropin.cpp: the drop-in under other names, beside stock ggml-alloc.c
extern "C" {
ggml_gallocr_t paired_gallocr_new(ggml_backend_buffer_type_t buft);
void paired_gallocr_free(ggml_gallocr_t galloc);
bool paired_gallocr_reserve(ggml_gallocr_t galloc, ggml_cgraph* graph);
bool paired_gallocr_alloc_graph(ggml_gallocr_t galloc, ggml_cgraph* graph);
size_t paired_gallocr_get_buffer_size(ggml_gallocr_t galloc, int buffer_id);
bool paired_share_begin(const char* name);
bool paired_share_end(void);
}

namespace {

// One allocator of the comparison: stock ggml-alloc, or the drop-in with a strategy, alone or
// in a share group (its buffer a shared arena's, as GALLOC_SHARE makes it; the only member).
struct Contender {
  const char* name;
  const char* strategy;  // GALLOC_STRATEGY when the drop-in's allocator is made; null: stock
  bool shared;
  ggml_gallocr_t (*make)(ggml_backend_buffer_type_t);
  void (*release)(ggml_gallocr_t);
  bool (*reserve)(ggml_gallocr_t, ggml_cgraph*);
  bool (*alloc)(ggml_gallocr_t, ggml_cgraph*);
  size_t (*buffer_size)(ggml_gallocr_t, int);
};

const std::array<Contender, 4> kContenders = {{
    {"stock", nullptr, false, ggml_gallocr_new, ggml_gallocr_free, ggml_gallocr_reserve, ggml_gallocr_alloc_graph,
     ggml_gallocr_get_buffer_size},
    {"ggml", "ggml", false, paired_gallocr_new, paired_gallocr_free, paired_gallocr_reserve, paired_gallocr_alloc_graph,
     paired_gallocr_get_buffer_size},
    {"best", "best", false, paired_gallocr_new, paired_gallocr_free, paired_gallocr_reserve, paired_gallocr_alloc_graph,
     paired_gallocr_get_buffer_size},
    {"shared", "best", true, paired_gallocr_new, paired_gallocr_free, paired_gallocr_reserve,
     paired_gallocr_alloc_graph, paired_gallocr_get_buffer_size},
}};

// Per graph family (the name's first word: llama, whisper), the log of each ratio to stock,
// for geometric means over the graphs where stock takes 10 us or more.
struct PairedMeans {
  struct Sums {
    int n = 0;
    // reserve ggml, reserve best, alloc ggml, alloc best, alloc again ggml, alloc again best
    // (each / stock), alloc shared / best
    std::array<double, 7> log_ratio{};
    std::array<double, 7> worst{};
  };
  std::map<std::string, Sums> families;
  void add(const std::string& family, const std::array<double, 7>& ratios) {
    for (const std::string& key : {family, std::string("all")}) {
      Sums& sums = families[key];
      sums.n += 1;
      for (std::size_t k = 0; k < ratios.size(); ++k) {
        sums.log_ratio[k] += std::log(ratios[k]);
        sums.worst[k] = std::max(sums.worst[k], ratios[k]);
      }
    }
  }
  void print() const {
    std::printf("\ngeometric means (worst) of galloc / stock, graphs where stock takes >= 10 us:\n");
    std::printf("%-10s %4s %15s %15s %15s %15s %15s %15s %15s\n", "family", "n", "ggml reserve", "best reserve",
                "ggml alloc", "best alloc", "ggml again", "best again", "shared / best");
    for (const auto& [family, sums] : families) {
      std::printf("%-10s %4d", family.c_str(), sums.n);
      for (std::size_t k = 0; k < sums.log_ratio.size(); ++k) {
        std::printf("    %5.2f (%4.2f)", std::exp(sums.log_ratio[k] / sums.n), sums.worst[k]);
      }
      std::printf("\n");
    }
  }
};

// Reserves `graph` with every contender by turns (the first of each turn rotates), REPETITIONS
// turns, then allocates it the same way, each alloc from the state the tensors of `fresh` had
// before; then allocates it again the same way, each contender timed on the graph it has just
// allocated (the usual ggml loop). A ratio is the median over the turns of galloc's time /
// stock's in the same turn, so that a busy machine slows both sides of it. False when a
// reserve fails, `ggml` does not give stock's buffer or the shared `best` does not report
// `best`'s need.
bool pair_graph(const std::string& name, ggml_cgraph* graph, const std::vector<ggml_tensor*>& fresh,
                ggml_backend_buffer_type& fake, int repetitions, std::size_t bound, PairedMeans& means) {
  const FreshTensors before(fresh);
  constexpr std::size_t n = kContenders.size();
  std::array<ggml_gallocr_t, n> gallocs{};
  for (std::size_t c = 0; c < n; ++c) {
    if (kContenders[c].strategy != nullptr) setenv("GALLOC_STRATEGY", kContenders[c].strategy, 1);
    if (kContenders[c].shared) check(paired_share_begin("paired"), "share group");
    gallocs[c] = kContenders[c].make(&fake);
    if (kContenders[c].shared) check(paired_share_end(), "share group");
  }
  std::array<std::vector<double>, n> reserve_us, alloc_us, again_us;
  auto timed = [](auto&& call) {
    const auto t0 = std::chrono::steady_clock::now();
    const bool ok = call();
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    return ok ? us : -1.0;
  };
  bool ok = true;
  for (int r = 0; r < repetitions && ok; ++r) {
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t c = (static_cast<std::size_t>(r) + k) % n;
      const double us = timed([&] { return kContenders[c].reserve(gallocs[c], graph); });
      if (us < 0) {
        std::fprintf(stderr, "%s: %s: ggml_gallocr_reserve failed\n", name.c_str(), kContenders[c].name);
        ok = false;
      }
      reserve_us[c].push_back(us);
    }
  }
  std::array<std::size_t, n> buffer{};
  for (std::size_t c = 0; c < n && ok; ++c) buffer[c] = kContenders[c].buffer_size(gallocs[c], 0);
  if (ok && buffer[1] != buffer[0]) {
    std::fprintf(stderr, "%s: ggml's buffer is %zu bytes, stock's %zu\n", name.c_str(), buffer[1], buffer[0]);
    ok = false;
  }
  if (ok && buffer[3] != buffer[2]) {  // a member reports its own need
    std::fprintf(stderr, "%s: shared best needs %zu bytes, best alone %zu\n", name.c_str(), buffer[3], buffer[2]);
    ok = false;
  }
  for (int r = 0; r < repetitions && ok; ++r) {
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t c = (static_cast<std::size_t>(r) + k) % n;
      before.restore();
      const double us = timed([&] { return kContenders[c].alloc(gallocs[c], graph); });
      check(us >= 0, name + ": " + kContenders[c].name + ": alloc_graph");
      alloc_us[c].push_back(us);
    }
  }
  for (int r = 0; r < repetitions && ok; ++r) {
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t c = (static_cast<std::size_t>(r) + k) % n;
      before.restore();
      check(kContenders[c].alloc(gallocs[c], graph), name + ": " + kContenders[c].name + ": alloc_graph");
      const double us = timed([&] { return kContenders[c].alloc(gallocs[c], graph); });
      check(us >= 0, name + ": " + kContenders[c].name + ": alloc_graph again");
      again_us[c].push_back(us);
    }
  }
  before.restore();
  for (std::size_t c = 0; c < n; ++c) kContenders[c].release(gallocs[c]);
  if (!ok) return false;

  auto ratio = [&](const std::array<std::vector<double>, n>& us, std::size_t c, std::size_t base = 0) {
    std::vector<double> turns;
    for (std::size_t r = 0; r < us[base].size(); ++r) turns.push_back(us[c][r] / us[base][r]);
    return median(turns);
  };
  const std::array<double, 7> ratios = {ratio(reserve_us, 1), ratio(reserve_us, 2), ratio(alloc_us, 1),
                                        ratio(alloc_us, 2),   ratio(again_us, 1),   ratio(again_us, 2),
                                        ratio(alloc_us, 3, 2)};
  std::printf(
      "pair %s nodes=%d bound=%zu buffer stock=%zu ggml=%zu best=%zu | reserve us stock=%.1f ggml=%.2fx "
      "best=%.2fx | alloc us stock=%.1f ggml=%.2fx best=%.2fx | again us stock=%.1f ggml=%.2fx best=%.2fx | "
      "shared/best alloc %.2fx\n",
      name.c_str(), ggml_graph_n_nodes(graph), bound, buffer[0], buffer[1], buffer[2], median(reserve_us[0]), ratios[0],
      ratios[1], median(alloc_us[0]), ratios[2], ratios[3], median(again_us[0]), ratios[4], ratios[5], ratios[6]);
  std::fflush(stdout);
  if (median(reserve_us[0]) >= 10 && median(alloc_us[0]) >= 10) means.add(name.substr(0, name.find('-')), ratios);
  return true;
}
#endif  // GALLOC_PAIRED

// Graph files (bench/graphs' captures), replayed through ggml (graph_file_ggml.hpp); each is
// named by its file name without .json.gz.
int bench_files(const std::vector<std::string>& paths, const std::string& filter, int repetitions) {
  ggml_backend_buffer_type fake = fake_buffer_type();
  int failures = 0;
#ifdef GALLOC_PAIRED
  PairedMeans means;
#endif
  for (const std::string& path : paths) {
    std::string name = std::filesystem::path(path).filename().string();
    for (const char* suffix : {".gz", ".json"}) {
      if (name.ends_with(suffix)) name.resize(name.size() - std::strlen(suffix));
    }
    if (name.find(filter) == std::string::npos) continue;
    auto file = galloc::read_graph_file_any(path);
    if (!file.is_ok()) {
      std::fprintf(stderr, "%s\n", file.status().to_string().c_str());
      ++failures;
      continue;
    }
    if (file->buffer_types.size() != 1) {
      std::fprintf(stderr, "%s: %zu buffer types; the replay has one\n", path.c_str(), file->buffer_types.size());
      ++failures;
      continue;
    }
    ReplayedGraph replayed;
    replay_graph_file(*file, replayed);
    if (replayed.graph == nullptr) {
      std::fprintf(stderr, "%s: %s\n", path.c_str(), replayed.error.c_str());
      ++failures;
      continue;
    }
    ggml_backend_buffer_t buffer = place_in_buffer(fake, replayed.external);
    address_views_of_external(replayed);
    const std::size_t bound = lower_bound_of(std::move(file).value(), fake_alignment(&fake));
#ifdef GALLOC_PAIRED
    if (!pair_graph(name, replayed.graph, replayed.tensors, fake, repetitions, bound, means)) ++failures;
#else
    if (!bench_graph(name, replayed.graph, replayed.tensors, fake, repetitions, bound)) ++failures;
#endif
    ggml_backend_buffer_free(buffer);
  }
#ifdef GALLOC_PAIRED
  means.print();
#endif
  return failures;
}

}  // namespace

int main(int argc, char** argv) {
  ggml_log_set(
      [](ggml_log_level level, const char* text, void*) {
        if (level >= GGML_LOG_LEVEL_WARN) std::fputs(text, stderr);
      },
      nullptr);
  std::string mode = "check";
  std::string filter;
  std::vector<std::string> files;
  int repetitions = 15;
  for (int k = 1; k < argc; ++k) {
    const std::string arg = argv[k];
    if (arg == "--filter" && k + 1 < argc) {
      filter = argv[++k];
    } else if (arg == "--files") {
      while (k + 1 < argc && argv[k + 1][0] != '-') files.emplace_back(argv[++k]);
    } else if (arg == "check" || arg == "bench") {
      mode = arg;
    } else if (mode == "bench" && std::atoi(arg.c_str()) > 0) {
      repetitions = std::atoi(arg.c_str());
    } else {
      fail("usage: zoo_ggml [check | bench [REPETITIONS] [--files FILE...]] [--filter SUBSTRING]");
    }
  }
  int failures = 0;
#ifdef GALLOC_PAIRED
  if (mode != "bench" || files.empty()) fail("usage: zoo_ggml (paired) bench [REPETITIONS] --files FILE...");
#endif
  if (mode == "bench") {
    failures = files.empty() ? bench_zoo(filter, repetitions) : bench_files(files, filter, repetitions);
  } else {
    g_cpu = ggml_backend_cpu_init();
    check(g_cpu != nullptr, "cpu backend");
    ggml_backend_cpu_set_n_threads(g_cpu, 1);  // one thread: every op's reduction order is fixed
    failures = check_all(filter);
    ggml_backend_free(g_cpu);
  }
  if (failures > 0) {
    std::fprintf(stderr, "zoo_ggml: %d graph(s) failed\n", failures);
    return 1;
  }
  std::printf("done\n");
  return 0;
}
