// A Qwen3.5 model with its MTP head (llama.cpp's "qwen35" with nextn_predict_layers = 1), of
// random weights, written with gguf's API as llama.cpp's converter lays it out: a trunk of
// gated-delta-net (linear attention) layers with a full-attention layer every fourth, then one
// more full-attention block, the MTP head, which a LLAMA_CONTEXT_TYPE_MTP context runs as the
// draft of speculative decoding (llama.rn's createMTPDraftContext). No tokenizer: token ids go
// in directly.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "ggml.h"
#include "gguf.h"
#include "llama.h"
#include "llama_model.hpp"
#include "llama_share_group.hpp"
#include "model_writer.hpp"
#include "test_support.hpp"

namespace galloc::dropin_test {

struct Qwen35Shape {
  int n_vocab;
  int n_embd;
  int n_head;
  int n_head_kv;
  int head_dim;
  int n_ff;
  int n_layer;                  // the trunk's, without the MTP block
  int full_attention_interval;  // every this many layers, the last is full attention
  int linear_k_heads;           // the gated delta net's key heads
  int linear_v_heads;           // and value heads
  int linear_head_dim;
  int conv_kernel;
  int n_rot;                         // rotated dimensions per head
  std::array<int, 4> rope_sections;  // multi-axis rope: half of n_rot, split by axis
  float rope_freq_base;
  int n_ctx_train;
};

// Tiny, for make test: three linear layers and a full-attention one, then the MTP block.
constexpr Qwen35Shape kTinyQwen35{128, 64, 4, 2, 16, 160, 4, 4, 2, 4, 16, 4, 8, {2, 1, 1, 0}, 10000.0f, 4096};
// Qwen3.5-0.8B's text model, whose checkpoint has one MTP layer.
constexpr Qwen35Shape kQwen35_0_8B{248320,          1024,        8,     2, 256, 3584, 24, 4, 16, 16, 128, 4, 64,
                                   {11, 11, 10, 0}, 10000000.0f, 262144};

// A full-attention block's attention and feed-forward tensors: Qwen3.5's query projection holds
// each head's query and its output gate.
inline void add_attention_block(GgufWriter& w, const std::string& b, const Qwen35Shape& s) {
  const std::int64_t e = s.n_embd, kv = static_cast<std::int64_t>(s.n_head_kv) * s.head_dim;
  w.add(b + "attn_q.weight", GGML_TYPE_F16, {e, 2LL * s.n_head * s.head_dim}, 0.1f);
  w.add(b + "attn_k.weight", GGML_TYPE_F16, {e, kv}, 0.1f);
  w.add(b + "attn_v.weight", GGML_TYPE_F16, {e, kv}, 0.1f);
  w.add(b + "attn_output.weight", GGML_TYPE_F16, {static_cast<std::int64_t>(s.n_head) * s.head_dim, e}, 0.1f);
  w.add(b + "attn_q_norm.weight", GGML_TYPE_F32, {s.head_dim}, 0.1f, 1.0f);
  w.add(b + "attn_k_norm.weight", GGML_TYPE_F32, {s.head_dim}, 0.1f, 1.0f);
}

inline void add_norms_and_ffn(GgufWriter& w, const std::string& b, const Qwen35Shape& s) {
  const std::int64_t e = s.n_embd;
  w.add(b + "attn_norm.weight", GGML_TYPE_F32, {e}, 0.1f, 1.0f);
  w.add(b + "post_attention_norm.weight", GGML_TYPE_F32, {e}, 0.1f, 1.0f);
  w.add(b + "ffn_gate.weight", GGML_TYPE_F16, {e, s.n_ff}, 0.1f);
  w.add(b + "ffn_up.weight", GGML_TYPE_F16, {e, s.n_ff}, 0.1f);
  w.add(b + "ffn_down.weight", GGML_TYPE_F16, {s.n_ff, e}, 0.1f);
}

inline void write_qwen35_mtp_model(const std::string& path, const Qwen35Shape& s, std::uint64_t seed,
                                   Weights weights = Weights::kRandom) {
  GgufWriter w(seed, weights);
  gguf_context* g = w.gguf();
  const std::string a = "qwen35.";
  gguf_set_val_str(g, "general.architecture", "qwen35");
  gguf_set_val_str(g, "general.name", "galloc-qwen35-mtp");
  set_u32(g, a + "context_length", s.n_ctx_train);
  set_u32(g, a + "embedding_length", s.n_embd);
  set_u32(g, a + "block_count", s.n_layer + 1);  // the MTP block is stored after the trunk
  set_u32(g, a + "nextn_predict_layers", 1);
  set_u32(g, a + "feed_forward_length", s.n_ff);
  set_u32(g, a + "attention.head_count", s.n_head);
  set_u32(g, a + "attention.head_count_kv", s.n_head_kv);
  set_u32(g, a + "attention.key_length", s.head_dim);
  set_u32(g, a + "attention.value_length", s.head_dim);
  gguf_set_val_f32(g, (a + "attention.layer_norm_rms_epsilon").c_str(), 1e-6f);
  set_u32(g, a + "rope.dimension_count", s.n_rot);
  gguf_set_arr_data(g, (a + "rope.dimension_sections").c_str(), GGUF_TYPE_INT32, s.rope_sections.data(),
                    s.rope_sections.size());
  gguf_set_val_f32(g, (a + "rope.freq_base").c_str(), s.rope_freq_base);
  set_u32(g, a + "full_attention_interval", s.full_attention_interval);
  set_u32(g, a + "ssm.conv_kernel", s.conv_kernel);
  set_u32(g, a + "ssm.state_size", s.linear_head_dim);
  set_u32(g, a + "ssm.group_count", s.linear_k_heads);
  set_u32(g, a + "ssm.time_step_rank", s.linear_v_heads);
  set_u32(g, a + "ssm.inner_size", s.linear_v_heads * s.linear_head_dim);
  set_u32(g, a + "vocab_size", s.n_vocab);
  gguf_set_val_str(g, "tokenizer.ggml.model", "no_vocab");

  const std::int64_t e = s.n_embd;
  w.add("token_embd.weight", GGML_TYPE_F16, {e, s.n_vocab}, 0.5f);
  w.add("output_norm.weight", GGML_TYPE_F32, {e}, 0.1f, 1.0f);
  // The output head, which the MTP head shares: each token's row mostly a multiple of one
  // direction, ranked by token id, so that a hidden state's side of it mostly picks the first or
  // the last token, and the draft's guess sometimes matches the target's (random rows never do).
  std::vector<float> direction(static_cast<std::size_t>(e));
  for (float& d : direction) d = w.rng().uniform(1.0f) < 0 ? -1.0f : 1.0f;
  // noise of about the rank's step: a few tokens at either end compete
  const float noise = 2.0f / static_cast<float>(s.n_vocab);
  w.add_with("output.weight", GGML_TYPE_F16, {e, s.n_vocab}, [&](std::int64_t i) {
    const std::int64_t token = i / e;
    const float rank = 2.0f * static_cast<float>(token) / static_cast<float>(s.n_vocab) - 1.0f;
    return rank * direction[static_cast<std::size_t>(i % e)] + w.rng().uniform(noise);
  });
  const std::int64_t key_dim = static_cast<std::int64_t>(s.linear_k_heads) * s.linear_head_dim;
  const std::int64_t value_dim = static_cast<std::int64_t>(s.linear_v_heads) * s.linear_head_dim;
  for (int l = 0; l <= s.n_layer; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    add_norms_and_ffn(w, b, s);
    const bool mtp = l == s.n_layer;
    if (mtp || (l + 1) % s.full_attention_interval == 0) {
      add_attention_block(w, b, s);
    } else {
      w.add(b + "attn_qkv.weight", GGML_TYPE_F16, {e, 2 * key_dim + value_dim}, 0.1f);
      w.add(b + "attn_gate.weight", GGML_TYPE_F16, {e, value_dim}, 0.1f);
      w.add(b + "ssm_conv1d.weight", GGML_TYPE_F32, {s.conv_kernel, 2 * key_dim + value_dim}, 0.3f);
      w.add(b + "ssm_dt.bias", GGML_TYPE_F32, {s.linear_v_heads}, 0.5f);
      w.add(b + "ssm_a", GGML_TYPE_F32, {s.linear_v_heads}, 0.5f, -1.0f);  // -exp(A_log): a decay
      w.add(b + "ssm_beta.weight", GGML_TYPE_F16, {e, s.linear_v_heads}, 0.1f);
      w.add(b + "ssm_alpha.weight", GGML_TYPE_F16, {e, s.linear_v_heads}, 0.1f);
      w.add(b + "ssm_norm.weight", GGML_TYPE_F32, {s.linear_head_dim}, 0.1f, 1.0f);
      w.add(b + "ssm_out.weight", GGML_TYPE_F16, {value_dim, e}, 0.1f);
    }
    if (mtp) {
      w.add(b + "nextn.eh_proj.weight", GGML_TYPE_F16, {2 * e, e}, 0.1f);
      w.add(b + "nextn.enorm.weight", GGML_TYPE_F32, {e}, 0.1f, 1.0f);
      w.add(b + "nextn.hnorm.weight", GGML_TYPE_F32, {e}, 0.1f, 1.0f);
    }
  }
  w.write(path);
}

// start_llama, then the model at `path` loaded on the CPU with its MTP block (as llama.rn loads
// it for speculative.type "draft-mtp").
inline llama_model* load_mtp_model(const std::string& path) {
  start_llama();
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  mp.load_mtp = true;
  mp.progress_callback = [](float, void*) { return true; };  // no progress dots
  llama_model* model = llama_model_load_from_file(path.c_str(), mp);
  if (model == nullptr) fail("cannot load " + path);
  return model;
}

// createMTPDraftContext: the draft, an MTP context on `model` with `target` as ctx_other and no
// recurrent-state snapshots, inside the llama.rn context's group when `shared`.
inline llama_context* make_mtp_draft_context(llama_model* model, llama_context* target, llama_context_params params,
                                             bool shared) {
  params.ctx_type = LLAMA_CONTEXT_TYPE_MTP;
  params.n_rs_seq = 0;
  params.ctx_other = target;
  return make_llama_context(model, params, shared);
}

}  // namespace galloc::dropin_test
