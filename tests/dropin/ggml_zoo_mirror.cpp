// GgmlMirror: each zoo builder call made again with ggml's API (ggml_zoo_mirror.hpp).
#include "ggml_zoo_mirror.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "galloc/zoo.hpp"
#include "ggml-impl.h"  // struct ggml_cgraph (leafs)
#include "test_support.hpp"

namespace galloc::dropin_test {
namespace {

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

}  // namespace

GgmlMirror::GgmlMirror() {
  ggml_init_params p{};
  p.mem_size = kMaxTensors * ggml_tensor_overhead();
  p.no_alloc = true;
  weights_ctx_ = ggml_init(p);
  p.mem_size += ggml_graph_overhead_custom(kGraphSize, false);
  graph_ctx_ = ggml_init(p);
  check(weights_ctx_ != nullptr && graph_ctx_ != nullptr, "ggml_init");
  gf_ = ggml_new_graph_custom(graph_ctx_, kGraphSize, false);
}

GgmlMirror::~GgmlMirror() {
  ggml_free(graph_ctx_);
  ggml_free(weights_ctx_);
}

InputUse GgmlMirror::use_of(const ggml_tensor* t) const {
  auto it = uses_.find(t);
  return it == uses_.end() ? InputUse{} : it->second;
}

void GgmlMirror::on_call(const zoo::BuilderCall& c) {
  if (!unsupported_.empty()) return;  // the graph cannot be built here: stop
  ggml_tensor* r = make(c);
  if (!unsupported_.empty()) return;
  if (c.result == kNoTensor) return;
  const auto id = static_cast<std::size_t>(c.result);
  if (tensors_.size() <= id) tensors_.resize(id + 1, nullptr);
  tensors_[id] = r;
}

ggml_tensor* GgmlMirror::t(const zoo::BuilderCall& c, int i) const {
  const TensorId id = c.tensors[static_cast<std::size_t>(i)];
  if (id == kNoTensor) return nullptr;
  check(static_cast<std::size_t>(id) < tensors_.size() && tensors_[static_cast<std::size_t>(id)] != nullptr,
        "builder tensor " + std::to_string(id) + " has no ggml tensor");
  return tensors_[static_cast<std::size_t>(id)];
}

ggml_tensor* GgmlMirror::fresh(ggml_context* ctx, const zoo::BuilderCall& c, ggml_type type) {
  const std::int64_t ne[4] = {n(c, 0), n(c, 1), n(c, 2), n(c, 3)};
  ggml_tensor* r = ggml_new_tensor(ctx, type, 4, ne);
  if (!c.name.empty()) ggml_set_name(r, std::string(c.name).c_str());
  return r;
}

void GgmlMirror::uses(ggml_tensor* index, std::int64_t bound) {
  InputUse& use = uses_[index];
  use.bound = use.bound == 0 ? bound : std::min(use.bound, bound);
}

ggml_tensor* GgmlMirror::make(const zoo::BuilderCall& c) {
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

ggml_tensor* GgmlMirror::lacks(const char* function) {
  unsupported_ = function;
  return nullptr;
}

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

}  // namespace galloc::dropin_test
