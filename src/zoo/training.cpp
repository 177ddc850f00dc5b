// Training graphs as ggml-opt builds them (ggml_opt_build with GGML_OPT_BUILD_TYPE_OPT and a
// cross-entropy loss, one optimizer step per physical batch): the forward graph with the
// loss, the prediction and the correct count (ggml_argmax / ggml_count_equal), then the
// backward graph of ggml_build_backward_expand (each node's ggml_compute_backward rule, from
// the last node to the first, every gradient expanded as it is made or accumulated), then
// one OPT_STEP_ADAMW per parameter, a view of the parameter that reads its gradient, its two
// moments and the AdamW hyper-parameter input.
//  - training-mlp: ggml's examples/mnist fully connected model (784 -> 500 ReLU -> 10),
//    physical batch 500. Its MUL_MAT backward is the older ggml rule: the input gradient as
//    MUL_MAT of a cont'ed TRANSPOSE of the weight.
//  - training-llama-2l: a two-layer llama-style transformer (token embedding, RMS norm, RoPE,
//    causal softmax attention, SiLU-gated FFN, output head) on 256 tokens, with the current
//    rule: both MUL_MAT gradients as OUT_PROD (the input one of a transposed view).
// Parameters, their optimizer moments and the loss gradient seed (ggml-opt's static
// gradient accumulator) are existing memory; gradients and activations are planned.
#include <array>
#include <string>
#include <vector>

#include "builder.hpp"

namespace galloc::zoo {

namespace {

using T = TensorId;

// ggml_build_backward_expand over the nodes the builder has listed so far. The gradient of
// MUL_MAT's second source is mul_mat(cont(transpose(src0)), grad) with src1_grad_by_mul_mat,
// out_prod(src0, transpose(grad)) without: the zoo's graphs were built both ways.
class Backward {
 public:
  Backward(GraphBuilder& b, T loss, bool src1_grad_by_mul_mat)
      : b_(b), loss_(loss), src1_grad_by_mul_mat_(src1_grad_by_mul_mat) {}

  Status run(T loss_grad) {
    forward_ = b_.nodes();
    const std::size_t n = b_.tensor_count();
    grad_.assign(n, kNoTensor);
    std::vector<char> depends_on_param(n, 0);
    for (T id : forward_) {
      const Tensor& t = b_.at(id);
      if (t.type == DataType::I32) continue;  // ggml skips integer nodes
      bool needs = (t.flags & kFlagParam) != 0;
      for (T s : t.src) {
        if (s != kNoTensor && depends_on_param[static_cast<std::size_t>(s)]) needs = true;
      }
      depends_on_param[static_cast<std::size_t>(id)] = needs ? 1 : 0;
    }
    // Only what the loss depends on gets a gradient.
    needed_.assign(n, 0);
    std::vector<char> feeds_loss(n, 0);
    feeds_loss[static_cast<std::size_t>(loss_)] = 1;
    for (auto it = forward_.rbegin(); it != forward_.rend(); ++it) {
      if (!feeds_loss[static_cast<std::size_t>(*it)]) continue;
      for (T s : b_.at(*it).src) {
        if (s != kNoTensor) feeds_loss[static_cast<std::size_t>(s)] = 1;
      }
    }
    for (std::size_t i = 0; i < n; ++i) needed_[i] = static_cast<char>(depends_on_param[i] && feeds_loss[i]);

    grad_[static_cast<std::size_t>(loss_)] = loss_grad;
    for (auto it = forward_.rbegin(); it != forward_.rend(); ++it) {
      GALLOC_RETURN_IF_ERROR(backward(*it));
    }
    return Status::ok();
  }

  // One OPT_STEP_ADAMW per parameter, from the last forward node to the first (ggml_opt_build).
  void optimizer_steps() {
    const T adamw_params = b_.input("adamw_params", DataType::F32, {7});
    for (auto it = forward_.rbegin(); it != forward_.rend(); ++it) {
      const Tensor& p = b_.at(*it);
      const T grad = grad_[static_cast<std::size_t>(*it)];
      if ((p.flags & kFlagParam) == 0 || grad == kNoTensor) continue;
      const std::string name = p.name;
      const Shape ne = p.ne;
      const T m = b_.weight("AdamW m for " + name, DataType::F32, {ne[0], ne[1], ne[2], ne[3]});
      const T v = b_.weight("AdamW v for " + name, DataType::F32, {ne[0], ne[1], ne[2], ne[3]});
      const T step = b_.name(b_.opt_step_adamw(*it, grad, m, v, adamw_params), "AdamW step for " + name);
      b_.expand(step);
    }
  }

 private:
  bool needs(T t) const { return t != kNoTensor && needed_[static_cast<std::size_t>(t)]; }

  // ggml_add_or_set: the first contribution is the gradient, later ones are added to it.
  void add_or_set(T src, T contribution) {
    T& grad = grad_[static_cast<std::size_t>(src)];
    grad = grad == kNoTensor ? contribution : b_.add(grad, contribution);
    b_.name(grad, "grad for " + b_.at(src).name);
    b_.expand(grad);
  }

  Status backward(T id) {
    const T grad = grad_[static_cast<std::size_t>(id)];
    if (grad == kNoTensor || !needs(id)) return Status::ok();
    const Tensor& t = b_.at(id);
    const T s0 = t.src[0];
    const T s1 = t.src[1];
    const Op op = t.op;
    switch (op) {
      case Op::None:  // a parameter
        return Status::ok();
      case Op::Add:
        if (needs(s0)) add_or_set(s0, grad);
        if (needs(s1)) add_or_set(s1, b_.at(s0).ne == b_.at(s1).ne ? grad : b_.repeat_back(grad, s1));
        return Status::ok();
      case Op::Mul:
        if (needs(s0)) add_or_set(s0, b_.mul(grad, s1));
        if (needs(s1)) {
          T tmp = b_.mul(s0, grad);
          if (b_.at(s0).ne != b_.at(s1).ne) tmp = b_.repeat_back(tmp, s1);
          add_or_set(s1, tmp);
        }
        return Status::ok();
      case Op::MulMat:
        if (needs(s0)) {
          T tmp = b_.out_prod(s1, grad);
          if (b_.nelements(tmp) != b_.nelements(s0)) tmp = b_.repeat_back(tmp, s0);
          add_or_set(s0, tmp);
        }
        if (needs(s1)) {
          if (src1_grad_by_mul_mat_) {
            add_or_set(s1, b_.mul_mat(b_.cont(b_.transpose(s0)), grad));
          } else {
            add_or_set(s1, b_.out_prod(s0, b_.transpose(grad)));
          }
        }
        return Status::ok();
      case Op::Scale:
        if (needs(s0)) add_or_set(s0, b_.scale(grad));
        return Status::ok();
      case Op::RmsNorm:
        if (needs(s0)) add_or_set(s0, b_.rms_norm_back(grad, s0));
        return Status::ok();
      case Op::Unary:
        if (!needs(s0)) return Status::ok();
        switch (b_.unary_op(id)) {
          case UnaryOp::kSilu: add_or_set(s0, b_.silu_back(grad, s0)); return Status::ok();
          case UnaryOp::kRelu: {
            const T step = b_.unary(s0, UnaryOp::kStep);
            add_or_set(s0, b_.mul(step, grad));
            return Status::ok();
          }
          default: break;
        }
        break;
      case Op::SoftMax:
        if (needs(s0)) add_or_set(s0, b_.soft_max_ext_back(grad, id));
        return Status::ok();
      case Op::Rope:
        if (needs(s0)) add_or_set(s0, b_.rope_back(grad, s1));
        return Status::ok();
      case Op::Reshape:
        if (needs(s0)) {
          const bool contiguous = b_.at(grad).nb == contiguous_strides(b_.at(grad).type, b_.at(grad).ne);
          add_or_set(s0, b_.reshape_like(contiguous ? grad : b_.cont(grad), s0));
        }
        return Status::ok();
      case Op::Permute:
        if (needs(s0)) {
          const auto axes = b_.axes(id);
          std::array<int, kMaxDims> inverse{};
          for (int i = 0; i < kMaxDims; ++i) inverse[static_cast<std::size_t>(axes[static_cast<std::size_t>(i)])] = i;
          add_or_set(s0, b_.permute(grad, inverse[0], inverse[1], inverse[2], inverse[3]));
        }
        return Status::ok();
      case Op::Transpose:
        if (needs(s0)) add_or_set(s0, b_.transpose(grad));
        return Status::ok();
      case Op::Cont:
        if (needs(s0)) add_or_set(s0, b_.at(id).ne == b_.at(s0).ne ? grad : b_.reshape_like(grad, s0));
        return Status::ok();
      case Op::GetRows:
        if (needs(s0)) add_or_set(s0, b_.get_rows_back(grad, s1, s0));
        return Status::ok();
      case Op::CrossEntropyLoss:
        if (needs(s0)) add_or_set(s0, b_.cross_entropy_loss_back(grad, s0, s1));
        return Status::ok();
      default: break;
    }
    return internal_error("zoo training graph: no backward rule for " + std::string(op_name(op)) + " (" +
                          b_.at(id).name + ")");
  }

  GraphBuilder& b_;
  T loss_;
  bool src1_grad_by_mul_mat_;
  std::vector<T> forward_;
  std::vector<T> grad_;
  std::vector<char> needed_;
};

// ggml_opt_build's cross-entropy tail: loss, prediction, correct count.
T loss_and_metrics(GraphBuilder& b, T logits) {
  b.set_output(logits);
  const T labels = b.input("labels", DataType::F32, {b.ne(logits, 0), b.ne(logits, 1)});
  const T loss = b.name(b.cross_entropy_loss(logits, labels), "loss_cross_entropy");
  b.set_output(loss);
  b.set_loss(loss);
  b.expand(loss);
  const T pred = b.name(b.argmax(logits), "pred");
  b.set_output(pred);
  b.expand(pred);
  const T ncorrect = b.name(b.count_equal(pred, b.argmax(labels)), "ncorrect");
  b.set_output(ncorrect);
  b.expand(ncorrect);
  return loss;
}

Result<Graph> finish_training(GraphBuilder& b, T loss, bool src1_grad_by_mul_mat) {
  Backward backward(b, loss, src1_grad_by_mul_mat);
  const T loss_grad = b.weight("loss grad seed", DataType::F32, {1});
  GALLOC_RETURN_IF_ERROR(backward.run(loss_grad));
  backward.optimizer_steps();
  return b.finish();
}

struct MlpConfig {
  std::int64_t n_input;
  std::int64_t n_hidden;
  std::int64_t n_classes;
  std::int64_t n_batch;
};

Result<Graph> build_mlp(MlpConfig c, const Scaler& s, BuilderMirror* mirror) {
  if (!s.full()) {
    c.n_input = s.count(c.n_input);
    c.n_hidden = s.count(c.n_hidden);
    c.n_batch = s.count(c.n_batch);
  }
  GraphBuilder b(mirror);
  const T images = b.input("images", DataType::F32, {c.n_input, c.n_batch});
  const T fc1_weight = b.param("fc1.weight", {c.n_input, c.n_hidden});
  const T fc1_bias = b.param("fc1.bias", {c.n_hidden});
  const T fc2_weight = b.param("fc2.weight", {c.n_hidden, c.n_classes});
  const T fc2_bias = b.param("fc2.bias", {c.n_classes});
  const T fc1 = b.relu(b.add(b.mul_mat(fc1_weight, images), fc1_bias));
  const T logits = b.name(b.add(b.mul_mat(fc2_weight, fc1), fc2_bias), "logits");
  const T loss = loss_and_metrics(b, logits);
  return finish_training(b, loss, /*src1_grad_by_mul_mat=*/true);
}

struct TransformerConfig {
  std::int64_t n_vocab;
  std::int64_t n_embd;
  std::int64_t n_head;
  std::int64_t n_ff;
  std::int64_t n_layer;
  std::int64_t n_ctx;
};

Result<Graph> build_transformer(TransformerConfig c, const Scaler& s, BuilderMirror* mirror) {
  if (!s.full()) {
    const std::int64_t head_dim = c.n_embd / c.n_head;
    c.n_vocab = s.count(c.n_vocab);
    c.n_head = s.count(c.n_head);
    c.n_embd = c.n_head * s.width(head_dim, 8);
    c.n_ff = s.width(c.n_ff, 8);
    c.n_layer = s.count(c.n_layer);
    c.n_ctx = s.count(c.n_ctx);
  }
  GraphBuilder b(mirror);
  const std::int64_t E = c.n_embd;
  const std::int64_t H = c.n_head;
  const std::int64_t hd = E / H;
  const std::int64_t n_tokens = c.n_ctx;
  const T tokens = b.input("tokens", DataType::I32, {n_tokens});
  const T positions = b.input("positions", DataType::I32, {n_tokens});
  const T kq_mask = b.input("kq_mask", DataType::F32, {n_tokens, n_tokens});
  const T tok_embd = b.param("tok_embd.weight", {E, c.n_vocab});
  T x = b.name(b.get_rows(tok_embd, tokens), "inp_embd");
  auto param = [&](std::int64_t il, const char* what, std::initializer_list<std::int64_t> ne) {
    return b.param("blk." + std::to_string(il) + "." + what, ne);
  };
  for (std::int64_t il = 0; il < c.n_layer; ++il) {
    const int layer = static_cast<int>(il);
    T h = b.rms_norm(x);
    h = b.mul(h, param(il, "attn_norm", {E}));
    T q = b.mul_mat(param(il, "attn_q", {E, E}), h);
    T k = b.mul_mat(param(il, "attn_k", {E, E}), h);
    T v = b.mul_mat(param(il, "attn_v", {E, E}), h);
    q = b.rope(b.reshape_3d(q, hd, H, n_tokens), positions);
    k = b.rope(b.reshape_3d(k, hd, H, n_tokens), positions);
    v = b.reshape_3d(v, hd, H, n_tokens);
    const T Q = b.permute(q, 0, 2, 1, 3);
    const T K = b.permute(k, 0, 2, 1, 3);
    T kq = b.name(b.mul_mat(K, Q), "kq", layer);
    kq = b.name(b.soft_max_ext(kq, kq_mask), "kq_soft_max", layer);
    const T V = b.cont(b.permute(v, 1, 2, 0, 3));
    const T kqv = b.name(b.mul_mat(V, kq), "kqv", layer);
    T o = b.cont_2d(b.permute(kqv, 0, 2, 1, 3), E, n_tokens);
    o = b.mul_mat(param(il, "attn_output", {E, E}), o);
    x = b.name(b.add(o, x), "ffn_inp", layer);
    h = b.rms_norm(x);
    h = b.mul(h, param(il, "ffn_norm", {E}));
    const T up = b.mul_mat(param(il, "ffn_up", {E, c.n_ff}), h);
    T gate = b.mul_mat(param(il, "ffn_gate", {E, c.n_ff}), h);
    gate = b.silu(gate);
    h = b.mul(gate, up);
    h = b.mul_mat(param(il, "ffn_down", {c.n_ff, E}), h);
    x = b.name(b.add(h, x), "l_out", layer);
  }
  x = b.rms_norm(x);
  x = b.mul(x, b.param("output_norm.weight", {E}));
  const T logits = b.name(b.mul_mat(b.param("output.weight", {E, c.n_vocab}), x), "logits");
  const T loss = loss_and_metrics(b, logits);
  return finish_training(b, loss, /*src1_grad_by_mul_mat=*/false);
}

}  // namespace

void add_training_recipes(std::vector<Recipe>& out) {
  out.push_back({"training-mlp",
                 "MNIST MLP training step (784 -> 500 ReLU -> 10, batch 500) as ggml's examples/mnist with "
                 "ggml-opt: forward, cross-entropy loss, backward (OUT_PROD, MUL_MAT of a transposed weight, "
                 "REPEAT_BACK, ReLU as STEP * grad), one OPT_STEP_ADAMW per parameter",
                 [](const Scaler& s, BuilderMirror* m) {
                   return build_mlp({784, 500, 10, 500}, s, m);
                 }});
  out.push_back({"training-llama-2l",
                 "Training step of a 2-layer llama-style transformer (n_embd 512, 8 heads, ffn 1536, vocab 8192, "
                 "256 tokens, f32 parameters): forward, cross-entropy loss, backward (OUT_PROD of transposed "
                 "views, SOFT_MAX_BACK, RMS_NORM_BACK, SILU_BACK, ROPE_BACK, GET_ROWS_BACK), AdamW steps",
                 [](const Scaler& s, BuilderMirror* m) {
                   return build_transformer({8192, 512, 8, 1536, 2, 256}, s, m);
                 }});
}

}  // namespace galloc::zoo
