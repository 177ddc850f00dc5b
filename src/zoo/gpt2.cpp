// GPT-2 small, as ggml's examples/gpt-2/main-ctx.cpp builds it: ggml_repeat for every bias
// and norm weight, the fused QKV projection split with views, K and V copied into views of
// the 1-D memory_k / memory_v caches, and the attention going through fresh tensors
// (ggml_cpy(Qcur, ggml_new_tensor_3d(...)), the V transpose and the merged heads): leafs the
// graph only writes, which ggml allocates at step 0. The scaled, masked softmax is done in
// place (views of KQ). The inputs are flagged as main-backend.cpp flags them.
#include <string>

#include "builder.hpp"

namespace galloc::zoo {

namespace {

using T = TensorId;

struct Gpt2Config {
  std::int64_t n_vocab;
  std::int64_t n_ctx;
  std::int64_t n_embd;
  std::int64_t n_head;
  std::int64_t n_layer;
  std::int64_t n_tokens;  // N
  std::int64_t n_past;
};

constexpr Gpt2Config kSmall{50257, 1024, 768, 12, 12, 1024, 0};

Gpt2Config scaled(Gpt2Config c, const Scaler& s) {
  if (s.full()) return c;
  const std::int64_t head_dim = c.n_embd / c.n_head;
  c.n_vocab = s.count(c.n_vocab);
  c.n_head = s.count(c.n_head);
  c.n_embd = c.n_head * s.width(head_dim, 8);
  c.n_layer = s.count(c.n_layer);
  const bool generating = c.n_tokens == 1;
  c.n_ctx = s.count(c.n_ctx);
  c.n_tokens = generating ? 1 : c.n_ctx;
  c.n_past = c.n_ctx - c.n_tokens;
  return c;
}

std::string layer(std::int64_t il, const char* what) { return "model/h" + std::to_string(il) + "/" + what; }

Result<Graph> build_gpt2(const Gpt2Config& c, BuilderMirror* mirror) {
  GraphBuilder b(mirror);
  const std::int64_t N = c.n_tokens;
  const std::int64_t n_embd = c.n_embd;
  const std::int64_t n_head = c.n_head;
  const std::int64_t n_ctx = c.n_ctx;
  const std::int64_t n_past = c.n_past;
  const DataType wtype = DataType::F16;
  const Bytes f32 = GraphBuilder::row_size(DataType::F32, 1);

  const T wte = b.weight("model/wte", wtype, {n_embd, c.n_vocab});
  const T wpe = b.weight("model/wpe", DataType::F32, {n_embd, n_ctx});
  const T lm_head = b.weight("model/lm_head", wtype, {n_embd, c.n_vocab});
  const T ln_f_g = b.weight("model/ln_f/g", DataType::F32, {n_embd});
  const T ln_f_b = b.weight("model/ln_f/b", DataType::F32, {n_embd});
  const DataType memory_type = DataType::F32;  // the example's KV memory is f32
  const T memory_k = b.weight("memory_k", memory_type, {n_embd * c.n_layer * n_ctx});
  const T memory_v = b.weight("memory_v", memory_type, {n_embd * c.n_layer * n_ctx});
  const Bytes esize = GraphBuilder::row_size(memory_type, 1);

  const T embd = b.input("embd", DataType::I32, {N});
  const T position = b.input("position", DataType::I32, {N});

  // ln_g*norm(x) + ln_b, with the weights repeated to x's shape
  auto norm = [&](T x, T g, T bias) {
    T cur = b.norm(x);
    const T g_rep = b.repeat(g, cur);
    cur = b.mul(g_rep, cur);
    const T b_rep = b.repeat(bias, cur);
    return b.add(cur, b_rep);
  };
  // repeat(bias) + mul_mat(w, x)
  auto linear = [&](T x, const std::string& prefix, std::int64_t n_in, std::int64_t n_out) {
    const T w = b.weight(prefix + "/w", wtype, {n_in, n_out});
    const T cur = b.mul_mat(w, x);
    const T bias = b.repeat(b.weight(prefix + "/b", DataType::F32, {n_out}), cur);
    return b.add(bias, cur);
  };

  const T tok = b.get_rows(wte, embd);
  const T pos = b.get_rows(wpe, position);
  T inpL = b.add(tok, pos);

  for (std::int64_t il = 0; il < c.n_layer; ++il) {
    const T ln_1_g = b.weight(layer(il, "ln_1/g"), DataType::F32, {n_embd});
    const T ln_1_b = b.weight(layer(il, "ln_1/b"), DataType::F32, {n_embd});
    T cur = norm(inpL, ln_1_g, ln_1_b);
    cur = linear(cur, layer(il, "attn/c_attn"), n_embd, 3 * n_embd);  // [3*n_embd, N]

    // self-attention
    {
      const T Qcur = b.view_2d(cur, n_embd, N, b.nb(cur, 1), 0 * f32 * static_cast<Bytes>(n_embd));
      const T Kcur = b.view_2d(cur, n_embd, N, b.nb(cur, 1), 1 * f32 * static_cast<Bytes>(n_embd));
      const T Vcur = b.view_2d(cur, n_embd, N, b.nb(cur, 1), 2 * f32 * static_cast<Bytes>(n_embd));
      // store key and value to memory
      const Bytes store = esize * static_cast<Bytes>(n_embd) * static_cast<Bytes>(il * n_ctx + n_past);
      const T k = b.view_1d(memory_k, N * n_embd, store);
      const T v = b.view_1d(memory_v, N * n_embd, store);
      b.expand(b.cpy(Kcur, k));
      b.expand(b.cpy(Vcur, v));

      const Bytes layer_base = static_cast<Bytes>(il * n_ctx) * esize * static_cast<Bytes>(n_embd);
      const std::int64_t n_kv = n_past + N;
      // Q = Qcur.contiguous().view(n_embd/n_head, n_head, N).permute(0, 2, 1, 3)
      const T Q = b.permute(b.cpy(Qcur, b.new_tensor(DataType::F32, {n_embd / n_head, n_head, N})), 0, 2, 1, 3);
      // K = Kmem.view(n_embd/n_head, n_head, n_past + N).permute(0, 2, 1, 3)
      const T K = b.permute(b.reshape_3d(b.view_1d(memory_k, n_kv * n_embd, layer_base), n_embd / n_head, n_head, n_kv),
                            0, 2, 1, 3);
      const T KQ = b.mul_mat(K, Q);
      const T KQ_scaled = b.scale_inplace(KQ);
      const T KQ_masked = b.diag_mask_inf_inplace(KQ_scaled);
      const T KQ_soft_max = b.soft_max_inplace(KQ_masked);
      // V_trans = Vmem.view(n_embd/n_head, n_head, n_past + N).permute(1, 2, 0, 3).contiguous()
      const T V_perm = b.permute(
          b.reshape_3d(b.view_1d(memory_v, n_kv * n_embd, layer_base), n_embd / n_head, n_head, n_kv), 1, 2, 0, 3);
      const T V_trans = b.cpy(V_perm, b.new_tensor(memory_type, {n_kv, n_embd / n_head, n_head}));
      const T KQV = b.mul_mat(V_trans, KQ_soft_max);
      const T KQV_merged = b.permute(KQV, 0, 2, 1, 3);
      // cur = KQV_merged.contiguous().view(n_embd, N)
      cur = b.cpy(KQV_merged, b.new_tensor(DataType::F32, {n_embd, N}));
    }
    cur = linear(cur, layer(il, "attn/c_proj"), n_embd, n_embd);
    cur = b.add(cur, inpL);
    const T inpFF = cur;

    // feed-forward network
    const T ln_2_g = b.weight(layer(il, "ln_2/g"), DataType::F32, {n_embd});
    const T ln_2_b = b.weight(layer(il, "ln_2/b"), DataType::F32, {n_embd});
    cur = norm(inpFF, ln_2_g, ln_2_b);
    cur = linear(cur, layer(il, "mlp/c_fc"), n_embd, 4 * n_embd);
    cur = b.gelu(cur);
    cur = linear(cur, layer(il, "mlp/c_proj"), 4 * n_embd, n_embd);
    inpL = b.add(cur, inpFF);
  }
  inpL = norm(inpL, ln_f_g, ln_f_b);
  inpL = b.name(b.mul_mat(lm_head, inpL), "logits");
  b.set_output(inpL);
  b.expand(inpL);
  return b.finish();
}

}  // namespace

void add_gpt2_recipes(std::vector<Recipe>& out) {
  const std::string small =
      "GPT-2 small 117M (n_embd 768, 12 layers, 12 heads, ctx 1024, vocab 50257, f16 weights, f32 KV memory), "
      "as ggml's examples/gpt-2/main-ctx.cpp builds it, ";
  Gpt2Config tg = kSmall;
  tg.n_tokens = 1;
  tg.n_past = kSmall.n_ctx - 1;
  out.push_back({"gpt2-small-pp1024", small + "one 1024-token prompt",
                 [](const Scaler& s, BuilderMirror* m) { return build_gpt2(scaled(kSmall, s), m); }});
  out.push_back({"gpt2-small-tg1", small + "one token after 1023 past tokens",
                 [tg](const Scaler& s, BuilderMirror* m) { return build_gpt2(scaled(tg, s), m); }});
}

}  // namespace galloc::zoo
