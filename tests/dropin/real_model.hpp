// The real dimensions of models people run, as llama.cpp text models with all-zero weights (a
// hole in the file): what llama_real_dims.cpp captures graphs from, and what
// llama_real_share_client.cpp and the bench (bench/llama_share.sh) create contexts of.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "ggml.h"
#include "gguf.h"
#include "model_writer.hpp"

namespace galloc::dropin_test {

// What differs between the architectures' tensors: biases on Q/K/V (Qwen2), one fused QKV
// matrix and a fused gate+up matrix (Phi-3), normalisations after attention and FFN (Gemma-2).
enum class Layout { kLlama, kQwen2, kPhi3, kGemma2 };

// Hyperparameters from each model's published config.json (glm-asr-nano-text: the text_config
// of GLM-ASR-Nano-2512's).
struct RealModel {
  const char* name;
  const char* arch;
  Layout layout;
  std::int64_t vocab, embd, head, head_kv, head_dim, ff, layers, ctx_train;
  float rope_base;
  bool tied;  // no output.weight: llama.cpp reuses token_embd.weight
};

inline const std::vector<RealModel>& real_models() {
  static const std::vector<RealModel> models = {
      {"llama-2-7b", "llama", Layout::kLlama, 32000, 4096, 32, 32, 128, 11008, 32, 4096, 10000.0f, false},
      {"llama-3.2-1b", "llama", Layout::kLlama, 128256, 2048, 32, 8, 64, 8192, 16, 131072, 500000.0f, true},
      {"llama-3.2-3b", "llama", Layout::kLlama, 128256, 3072, 24, 8, 128, 8192, 28, 131072, 500000.0f, true},
      {"llama-3.1-8b", "llama", Layout::kLlama, 128256, 4096, 32, 8, 128, 14336, 32, 131072, 500000.0f, false},
      {"mistral-7b-v0.3", "llama", Layout::kLlama, 32768, 4096, 32, 8, 128, 14336, 32, 32768, 1000000.0f, false},
      {"glm-asr-nano-text", "llama", Layout::kLlama, 59264, 2048, 16, 4, 128, 6144, 28, 8192, 10000.0f, false},
      {"qwen2.5-0.5b", "qwen2", Layout::kQwen2, 151936, 896, 14, 2, 64, 4864, 24, 32768, 1000000.0f, true},
      {"qwen2.5-7b", "qwen2", Layout::kQwen2, 152064, 3584, 28, 4, 128, 18944, 28, 32768, 1000000.0f, false},
      {"gemma-2-2b", "gemma2", Layout::kGemma2, 256000, 2304, 8, 4, 256, 9216, 26, 8192, 10000.0f, true},
      {"phi-3-mini-4k", "phi3", Layout::kPhi3, 32064, 3072, 32, 32, 96, 8192, 32, 4096, 10000.0f, false},
  };
  return models;
}

inline const RealModel* find_model(const std::string& name) {
  for (const RealModel& m : real_models()) {
    if (name == m.name) return &m;
  }
  return nullptr;
}

// The model file: metadata and tensor shapes through gguf's API, F16 or Q4_0 matrices and F32
// norms, every weight zero (GgufWriter's kZero: a hole in the file).
inline void write_real_model(const RealModel& m, ggml_type matrix_type, const std::string& path) {
  GgufWriter w(0, Weights::kZero);
  gguf_context* g = w.gguf();
  const std::string arch = m.arch;
  gguf_set_val_str(g, "general.architecture", m.arch);
  gguf_set_val_str(g, "general.name", m.name);
  set_u32(g, arch + ".context_length", static_cast<int>(m.ctx_train));
  set_u32(g, arch + ".embedding_length", static_cast<int>(m.embd));
  set_u32(g, arch + ".block_count", static_cast<int>(m.layers));
  set_u32(g, arch + ".feed_forward_length", static_cast<int>(m.ff));
  set_u32(g, arch + ".attention.head_count", static_cast<int>(m.head));
  set_u32(g, arch + ".attention.head_count_kv", static_cast<int>(m.head_kv));
  set_u32(g, arch + ".attention.key_length", static_cast<int>(m.head_dim));
  set_u32(g, arch + ".attention.value_length", static_cast<int>(m.head_dim));
  gguf_set_val_f32(g, (arch + ".attention.layer_norm_rms_epsilon").c_str(), 1e-6f);
  set_u32(g, arch + ".rope.dimension_count", static_cast<int>(m.head_dim));
  gguf_set_val_f32(g, (arch + ".rope.freq_base").c_str(), m.rope_base);
  set_u32(g, arch + ".vocab_size", static_cast<int>(m.vocab));
  if (m.layout == Layout::kGemma2) {
    gguf_set_val_u32(g, "gemma2.attention.sliding_window", 4096);
    gguf_set_val_f32(g, "gemma2.attn_logit_softcapping", 50.0f);
    gguf_set_val_f32(g, "gemma2.final_logit_softcapping", 30.0f);
  }
  gguf_set_val_str(g, "tokenizer.ggml.model", "no_vocab");

  auto matrix = [&](const std::string& name, std::int64_t ne0, std::int64_t ne1) {
    w.add(name, matrix_type, {ne0, ne1}, 0.0f);
  };
  auto vector = [&](const std::string& name, std::int64_t ne0) { w.add(name, GGML_TYPE_F32, {ne0}, 0.0f); };
  const std::int64_t q = m.head * m.head_dim, kv = m.head_kv * m.head_dim;
  matrix("token_embd.weight", m.embd, m.vocab);
  for (std::int64_t l = 0; l < m.layers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    vector(b + "attn_norm.weight", m.embd);
    if (m.layout == Layout::kPhi3) {
      matrix(b + "attn_qkv.weight", m.embd, q + 2 * kv);
    } else {
      matrix(b + "attn_q.weight", m.embd, q);
      matrix(b + "attn_k.weight", m.embd, kv);
      matrix(b + "attn_v.weight", m.embd, kv);
    }
    if (m.layout == Layout::kQwen2) {
      vector(b + "attn_q.bias", q);
      vector(b + "attn_k.bias", kv);
      vector(b + "attn_v.bias", kv);
    }
    matrix(b + "attn_output.weight", q, m.embd);
    if (m.layout == Layout::kGemma2) vector(b + "post_attention_norm.weight", m.embd);
    vector(b + "ffn_norm.weight", m.embd);
    if (m.layout == Layout::kPhi3) {
      matrix(b + "ffn_up.weight", m.embd, 2 * m.ff);
    } else {
      matrix(b + "ffn_gate.weight", m.embd, m.ff);
      matrix(b + "ffn_up.weight", m.embd, m.ff);
    }
    matrix(b + "ffn_down.weight", m.ff, m.embd);
    if (m.layout == Layout::kGemma2) vector(b + "post_ffw_norm.weight", m.embd);
  }
  vector("output_norm.weight", m.embd);
  if (!m.tied) matrix("output.weight", m.embd, m.vocab);
  w.write(path);
}

// DIR/NAME.gguf for F16 matrices, DIR/NAME.TYPE.gguf for others (llama-2-7b.q4_0.gguf), written
// by write_real_model unless it exists.
inline std::string real_model_file(const RealModel& m, ggml_type matrix_type, const std::string& dir) {
  std::filesystem::create_directories(dir);
  const std::string type = matrix_type == GGML_TYPE_F16 ? "" : std::string(".") + ggml_type_name(matrix_type);
  const std::string path = dir + "/" + m.name + type + ".gguf";
  if (!std::filesystem::exists(path)) write_real_model(m, matrix_type, path);
  return path;
}

}  // namespace galloc::dropin_test
