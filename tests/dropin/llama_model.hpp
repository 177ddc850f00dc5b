// What the llama.cpp clients feed llama.cpp: a tiny llama model of random weights written
// with gguf's API (tokenizer.ggml.model = no_vocab, so token ids go in directly), and flash
// attention set in whichever form the llama.cpp generation has.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "ggml.h"
#include "gguf.h"
#include "llama.h"
#include "test_support.hpp"

namespace galloc::dropin_test {

constexpr int kVocab = 128, kEmbd = 64, kHead = 4, kHeadKv = 2, kFf = 160, kLayers = 2, kCtxTrain = 256;

inline void write_llama_model(const std::string& path) {
  gguf_context* g = gguf_init_empty();
  gguf_set_val_str(g, "general.architecture", "llama");
  gguf_set_val_str(g, "general.name", "galloc-tiny-llama");
  gguf_set_val_u32(g, "llama.context_length", kCtxTrain);
  gguf_set_val_u32(g, "llama.embedding_length", kEmbd);
  gguf_set_val_u32(g, "llama.block_count", kLayers);
  gguf_set_val_u32(g, "llama.feed_forward_length", kFf);
  gguf_set_val_u32(g, "llama.attention.head_count", kHead);
  gguf_set_val_u32(g, "llama.attention.head_count_kv", kHeadKv);
  gguf_set_val_f32(g, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
  gguf_set_val_u32(g, "llama.rope.dimension_count", kEmbd / kHead);
  gguf_set_val_f32(g, "llama.rope.freq_base", 10000.0f);
  gguf_set_val_u32(g, "llama.vocab_size", kVocab);
  gguf_set_val_str(g, "tokenizer.ggml.model", "no_vocab");

  const int head_dim = kEmbd / kHead;
  ggml_init_params params{};
  params.mem_size = 64 * 1024 * 1024;
  params.no_alloc = false;
  ggml_context* ctx = ggml_init(params);
  Rng rng(42);
  auto add = [&](const std::string& name, ggml_type type, std::int64_t ne0, std::int64_t ne1, float scale) {
    ggml_tensor* t = ne1 == 0 ? ggml_new_tensor_1d(ctx, type, ne0) : ggml_new_tensor_2d(ctx, type, ne0, ne1);
    ggml_set_name(t, name.c_str());
    const std::int64_t n = ggml_nelements(t);
    if (type == GGML_TYPE_F32) {
      auto* f = static_cast<float*>(t->data);
      for (std::int64_t i = 0; i < n; ++i) f[i] = ne1 == 0 ? 1.0f + rng.uniform(0.1f) : rng.uniform(scale);
    } else {
      auto* h = static_cast<ggml_fp16_t*>(t->data);
      for (std::int64_t i = 0; i < n; ++i) h[i] = ggml_fp32_to_fp16(rng.uniform(scale));
    }
    gguf_add_tensor(g, t);
  };
  add("token_embd.weight", GGML_TYPE_F32, kEmbd, kVocab, 0.5f);
  for (int l = 0; l < kLayers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    add(b + "attn_norm.weight", GGML_TYPE_F32, kEmbd, 0, 0);
    add(b + "attn_q.weight", GGML_TYPE_F16, kEmbd, kEmbd, 0.2f);
    add(b + "attn_k.weight", GGML_TYPE_F16, kEmbd, kHeadKv * head_dim, 0.2f);
    add(b + "attn_v.weight", GGML_TYPE_F32, kEmbd, kHeadKv * head_dim, 0.2f);
    add(b + "attn_output.weight", GGML_TYPE_F32, kEmbd, kEmbd, 0.2f);
    add(b + "ffn_norm.weight", GGML_TYPE_F32, kEmbd, 0, 0);
    add(b + "ffn_gate.weight", GGML_TYPE_F16, kEmbd, kFf, 0.2f);
    add(b + "ffn_up.weight", GGML_TYPE_F32, kEmbd, kFf, 0.2f);
    add(b + "ffn_down.weight", GGML_TYPE_F32, kFf, kEmbd, 0.2f);
  }
  add("output_norm.weight", GGML_TYPE_F32, kEmbd, 0, 0);
  add("output.weight", GGML_TYPE_F16, kEmbd, kVocab, 0.3f);
  if (!gguf_write_to_file(g, path.c_str(), false)) fail("cannot write " + path);
  gguf_free(g);
  ggml_free(ctx);
}

// Flash attention on or off. llama.cpp before late 2025 (cui-llama.rn 1.6.0) has a bool
// flash_attn where later versions have the enum flash_attn_type; whichever exists is set.
template <typename Params>
auto set_flash_attn(Params& params, bool on, int) -> decltype(params.flash_attn_type, void()) {
  // LLAMA_FLASH_ATTN_TYPE_ENABLED (1) or _DISABLED (0), named through the member's type: the
  // enumerators do not exist where this overload is not chosen
  using Type = decltype(params.flash_attn_type);
  params.flash_attn_type = static_cast<Type>(on ? 1 : 0);
}
template <typename Params>
void set_flash_attn(Params& params, bool on, long) {
  params.flash_attn = on;
}

// llama.cpp's log to stderr, errors only; the backends.
inline void start_llama() {
  llama_log_set(
      [](ggml_log_level level, const char* text, void*) {
        if (level >= GGML_LOG_LEVEL_ERROR) std::fputs(text, stderr);
      },
      nullptr);
  llama_backend_init();
}

// start_llama, then the model at `path` loaded on the CPU.
inline llama_model* load_llama_model(const std::string& path) {
  start_llama();
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  mp.progress_callback = [](float, void*) { return true; };  // no progress dots
  llama_model* model = llama_model_load_from_file(path.c_str(), mp);
  if (model == nullptr) fail("cannot load " + path);
  return model;
}

// load_llama_model of the tiny model, written to `path` first.
inline llama_model* write_and_load_llama_model(const std::string& path) {
  write_llama_model(path);
  return load_llama_model(path);
}

// A context of n_ctx positions, batches of up to n_ubatch tokens, one sequence, two threads.
inline llama_context_params context_params(std::uint32_t n_ctx, std::uint32_t n_ubatch) {
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = n_ctx;
  cp.n_batch = n_ubatch;
  cp.n_ubatch = n_ubatch;
  cp.n_seq_max = 1;
  cp.n_threads = 2;
  cp.n_threads_batch = 2;
  cp.no_perf = true;
  return cp;
}

// A context for the tiny model: 128 positions, batches of up to 32 tokens, one sequence.
inline llama_context_params tiny_context_params(bool flash_attn) {
  llama_context_params cp = context_params(128, 32);
  set_flash_attn(cp, flash_attn, 0);
  return cp;
}

// Puts `tokens` into `batch` at positions n_past on, one sequence, asking for the last one's
// logits.
inline void fill_batch(llama_batch& batch, const std::vector<llama_token>& tokens, int n_past) {
  batch.n_tokens = 0;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    batch.token[i] = tokens[i];
    batch.pos[i] = n_past + static_cast<llama_pos>(i);
    batch.n_seq_id[i] = 1;
    batch.seq_id[i][0] = 0;
    batch.logits[i] = i + 1 == tokens.size();
    batch.n_tokens++;
  }
}

// Decodes `tokens` in one batch at positions n_past on (n_past moves past them), asking for
// the last one's logits, which are checked finite and returned. `step` names it in failures.
inline const float* decode_tokens(llama_context* ctx, llama_batch& batch, const std::vector<llama_token>& tokens,
                                  int& n_past, const std::string& step, int n_vocab = kVocab) {
  fill_batch(batch, tokens, n_past);
  if (llama_decode(ctx, batch) != 0) fail("llama_decode " + step);
  n_past += static_cast<int>(tokens.size());
  const float* logits = llama_get_logits_ith(ctx, -1);
  for (int i = 0; i < n_vocab; ++i) {
    if (!std::isfinite(logits[i])) fail(step + ": non-finite logits");
  }
  return logits;
}

}  // namespace galloc::dropin_test
