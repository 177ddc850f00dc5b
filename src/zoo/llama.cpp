// llama-style decoders, as llama.cpp's llm_build_llama builds them (src/models/llama.cpp with
// llm_graph_context::build_attn / build_attn_mha / build_ffn and llama_kv_cache's cpy_k,
// cpy_v, get_k, get_v). The graphs are the ones llama.cpp reserves its compute buffer with:
// n_outputs = n_tokens, and the whole KV cache attended (n_kv = cache size).
//
// Two generations of llama.cpp are modelled, because their graphs differ in ways an
// allocator sees:
//  - llama.cpp of early 2025: 1-D per-layer K/V cache tensors written with ggml_cpy
//    into views of them (V transposed through a strided 2-D view), 3-D cache views read
//    directly, an f32 KQ mask padded to GGML_KQ_MASK_PAD rows (cast to f16 for flash
//    attention), and the FFN as UNARY silu + MUL.
//  - "current" (llama.cpp 2025-2026): 3-D caches written with ggml_set_rows through i64 row
//    index inputs (V transposed element by element), 4-D cache views that build_attn_mha
//    permutes, an unpadded mask (f16 for flash attention), the embeddings expanded at once,
//    and the FFN as GLU swiglu_split.
#include <algorithm>
#include <string>

#include "builder.hpp"

namespace galloc::zoo {

namespace {

using T = TensorId;

constexpr std::int64_t kEarly2025KqMaskPad = 64;  // GGML_KQ_MASK_PAD in ggml of early 2025

enum class Era : std::uint8_t { kEarly2025, kCurrent };

struct LlamaConfig {
  std::int64_t n_embd;
  std::int64_t n_layer;
  std::int64_t n_head;
  std::int64_t n_head_kv;
  std::int64_t n_ff;
  std::int64_t n_vocab;
  std::int64_t n_tokens;  // tokens in the micro-batch
  std::int64_t n_ctx;     // KV cache cells, all attended (n_kv)
  bool flash_attn;
  Era era;
};

// Heads and head size shrink (the GQA ratio is kept), then layers, FFN, vocabulary, tokens
// and the cache; widths stay multiples of 32 for q4_0 rows.
LlamaConfig scaled(LlamaConfig c, const Scaler& s) {
  if (s.full()) return c;
  const std::int64_t head_dim = c.n_embd / c.n_head;
  const std::int64_t group = c.n_head / c.n_head_kv;
  c.n_head_kv = s.count(c.n_head_kv);
  c.n_head = c.n_head_kv * group;
  c.n_embd = c.n_head * s.width(head_dim, 32);
  c.n_layer = s.count(c.n_layer);
  c.n_ff = s.width(c.n_ff, 32);
  c.n_vocab = s.count(c.n_vocab);
  c.n_tokens = s.count(c.n_tokens);
  c.n_ctx = std::max(c.n_tokens, s.count(c.n_ctx));
  return c;
}

std::int64_t pad_to(std::int64_t n, std::int64_t multiple) { return (n + multiple - 1) / multiple * multiple; }

std::string blk(std::int64_t il, const char* what) { return "blk." + std::to_string(il) + "." + what + ".weight"; }

class LlamaGraph {
 public:
  LlamaGraph(const LlamaConfig& c, BuilderMirror* mirror)
      : c_(c),
        head_dim_(c.n_embd / c.n_head),
        n_embd_gqa_(head_dim_ * c.n_head_kv),
        current_(c.era == Era::kCurrent),
        b_(mirror) {}

  Result<Graph> build() {
    const std::int64_t n_tokens = c_.n_tokens;
    const T tok_embd = b_.weight("token_embd.weight", kWeight, {c_.n_embd, c_.n_vocab});
    const T output_norm = b_.weight("output_norm.weight", DataType::F32, {c_.n_embd});
    const T output = b_.weight("output.weight", kWeight, {c_.n_embd, c_.n_vocab});

    // build_inp_embd
    const T inp_tokens = b_.input("inp_tokens", DataType::I32, {n_tokens});
    T inpL = b_.name(b_.get_rows(tok_embd, inp_tokens), "inp_embd");
    if (current_) b_.expand(inpL);

    // build_inp_pos, build_attn_inp_kv, build_inp_out_ids
    inp_pos_ = b_.input("inp_pos", DataType::I32, {n_tokens});
    if (current_) {
      k_idxs_ = b_.input("inp_k_idxs", DataType::I64, {n_tokens});
      v_idxs_ = b_.input("inp_v_idxs", DataType::I64, {c_.flash_attn ? n_tokens : n_tokens * n_embd_gqa_});
      kq_mask_ =
          b_.input("attn_inp_kq_mask", c_.flash_attn ? DataType::F16 : DataType::F32, {c_.n_ctx, n_tokens, 1, 1});
    } else {
      const T mask = b_.input("KQ_mask", DataType::F32, {c_.n_ctx, pad_to(n_tokens, kEarly2025KqMaskPad)});
      kq_mask_ = c_.flash_attn ? b_.cast(mask, DataType::F16) : mask;
    }
    const T inp_out_ids = b_.input("inp_out_ids", DataType::I32, {n_tokens});

    for (std::int64_t il = 0; il < c_.n_layer; ++il) {
      const int layer = static_cast<int>(il);
      T inpSA = inpL;
      // norm
      T cur = b_.rms_norm(inpL);
      cur = b_.name(b_.mul(cur, b_.weight(blk(il, "attn_norm"), DataType::F32, {c_.n_embd})), "attn_norm", layer);

      // self-attention: Q, K, V, RoPE
      T Qcur = b_.name(b_.mul_mat(b_.weight(blk(il, "attn_q"), kWeight, {c_.n_embd, c_.n_embd}), cur), "Qcur", layer);
      T Kcur = b_.name(b_.mul_mat(b_.weight(blk(il, "attn_k"), kWeight, {c_.n_embd, n_embd_gqa_}), cur), "Kcur", layer);
      T Vcur = b_.name(b_.mul_mat(b_.weight(blk(il, "attn_v"), kWeight, {c_.n_embd, n_embd_gqa_}), cur), "Vcur", layer);
      Qcur = b_.reshape_3d(Qcur, head_dim_, c_.n_head, n_tokens);
      Kcur = b_.reshape_3d(Kcur, head_dim_, c_.n_head_kv, n_tokens);
      Vcur = b_.reshape_3d(Vcur, head_dim_, c_.n_head_kv, n_tokens);
      Qcur = b_.name(b_.rope(Qcur, inp_pos_), "Qcur", layer);
      Kcur = b_.name(b_.rope(Kcur, inp_pos_), "Kcur", layer);

      const T wo = b_.weight(blk(il, "attn_output"), kWeight, {c_.n_embd, c_.n_embd});
      cur = current_ ? attention_current(il, Qcur, Kcur, Vcur) : attention_early_2025(il, Qcur, Kcur, Vcur);
      cur = b_.name(b_.mul_mat(wo, cur), "attn_out", layer);

      if (il == c_.n_layer - 1) {
        cur = b_.get_rows(cur, inp_out_ids);
        inpSA = b_.get_rows(inpSA, inp_out_ids);
      }
      const T ffn_inp = b_.name(b_.add(cur, inpSA), "ffn_inp", layer);

      // feed-forward network: build_ffn(LLM_FFN_SILU, LLM_FFN_PAR)
      cur = b_.rms_norm(ffn_inp);
      cur = b_.name(b_.mul(cur, b_.weight(blk(il, "ffn_norm"), DataType::F32, {c_.n_embd})), "ffn_norm", layer);
      const T up =
          b_.name(b_.mul_mat(b_.weight(blk(il, "ffn_up"), kWeight, {c_.n_embd, c_.n_ff}), cur), "ffn_up", layer);
      T gate =
          b_.name(b_.mul_mat(b_.weight(blk(il, "ffn_gate"), kWeight, {c_.n_embd, c_.n_ff}), cur), "ffn_gate", layer);
      if (current_) {
        cur = b_.name(b_.glu_split(gate, up, UnaryOp::kSilu), "ffn_swiglu", layer);
      } else {
        gate = b_.name(b_.silu(gate), "ffn_silu", layer);
        cur = b_.name(b_.mul(gate, up), "ffn_gate_par", layer);
      }
      cur = b_.mul_mat(b_.weight(blk(il, "ffn_down"), kWeight, {c_.n_ff, c_.n_embd}), cur);
      cur = b_.name(b_.add(cur, ffn_inp), "l_out", layer);
      inpL = cur;
    }

    T cur = b_.rms_norm(inpL);
    cur = b_.name(b_.mul(cur, output_norm), "result_norm");
    b_.set_output(cur);  // res->t_embd
    cur = b_.name(b_.mul_mat(output, cur), "result_output");
    b_.set_output(cur);  // res->t_logits
    b_.expand(cur);
    return b_.finish();
  }

 private:
  static constexpr DataType kWeight = DataType::Q4_0;
  static constexpr DataType kCache = DataType::F16;

  // llama.cpp early 2025: ggml_cpy into views of 1-D caches, 3-D cache views.
  T attention_early_2025(std::int64_t il, T q_cur, T k_cur, T v_cur) {
    const int layer = static_cast<int>(il);
    const std::int64_t n_tokens = c_.n_tokens;
    const std::int64_t n_ctx = c_.n_ctx;
    const std::int64_t kv_head = n_ctx - n_tokens;  // the new tokens fill the end of the cache
    const Bytes esize = GraphBuilder::row_size(kCache, 1);
    const T k_l = b_.weight("cache_k_l" + std::to_string(il), kCache, {n_embd_gqa_ * n_ctx});
    const T v_l = b_.weight("cache_v_l" + std::to_string(il), kCache, {n_embd_gqa_ * n_ctx});

    b_.expand(q_cur);
    b_.expand(k_cur);
    b_.expand(v_cur);
    // store to the KV cache (RoPE-d K; V transposed unless flash attention)
    const T k_cache_view = b_.view_1d(k_l, n_tokens * n_embd_gqa_,
                                      GraphBuilder::row_size(kCache, n_embd_gqa_) * static_cast<Bytes>(kv_head));
    b_.expand(b_.cpy(k_cur, k_cache_view));
    T v_src = b_.reshape_2d(v_cur, n_embd_gqa_, n_tokens);
    T v_cache_view;
    if (c_.flash_attn) {
      v_cache_view = b_.view_1d(v_l, n_tokens * n_embd_gqa_,
                                GraphBuilder::row_size(kCache, n_embd_gqa_) * static_cast<Bytes>(kv_head));
    } else {
      v_cache_view = b_.view_2d(v_l, n_tokens, n_embd_gqa_, esize * static_cast<Bytes>(n_ctx),
                                esize * static_cast<Bytes>(kv_head));
      v_src = b_.transpose(v_src);
    }
    b_.expand(b_.cpy(v_src, v_cache_view));

    const T k = b_.view_3d(k_l, head_dim_, n_ctx, c_.n_head_kv, GraphBuilder::row_size(kCache, n_embd_gqa_),
                           GraphBuilder::row_size(kCache, head_dim_), 0);
    const T v = c_.flash_attn
                    ? b_.view_3d(v_l, head_dim_, n_ctx, c_.n_head_kv, GraphBuilder::row_size(kCache, n_embd_gqa_),
                                 GraphBuilder::row_size(kCache, head_dim_), 0)
                    : b_.view_3d(v_l, n_ctx, head_dim_, c_.n_head_kv, esize * static_cast<Bytes>(n_ctx),
                                 esize * static_cast<Bytes>(n_ctx * head_dim_), 0);
    const T q = b_.permute(q_cur, 0, 2, 1, 3);
    T cur;
    if (c_.flash_attn) {
      cur = b_.flash_attn_ext(q, k, v, kq_mask_);
      cur = b_.reshape_2d(cur, b_.ne(cur, 0) * b_.ne(cur, 1), b_.ne(cur, 2) * b_.ne(cur, 3));
    } else {
      T kq = b_.name(b_.mul_mat(k, q), "kq", layer);
      kq = b_.name(b_.soft_max_ext(kq, kq_mask_), "kq_soft_max_ext", layer);
      const T kqv = b_.name(b_.mul_mat(v, kq), "kqv", layer);
      cur = b_.permute(kqv, 0, 2, 1, 3);
      cur = b_.cont_2d(cur, head_dim_ * c_.n_head, n_tokens);
    }
    cur = b_.name(cur, "kqv_out", layer);
    b_.expand(cur);
    return cur;
  }

  // llama.cpp 2025-2026: ggml_set_rows into 3-D caches, 4-D views permuted by build_attn_mha.
  T attention_current(std::int64_t il, T q_cur, T k_cur, T v_cur) {
    const int layer = static_cast<int>(il);
    const std::int64_t n_tokens = c_.n_tokens;
    const std::int64_t kv_size = c_.n_ctx;
    const std::int64_t n_kv = c_.n_ctx;
    const T k_l = b_.weight("cache_k_l" + std::to_string(il), kCache, {n_embd_gqa_, kv_size, 1});
    const T v_l = b_.weight("cache_v_l" + std::to_string(il), kCache, {n_embd_gqa_, kv_size, 1});

    // expand k later to enable rope fusion which directly writes into the cache
    b_.expand(q_cur);
    b_.expand(v_cur);
    b_.expand(k_cur);
    // cpy_k: merge dims 0 and 1, set the rows
    {
      const T k_rows = b_.view_2d(k_cur, n_embd_gqa_, n_tokens, b_.nb(k_cur, 2), 0);
      b_.expand(b_.set_rows(k_l, k_rows, k_idxs_));
    }
    // cpy_v: rows when the cache is not transposed (flash attention), else single elements
    if (c_.flash_attn) {
      const T v_rows = b_.view_2d(v_cur, n_embd_gqa_, n_tokens, b_.nb(v_cur, 2), 0);
      b_.expand(b_.set_rows(v_l, v_rows, v_idxs_));
    } else {
      T v_rows = b_.reshape_2d(v_cur, n_embd_gqa_, n_tokens);
      const T v_view = b_.reshape_2d(v_l, 1, b_.nelements(v_l));
      v_rows = b_.reshape_2d(v_rows, 1, b_.nelements(v_rows));
      b_.expand(b_.set_rows(v_view, v_rows, v_idxs_));
    }

    // get_k / get_v: one stream
    const T k = b_.view_4d(k_l, head_dim_, c_.n_head_kv, n_kv, 1, GraphBuilder::row_size(kCache, head_dim_),
                           GraphBuilder::row_size(kCache, n_embd_gqa_),
                           GraphBuilder::row_size(kCache, n_embd_gqa_ * kv_size), 0);
    const T v =
        c_.flash_attn
            ? b_.view_4d(v_l, head_dim_, c_.n_head_kv, n_kv, 1, GraphBuilder::row_size(kCache, head_dim_),
                         GraphBuilder::row_size(kCache, n_embd_gqa_),
                         GraphBuilder::row_size(kCache, n_embd_gqa_ * kv_size), 0)
            : b_.view_4d(v_l, n_kv, c_.n_head_kv, head_dim_, 1, GraphBuilder::row_size(kCache, kv_size * head_dim_),
                         GraphBuilder::row_size(kCache, kv_size), GraphBuilder::row_size(kCache, kv_size * n_embd_gqa_),
                         0);

    // build_attn_mha
    T q = b_.view_4d(q_cur, b_.ne(q_cur, 0), b_.ne(q_cur, 1), b_.ne(q_cur, 2), 1, b_.nb(q_cur, 1), b_.nb(q_cur, 2),
                     b_.nb(q_cur, 3), 0);
    q = b_.permute(q, 0, 2, 1, 3);
    const T kp = b_.permute(k, 0, 2, 1, 3);
    const T vp = b_.permute(v, 0, 2, 1, 3);
    T cur;
    if (c_.flash_attn) {
      cur = b_.flash_attn_ext(q, kp, vp, kq_mask_);
      cur = b_.reshape_2d(cur, b_.ne(cur, 0) * b_.ne(cur, 1), b_.ne(cur, 2) * b_.ne(cur, 3));
    } else {
      T kq = b_.name(b_.mul_mat(kp, q), "kq", layer);
      kq = b_.name(b_.soft_max_ext(kq, kq_mask_), "kq_soft_max", layer);
      const T kqv = b_.name(b_.mul_mat(vp, kq), "kqv", layer);
      cur = b_.permute(kqv, 0, 2, 1, 3);
      cur = b_.cont_2d(cur, b_.ne(cur, 0) * b_.ne(cur, 1), b_.ne(cur, 2) * b_.ne(cur, 3));
    }
    cur = b_.name(cur, "kqv_out", layer);
    b_.expand(cur);
    return cur;
  }

  LlamaConfig c_;
  std::int64_t head_dim_;
  std::int64_t n_embd_gqa_;
  bool current_;
  GraphBuilder b_;
  T inp_pos_ = kNoTensor;
  T k_idxs_ = kNoTensor;
  T v_idxs_ = kNoTensor;
  T kq_mask_ = kNoTensor;
};

// LLaMA-1/2 7B, Llama 3 8B, TinyLlama 1.1B.
constexpr LlamaConfig kLlama7b{4096, 32, 32, 32, 11008, 32000, 512, 512, false, Era::kEarly2025};
constexpr LlamaConfig kLlama3_8b{4096, 32, 32, 8, 14336, 128256, 512, 512, false, Era::kCurrent};
constexpr LlamaConfig kTinyLlama{2048, 22, 32, 4, 5632, 32000, 512, 512, false, Era::kCurrent};

LlamaConfig with(LlamaConfig c, std::int64_t n_tokens, std::int64_t n_ctx, bool flash_attn) {
  c.n_tokens = n_tokens;
  c.n_ctx = n_ctx;
  c.flash_attn = flash_attn;
  return c;
}

void add(std::vector<Recipe>& out, std::string name, std::string description, LlamaConfig config) {
  out.push_back({std::move(name), std::move(description),
                 [config](const Scaler& s, BuilderMirror* m) { return LlamaGraph(scaled(config, s), m).build(); }});
}

}  // namespace

void add_llama_recipes(std::vector<Recipe>& out) {
  const std::string llama7b =
      "LLaMA 7B (n_embd 4096, 32 layers, 32 heads, ffn 11008, vocab 32000, q4_0 weights, f16 KV cache)";
  const std::string llama3 =
      "Llama 3 8B (n_embd 4096, 32 layers, 32 heads / 8 KV heads (GQA), ffn 14336, vocab 128256, q4_0, f16 KV cache)";
  const std::string early_2025 = "; llama.cpp early 2025: ggml_cpy into 1-D cache views, silu + mul FFN";
  const std::string current = "; llama.cpp 2025-26: ggml_set_rows into the cache, swiglu FFN";
  add(out, "llama-7b-pp512", llama7b + ", prompt processing of 512 tokens with a 512-cell cache" + early_2025,
      kLlama7b);
  add(out, "llama-7b-pp2048", llama7b + ", one 2048-token micro-batch with a 2048-cell cache" + early_2025,
      with(kLlama7b, 2048, 2048, false));
  add(out, "llama-7b-tg1-kv4096", llama7b + ", generation of one token against a full 4096-cell cache" + early_2025,
      with(kLlama7b, 1, 4096, false));
  add(out, "llama-7b-pp512-fa", llama7b + ", pp512 with flash attention (FLASH_ATTN_EXT, f16 mask cast)" + early_2025,
      with(kLlama7b, 512, 512, true));
  add(out, "llama-3-8b-pp512", llama3 + ", prompt processing of 512 tokens with a 512-cell cache" + current,
      kLlama3_8b);
  add(out, "llama-3-8b-pp512-fa", llama3 + ", pp512 with flash attention (FLASH_ATTN_EXT, f16 mask)" + current,
      with(kLlama3_8b, 512, 512, true));
  add(out, "llama-3-8b-tg1-kv8192", llama3 + ", generation of one token against a full 8192-cell cache" + current,
      with(kLlama3_8b, 1, 8192, false));
  add(out, "llama-tinyllama-pp512",
      "TinyLlama 1.1B (n_embd 2048, 22 layers, 32 heads / 4 KV heads, ffn 5632, vocab 32000, q4_0), "
      "prompt processing of 512 tokens" +
          current,
      kTinyLlama);
}

}  // namespace galloc::zoo
