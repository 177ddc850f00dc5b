// llama.cpp at the real dimensions of models people run, for capturing the graphs it reserves
// (bench/graphs/capture-llama.sh) and for reading its compute buffer next to stock's.
//
//   llama_real_dims MODEL N_CTX N_UBATCH attn|flash DIR [f16|q4_0]
//
// writes DIR/MODEL.gguf (DIR/MODEL.q4_0.gguf with q4_0) with gguf's API, unless it exists: the
// real model's hyperparameters and tensor shapes (F16 or Q4_0 matrices, F32 norms, every
// layer), with the data section left as a hole in the file, so that a 7B model costs no disk and
// reads as zeros (all-zero bytes are zeros in Q4_0 too: a zero scale). llama.cpp maps it
// (mmap) and creates a context of N_CTX positions and micro-batches of N_UBATCH tokens, one
// sequence; creating the context reserves its worst-case graphs (a micro-batch of N_UBATCH
// tokens, then one token, each against the whole cache), which is where the drop-in's
// GALLOC_DUMP writes them. Nothing is computed. Prints
//   size llama_cpp.MODEL.ctxN_CTX.ubN_UBATCH.attn|flash.BACKEND BYTES
// with the compute buffer llama.cpp read from its scheduler, like llama_client.cpp, then
// "done" (compare.cmake runs it as the test dropin_llama_real_dims_llama-rn-0.12.9).
//
//   llama_real_dims --list      the MODEL names
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "ggml-backend.h"
#include "ggml.h"
#include "gguf.h"
#include "llama.h"
#include "llama_model.hpp"
#include "sched_buffer_sizes.hpp"
#include "test_support.hpp"

namespace {

using namespace galloc::dropin_test;

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

const std::vector<RealModel>& real_models() {
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

const RealModel* find_model(const std::string& name) {
  for (const RealModel& m : real_models()) {
    if (name == m.name) return &m;
  }
  return nullptr;
}

// The model file: metadata and tensor infos through gguf's API, then the file extended to its
// full length without writing the data (a sparse file: every weight reads as zero).
void write_real_model(const RealModel& m, ggml_type matrix_type, const std::string& path) {
  gguf_context* g = gguf_init_empty();
  const std::string arch = m.arch;
  gguf_set_val_str(g, "general.architecture", m.arch);
  gguf_set_val_str(g, "general.name", m.name);
  gguf_set_val_u32(g, (arch + ".context_length").c_str(), static_cast<std::uint32_t>(m.ctx_train));
  gguf_set_val_u32(g, (arch + ".embedding_length").c_str(), static_cast<std::uint32_t>(m.embd));
  gguf_set_val_u32(g, (arch + ".block_count").c_str(), static_cast<std::uint32_t>(m.layers));
  gguf_set_val_u32(g, (arch + ".feed_forward_length").c_str(), static_cast<std::uint32_t>(m.ff));
  gguf_set_val_u32(g, (arch + ".attention.head_count").c_str(), static_cast<std::uint32_t>(m.head));
  gguf_set_val_u32(g, (arch + ".attention.head_count_kv").c_str(), static_cast<std::uint32_t>(m.head_kv));
  gguf_set_val_u32(g, (arch + ".attention.key_length").c_str(), static_cast<std::uint32_t>(m.head_dim));
  gguf_set_val_u32(g, (arch + ".attention.value_length").c_str(), static_cast<std::uint32_t>(m.head_dim));
  gguf_set_val_f32(g, (arch + ".attention.layer_norm_rms_epsilon").c_str(), 1e-6f);
  gguf_set_val_u32(g, (arch + ".rope.dimension_count").c_str(), static_cast<std::uint32_t>(m.head_dim));
  gguf_set_val_f32(g, (arch + ".rope.freq_base").c_str(), m.rope_base);
  gguf_set_val_u32(g, (arch + ".vocab_size").c_str(), static_cast<std::uint32_t>(m.vocab));
  if (m.layout == Layout::kGemma2) {
    gguf_set_val_u32(g, "gemma2.attention.sliding_window", 4096);
    gguf_set_val_f32(g, "gemma2.attn_logit_softcapping", 50.0f);
    gguf_set_val_f32(g, "gemma2.final_logit_softcapping", 30.0f);
  }
  gguf_set_val_str(g, "tokenizer.ggml.model", "no_vocab");

  ggml_init_params params{};
  params.mem_size = 4096 * ggml_tensor_overhead();
  params.no_alloc = true;  // shapes only: gguf_add_tensor records the info, the data is the hole
  ggml_context* ctx = ggml_init(params);
  auto add = [&](const std::string& name, ggml_type type, std::int64_t ne0, std::int64_t ne1 = 0) {
    ggml_tensor* t = ne1 == 0 ? ggml_new_tensor_1d(ctx, type, ne0) : ggml_new_tensor_2d(ctx, type, ne0, ne1);
    ggml_set_name(t, name.c_str());
    gguf_add_tensor(g, t);
    return t;
  };
  const std::int64_t q = m.head * m.head_dim, kv = m.head_kv * m.head_dim;
  ggml_tensor* last = add("token_embd.weight", matrix_type, m.embd, m.vocab);
  for (std::int64_t l = 0; l < m.layers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    add(b + "attn_norm.weight", GGML_TYPE_F32, m.embd);
    if (m.layout == Layout::kPhi3) {
      add(b + "attn_qkv.weight", matrix_type, m.embd, q + 2 * kv);
    } else {
      add(b + "attn_q.weight", matrix_type, m.embd, q);
      add(b + "attn_k.weight", matrix_type, m.embd, kv);
      add(b + "attn_v.weight", matrix_type, m.embd, kv);
    }
    if (m.layout == Layout::kQwen2) {
      add(b + "attn_q.bias", GGML_TYPE_F32, q);
      add(b + "attn_k.bias", GGML_TYPE_F32, kv);
      add(b + "attn_v.bias", GGML_TYPE_F32, kv);
    }
    add(b + "attn_output.weight", matrix_type, q, m.embd);
    if (m.layout == Layout::kGemma2) add(b + "post_attention_norm.weight", GGML_TYPE_F32, m.embd);
    add(b + "ffn_norm.weight", GGML_TYPE_F32, m.embd);
    if (m.layout == Layout::kPhi3) {
      add(b + "ffn_up.weight", matrix_type, m.embd, 2 * m.ff);
    } else {
      add(b + "ffn_gate.weight", matrix_type, m.embd, m.ff);
      add(b + "ffn_up.weight", matrix_type, m.embd, m.ff);
    }
    last = add(b + "ffn_down.weight", matrix_type, m.ff, m.embd);
    if (m.layout == Layout::kGemma2) last = add(b + "post_ffw_norm.weight", GGML_TYPE_F32, m.embd);
  }
  last = add("output_norm.weight", GGML_TYPE_F32, m.embd);
  if (!m.tied) last = add("output.weight", matrix_type, m.embd, m.vocab);

  if (!gguf_write_to_file(g, path.c_str(), /*only_meta=*/true)) fail("cannot write " + path);
  const std::int64_t id = gguf_find_tensor(g, ggml_get_name(last));
  const std::size_t alignment = gguf_get_alignment(g);
  const std::size_t data_size = gguf_get_tensor_offset(g, id) + GGML_PAD(ggml_nbytes(last), alignment);
  const std::size_t file_size = gguf_get_meta_size(g) + data_size;
  gguf_free(g);
  ggml_free(ctx);
  std::error_code error;
  std::filesystem::resize_file(path, file_size, error);  // extends with a hole: no disk used
  if (error) fail("cannot extend " + path + ": " + error.message());
}

}  // namespace

int main(int argc, char** argv) {
  const std::string usage = "usage: llama_real_dims MODEL N_CTX N_UBATCH attn|flash DIR [f16|q4_0] | --list";
  if (argc == 2 && std::string(argv[1]) == "--list") {
    for (const RealModel& m : real_models()) std::printf("%s\n", m.name);
    return 0;
  }
  if (argc != 6 && argc != 7) fail(usage);
  const RealModel* model_dims = find_model(argv[1]);
  if (model_dims == nullptr) fail(std::string("unknown model ") + argv[1] + " (--list names them)");
  const int n_ctx = std::atoi(argv[2]), n_ubatch = std::atoi(argv[3]);
  const std::string attention = argv[4];
  const std::string weights = argc == 7 ? argv[6] : "f16";
  if (n_ctx <= 0 || n_ubatch <= 0 || (attention != "attn" && attention != "flash") ||
      (weights != "f16" && weights != "q4_0")) {
    fail(usage);
  }
  std::filesystem::create_directories(argv[5]);
  const std::string path =
      std::string(argv[5]) + "/" + model_dims->name + (weights == "f16" ? "" : "." + weights) + ".gguf";
  if (!std::filesystem::exists(path)) {
    write_real_model(*model_dims, weights == "f16" ? GGML_TYPE_F16 : GGML_TYPE_Q4_0, path);
  }

  // llama.cpp maps the file (its default load mode): the weights stay in the file's hole
  llama_model* model = load_llama_model(path);
  llama_context_params cp = context_params(static_cast<std::uint32_t>(n_ctx), static_cast<std::uint32_t>(n_ubatch));
  set_flash_attn(cp, attention == "flash", 0);
  llama_context* ctx = llama_init_from_model(model, cp);
  if (ctx == nullptr) fail("llama_init_from_model");
  const std::string key = std::string("llama_cpp.") + model_dims->name + ".ctx" + std::to_string(n_ctx) + ".ub" +
                          std::to_string(n_ubatch) + "." + attention;
  for (const auto& [backend, size] : compute_sizes())
    std::printf("size %s.%s %zu\n", key.c_str(), backend.c_str(), size);
  llama_free(ctx);
  llama_model_free(model);
  llama_backend_free();
  std::printf("done\n");
  return 0;
}
