// Whisper, as whisper.cpp builds it (whisper_build_graph_conv / _encoder / _cross / _decoder,
// without flash attention). whisper.cpp runs conv and encoder as two graphs; here they are
// one, the conv output (embd_conv) feeding the encoder directly instead of through
// ggml_view_tensor. The encoder's attention copies Q, K and V into fresh tensors
// (ggml_cpy(x, ggml_new_tensor_3d(...))), the leaf pattern ggml allocates at step 0.
#include <algorithm>
#include <string>

#include "builder.hpp"

namespace galloc::zoo {

namespace {

using T = TensorId;

constexpr std::int64_t kKqMaskPad = 64;  // GGML_KQ_MASK_PAD of the ggml whisper.cpp vendors

struct WhisperConfig {
  std::int64_t n_mels;
  std::int64_t n_audio_ctx;  // frames after the stride-2 conv (1500 for 30 s)
  std::int64_t n_audio_state;
  std::int64_t n_audio_head;
  std::int64_t n_audio_layer;
  std::int64_t n_text_ctx;
  std::int64_t n_text_state;
  std::int64_t n_text_head;
  std::int64_t n_text_layer;
  std::int64_t n_vocab;
};

constexpr WhisperConfig kBase{80, 1500, 512, 8, 6, 448, 512, 8, 6, 51865};
constexpr WhisperConfig kLarge{128, 1500, 1280, 20, 32, 448, 1280, 20, 32, 51866};  // large-v3

WhisperConfig scaled(WhisperConfig c, const Scaler& s) {
  if (s.full()) return c;
  const std::int64_t audio_head_dim = c.n_audio_state / c.n_audio_head;
  c.n_mels = s.count(c.n_mels);
  c.n_audio_ctx = s.count(c.n_audio_ctx);
  c.n_audio_head = s.count(c.n_audio_head);
  c.n_audio_state = c.n_audio_head * s.width(audio_head_dim, 8);
  c.n_audio_layer = s.count(c.n_audio_layer);
  c.n_text_ctx = s.count(c.n_text_ctx);
  // The decoder's cross-attention reads the encoder output: the widths must agree.
  c.n_text_head = c.n_audio_head;
  c.n_text_state = c.n_audio_state;
  c.n_text_layer = s.count(c.n_text_layer);
  c.n_vocab = s.count(c.n_vocab);
  return c;
}

std::int64_t pad_to(std::int64_t n, std::int64_t multiple) { return (n + multiple - 1) / multiple * multiple; }

std::string enc(std::int64_t il, const char* what) { return "encoder.blocks." + std::to_string(il) + "." + what; }
std::string dec(std::int64_t il, const char* what) { return "decoder.blocks." + std::to_string(il) + "." + what; }

constexpr DataType kW = DataType::F16;      // wtype of an f16 model
constexpr DataType kItype = DataType::F16;  // wctx.itype: K/V copies and caches

// cur = ln_w*norm(cur) + ln_b
T layer_norm(GraphBuilder& b, T x, const std::string& prefix, std::int64_t n) {
  const T w = b.weight(prefix + ".weight", DataType::F32, {n});
  const T bias = b.weight(prefix + ".bias", DataType::F32, {n});
  return b.add(b.mul(b.norm(x), w), bias);
}

// mul_mat(w, x) (+ bias)
T linear(GraphBuilder& b, T x, const std::string& prefix, std::int64_t n_in, std::int64_t n_out, bool bias = true) {
  const T w = b.weight(prefix + ".weight", kW, {n_in, n_out});
  T y = b.mul_mat(w, x);
  if (bias) y = b.add(y, b.weight(prefix + ".bias", DataType::F32, {n_out}));
  return y;
}

// fc -> gelu -> fc
T mlp(GraphBuilder& b, T x, const std::string& prefix, std::int64_t n_state) {
  T cur = layer_norm(b, x, prefix + "mlp_ln", n_state);
  cur = linear(b, cur, prefix + "mlp.0", n_state, 4 * n_state);
  cur = b.gelu(cur);
  return linear(b, cur, prefix + "mlp.2", 4 * n_state, n_state);
}

// Conv stem + encoder: mel [2*n_ctx, n_mels] -> embd_enc [n_state, n_ctx].
Result<Graph> build_encoder(const WhisperConfig& c, BuilderMirror* mirror) {
  GraphBuilder b(mirror);
  const std::int64_t n_ctx = c.n_audio_ctx;
  const std::int64_t n_state = c.n_audio_state;
  const std::int64_t n_head = c.n_audio_head;
  const std::int64_t n_state_head = n_state / n_head;

  // whisper_build_graph_conv
  const T mel_inp = b.input("mel", DataType::F32, {2 * n_ctx, c.n_mels});
  T mel = b.view_2d(mel_inp, 2 * n_ctx, c.n_mels, b.nb(mel_inp, 1), 0);
  mel = b.name(b.cont(mel), "mel");
  T cur = b.conv_1d_ph(b.weight("encoder.conv1.weight", kW, {3, c.n_mels, n_state}), mel, 1, 1);
  cur = b.add(cur, b.weight("encoder.conv1.bias", DataType::F32, {1, n_state}));
  cur = b.gelu(cur);
  cur = b.conv_1d_ph(b.weight("encoder.conv2.weight", kW, {3, n_state, n_state}), cur, 2, 1);
  cur = b.add(cur, b.weight("encoder.conv2.bias", DataType::F32, {1, n_state}));
  cur = b.name(b.gelu(cur), "embd_conv");

  // whisper_build_graph_encoder
  const T e_pe_w = b.weight("encoder.positional_embedding", DataType::F32, {n_state, c.n_audio_ctx});
  const T e_pe = b.view_2d(e_pe_w, n_state, n_ctx, b.nb(e_pe_w, 1), 0);
  cur = b.add(e_pe, b.cont(b.transpose(cur)));
  T inpL = cur;
  for (std::int64_t il = 0; il < c.n_audio_layer; ++il) {
    const std::string p = enc(il, "");
    cur = layer_norm(b, inpL, p + "attn_ln", n_state);
    // self-attention
    const T Qcur = linear(b, cur, p + "attn.query", n_state, n_state);
    const T Kcur = linear(b, cur, p + "attn.key", n_state, n_state, /*bias=*/false);
    const T Vcur = linear(b, cur, p + "attn.value", n_state, n_state);
    const T Q = b.permute(b.cpy(Qcur, b.new_tensor(DataType::F32, {n_state_head, n_head, n_ctx})), 0, 2, 1, 3);
    const T K = b.permute(b.cpy(Kcur, b.new_tensor(kItype, {n_state_head, n_head, n_ctx})), 0, 2, 1, 3);
    const T KQ = b.mul_mat(K, Q);
    const T KQ_soft_max = b.soft_max_ext(KQ, kNoTensor);
    const T V_perm = b.permute(b.reshape_3d(Vcur, n_state_head, n_head, n_ctx), 1, 2, 0, 3);
    const T V = b.cpy(V_perm, b.new_tensor(kItype, {n_ctx, n_state_head, n_head}));
    const T KQV = b.mul_mat(V, KQ_soft_max);
    const T KQV_merged = b.permute(KQV, 0, 2, 1, 3);
    cur = b.cpy(KQV_merged, b.new_tensor(DataType::F32, {n_state, n_ctx}));
    // projection, residual
    cur = linear(b, cur, p + "attn.out", n_state, n_state);
    cur = b.add(cur, inpL);
    const T inpFF = cur;
    cur = mlp(b, inpFF, p, n_state);
    inpL = b.add(cur, inpFF);
  }
  cur = layer_norm(b, inpL, "encoder.ln_post", n_state);
  cur = b.name(cur, "embd_enc");
  b.set_output(cur);
  b.expand(cur);
  return b.finish();
}

// The cross-attention K/V of every decoder layer from embd_enc, stored into kv_cross.
Result<Graph> build_cross(const WhisperConfig& c, BuilderMirror* mirror) {
  GraphBuilder b(mirror);
  const std::int64_t n_ctx = c.n_audio_ctx;
  const std::int64_t n_state = c.n_audio_state;
  const Bytes esize = GraphBuilder::row_size(kItype, 1);
  // embd_enc lives in the encoder's compute buffer: existing memory for this graph
  const T embd_enc = b.weight("embd_enc", DataType::F32, {n_state, n_ctx});
  const T kv_cross_k = b.weight("kv_cross.k", kItype, {n_state * c.n_text_layer * pad_to(n_ctx, 256)});
  const T kv_cross_v = b.weight("kv_cross.v", kItype, {n_state * c.n_text_layer * pad_to(n_ctx, 256)});
  const T cur = b.view_tensor(embd_enc);
  for (std::int64_t il = 0; il < c.n_text_layer; ++il) {
    const std::string p = dec(il, "");
    T Kcross = linear(b, cur, p + "cross_attn.key", n_state, n_state, /*bias=*/false);
    Kcross = b.scale(Kcross);
    T Vcross = linear(b, cur, p + "cross_attn.value", n_state, n_state);
    Vcross = b.transpose(b.reshape_2d(Vcross, n_state, n_ctx));
    const auto layer_offset = static_cast<Bytes>(il * n_ctx);
    const T k = b.view_1d(kv_cross_k, n_state * n_ctx, esize * static_cast<Bytes>(n_state) * layer_offset);
    const T v = b.view_2d(kv_cross_v, n_ctx, n_state, esize * static_cast<Bytes>(n_ctx),
                          layer_offset * esize * static_cast<Bytes>(n_state));
    b.expand(b.cpy(Kcross, k));
    b.expand(b.cpy(Vcross, v));
  }
  return b.finish();
}

// The decoder's worst case, as whisper.cpp reserves it: n_text_ctx tokens at the end of the
// self-attention cache, attending to all of it and to the 1500 cross-attention frames.
Result<Graph> build_decoder(const WhisperConfig& c, BuilderMirror* mirror) {
  GraphBuilder b(mirror);
  const std::int64_t n_ctx = pad_to(c.n_text_ctx, 256);  // kv_self.size
  const std::int64_t n_state = c.n_text_state;
  const std::int64_t n_head = c.n_text_head;
  const std::int64_t n_state_head = n_state / n_head;
  const std::int64_t n_tokens = c.n_text_ctx;
  const std::int64_t n_audio_ctx = c.n_audio_ctx;
  const std::int64_t n_kv = n_ctx;
  const std::int64_t kv_head = n_ctx - n_tokens;
  const Bytes esize = GraphBuilder::row_size(kItype, 1);

  const T kv_self_k = b.weight("kv_self.k", kItype, {n_state * c.n_text_layer * n_ctx});
  const T kv_self_v = b.weight("kv_self.v", kItype, {n_state * c.n_text_layer * n_ctx});
  const T kv_cross_k = b.weight("kv_cross.k", kItype, {n_state * c.n_text_layer * pad_to(n_audio_ctx, 256)});
  const T kv_cross_v = b.weight("kv_cross.v", kItype, {n_state * c.n_text_layer * pad_to(n_audio_ctx, 256)});
  const T d_te = b.weight("decoder.token_embedding.weight", kW, {n_state, c.n_vocab});
  const T d_pe = b.weight("decoder.positional_embedding", DataType::F32, {n_state, c.n_text_ctx});

  const T embd = b.input("embd", DataType::I32, {n_tokens});
  const T position = b.input("position", DataType::I32, {n_tokens});
  const T KQ_mask = b.input("KQ_mask", DataType::F32, {n_kv, pad_to(n_tokens, kKqMaskPad), 1});

  const T tok = b.get_rows(d_te, embd);
  const T pos = b.get_rows(d_pe, position);
  T cur = b.add(tok, pos);
  T inpL = cur;
  for (std::int64_t il = 0; il < c.n_text_layer; ++il) {
    const std::string p = dec(il, "");
    cur = layer_norm(b, inpL, p + "attn_ln", n_state);
    // self-attention
    T Qcur = linear(b, cur, p + "attn.query", n_state, n_state);
    Qcur = b.scale(Qcur);
    T Kcur = linear(b, cur, p + "attn.key", n_state, n_state, /*bias=*/false);
    Kcur = b.scale(Kcur);
    {
      T Vcur = linear(b, cur, p + "attn.value", n_state, n_state);
      Vcur = b.transpose(b.reshape_2d(Vcur, n_state, n_tokens));
      const T k = b.view_1d(kv_self_k, n_tokens * n_state,
                            esize * static_cast<Bytes>(n_state) * static_cast<Bytes>(il * n_ctx + kv_head));
      const T v = b.view_2d(
          kv_self_v, n_tokens, n_state, esize * static_cast<Bytes>(n_ctx),
          static_cast<Bytes>(il * n_ctx) * esize * static_cast<Bytes>(n_state) + static_cast<Bytes>(kv_head) * esize);
      b.expand(b.cpy(Kcur, k));
      b.expand(b.cpy(Vcur, v));
    }
    const T Q = b.permute(b.reshape_3d(Qcur, n_state_head, n_head, n_tokens), 0, 2, 1, 3);
    const T K = b.view_3d(kv_self_k, n_state_head, n_kv, n_head, esize * static_cast<Bytes>(n_state),
                          esize * static_cast<Bytes>(n_state_head), esize * static_cast<Bytes>(n_state * n_ctx * il));
    const T KQ = b.mul_mat(K, Q);
    const T KQ_soft_max = b.soft_max_ext(KQ, KQ_mask);
    const T V =
        b.view_3d(kv_self_v, n_kv, n_state_head, n_head, esize * static_cast<Bytes>(n_ctx),
                  esize * static_cast<Bytes>(n_ctx * n_state_head), esize * static_cast<Bytes>(n_ctx * n_state * il));
    T KQV = b.mul_mat(V, KQ_soft_max);
    T KQV_merged = b.permute(KQV, 0, 2, 1, 3);
    cur = b.cpy(KQV_merged, b.new_tensor(DataType::F32, {n_state, n_tokens}));
    cur = linear(b, cur, p + "attn.out", n_state, n_state);
    const T inpCA = b.add(cur, inpL);

    // cross-attention against the precomputed kv_cross (Kcross already scaled)
    cur = layer_norm(b, inpCA, p + "cross_attn_ln", n_state);
    Qcur = linear(b, cur, p + "cross_attn.query", n_state, n_state);
    const T Qc = b.permute(b.reshape_3d(Qcur, n_state_head, n_head, n_tokens), 0, 2, 1, 3);
    const T Kcross =
        b.view_3d(kv_cross_k, n_state_head, n_audio_ctx, n_head, esize * static_cast<Bytes>(n_state),
                  esize * static_cast<Bytes>(n_state_head), esize * static_cast<Bytes>(n_state * n_audio_ctx * il));
    const T Vcross = b.view_3d(kv_cross_v, n_audio_ctx, n_state_head, n_head, esize * static_cast<Bytes>(n_audio_ctx),
                               esize * static_cast<Bytes>(n_audio_ctx * n_state_head),
                               esize * static_cast<Bytes>(n_audio_ctx * n_state * il));
    const T KQc = b.mul_mat(Kcross, Qc);
    const T KQc_soft_max = b.soft_max_ext(KQc, kNoTensor);
    KQV = b.mul_mat(Vcross, KQc_soft_max);
    KQV_merged = b.permute(KQV, 0, 2, 1, 3);
    cur = b.cpy(KQV_merged, b.new_tensor(DataType::F32, {n_state, n_tokens}));
    cur = linear(b, cur, p + "cross_attn.out", n_state, n_state);
    cur = b.add(cur, inpCA);
    const T inpFF = cur;
    cur = mlp(b, inpFF, p, n_state);
    inpL = b.add(cur, inpFF);
  }
  cur = layer_norm(b, inpL, "decoder.ln", n_state);
  const T logits = b.name(b.mul_mat(d_te, cur), "logits");
  b.set_output(logits);
  b.expand(logits);
  return b.finish();
}

void add(std::vector<Recipe>& out, std::string name, std::string description, WhisperConfig config,
         Result<Graph> (*build)(const WhisperConfig&, BuilderMirror*)) {
  out.push_back({std::move(name), std::move(description),
                 [config, build](const Scaler& s, BuilderMirror* m) { return build(scaled(config, s), m); }});
}

}  // namespace

void add_whisper_recipes(std::vector<Recipe>& out) {
  const std::string base = "Whisper base (n_audio_state 512, 6+6 layers, 8 heads, 80 mels, vocab 51865, f16)";
  const std::string large = "Whisper large-v3 (n_audio_state 1280, 32+32 layers, 20 heads, 128 mels, vocab 51866, f16)";
  const std::string encoder =
      ": conv stem (conv1d as im2col + mul_mat, gelu) on 3000 mel frames -> 1500, positional add, "
      "encoder layers (norm, attention through fresh Q/K/V copies, gelu MLP); whisper.cpp's conv and "
      "encoder graphs as one";
  const std::string decoder =
      ": decoder worst case (448 tokens, 512-cell self-attention cache written with ggml_cpy, "
      "cross-attention against the 1500-frame cross KV), as whisper.cpp reserves it";
  add(out, "whisper-base-encoder", base + encoder, kBase, build_encoder);
  add(out, "whisper-base-cross", base + ": the cross-attention K/V precompute (whisper_build_graph_cross)", kBase,
      build_cross);
  add(out, "whisper-base-decoder", base + decoder, kBase, build_decoder);
  add(out, "whisper-large-encoder", large + encoder, kLarge, build_encoder);
  add(out, "whisper-large-decoder", large + decoder, kLarge, build_decoder);
}

}  // namespace galloc::zoo
