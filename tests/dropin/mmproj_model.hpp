// mtmd projector files (mmproj) as llama.cpp's converters lay them out, written with gguf's API,
// random (or all-zero) weights, and mtmd's encoder made from one as llama.rn makes it. Both
// kinds have no begin or end marker text around their chunks, so mtmd needs no tokenizer for
// them and the tiny no_vocab text model (llama_model.hpp) can take them:
//   - vision: LLaVA-style (clip.projector_type "mlp"): a ViT with a class token and a
//     two-layer MLP into the text model's width;
//   - audio: GLM-ASR-style ("glma"): a Whisper encoder (two convolutions, 1500 positions for
//     mtmd's 30-second chunks), a layer norm, frames stacked by 4, a GELU MLP, and learned
//     begin and end embeddings around each chunk's. (Ultravox, the other marker-free audio
//     projector, stacks by 8, and this llama.cpp's clip counts one token fewer than its graph
//     makes for a 30-second chunk, and aborts.)
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <string>
#include <vector>

#include "ggml.h"
#include "gguf.h"
#include "llama.h"
#include "llama_share_group.hpp"
#include "model_writer.hpp"
#include "mtmd-helper.h"
#include "mtmd.h"
#include "test_support.hpp"

namespace galloc::dropin_test {

struct VisionTower {
  int image_size;  // square images, pixels per side
  int patch_size;
  int n_embd;
  int n_head;
  int n_ff;
  int n_layer;    // clip computes all but the last (llava's feature layer)
  int text_embd;  // the text model's width: the projector's output
};

struct AudioTower {
  int n_mel;
  int n_embd;
  int n_head;
  int n_ff;
  int n_layer;
  int projector_hidden;  // the MLP's width
  int text_embd;
};

// Tiny, for make test: 8 x 8 patches, 65 positions.
constexpr VisionTower kTinyVisionTower{112, 14, 64, 4, 256, 3, 64};
// Tiny, for make test: 1500 positions (mtmd's audio chunks are 30 seconds), 377 tokens each.
constexpr AudioTower kTinyAudioTower{128, 32, 2, 64, 2, 64, 64};
// LLaVA-1.5-7B's: CLIP ViT-L/14 at 336 pixels (1024 wide, 16 heads, 4096 feed-forward, 24
// blocks, of which clip computes the first 23) and a two-layer MLP into Llama-2-7B's 4096.
constexpr VisionTower kLlava15Vision{336, 14, 1024, 16, 4096, 24, 4096};
// GLM-ASR-Nano-2512's: Whisper large-v3's encoder (128 mel bins, 1280 wide, 20 heads, 5120
// feed-forward, 32 blocks), frames stacked by 4, and a GELU MLP through 4096 into its text
// model's 2048.
constexpr AudioTower kGlmAsrNanoAudio{128, 1280, 20, 5120, 32, 4096, 2048};

// A ViT block, as clip names its tensors (`prefix` v or a); `k_bias` false as in Whisper.
inline void add_vit_block(GgufWriter& w, const std::string& prefix, int layer, std::int64_t n_embd, std::int64_t n_ff,
                          bool k_bias) {
  const std::string b = prefix + ".blk." + std::to_string(layer) + ".";
  for (const char* m : {"attn_q", "attn_k", "attn_v", "attn_out"}) {
    w.add(b + m + ".weight", GGML_TYPE_F16, {n_embd, n_embd}, 0.1f);
    if (k_bias || std::string(m) != "attn_k") w.add(b + m + ".bias", GGML_TYPE_F32, {n_embd}, 0.1f);
  }
  w.add_norm(b + "ln1", n_embd);
  w.add_norm(b + "ln2", n_embd);
  w.add(b + "ffn_up.weight", GGML_TYPE_F16, {n_embd, n_ff}, 0.1f);
  w.add(b + "ffn_up.bias", GGML_TYPE_F32, {n_ff}, 0.1f);
  w.add(b + "ffn_down.weight", GGML_TYPE_F16, {n_ff, n_embd}, 0.1f);
  w.add(b + "ffn_down.bias", GGML_TYPE_F32, {n_embd}, 0.1f);
}

// The keys every projector file has: its name and projector type, and its encoder's shape under
// clip.vision. or clip.audio.
inline void set_encoder_keys(gguf_context* g, const std::string& name, const std::string& projector_type,
                             const std::string& modality, int n_embd, int n_ff, int n_layer, int text_embd,
                             int n_head) {
  gguf_set_val_str(g, "general.architecture", "clip");
  gguf_set_val_str(g, "general.name", name.c_str());
  gguf_set_val_bool(g, ("clip.has_" + modality + "_encoder").c_str(), true);
  gguf_set_val_str(g, "clip.projector_type", projector_type.c_str());
  const std::string k = "clip." + modality + ".";
  set_u32(g, k + "embedding_length", n_embd);
  set_u32(g, k + "feed_forward_length", n_ff);
  set_u32(g, k + "block_count", n_layer);
  set_u32(g, k + "projection_dim", text_embd);
  set_u32(g, k + "attention.head_count", n_head);
  gguf_set_val_f32(g, (k + "attention.layer_norm_epsilon").c_str(), 1e-5f);
}

inline void write_mmproj(const std::string& path, const VisionTower& v, std::uint64_t seed,
                         Weights weights = Weights::kRandom) {
  GgufWriter w(seed, weights);
  gguf_context* g = w.gguf();
  set_encoder_keys(g, "galloc-llava-style-projector", "mlp", "vision", v.n_embd, v.n_ff, v.n_layer, v.text_embd,
                   v.n_head);
  set_u32(g, "clip.vision.image_size", v.image_size);
  set_u32(g, "clip.vision.patch_size", v.patch_size);
  const float mean[3] = {0.48145466f, 0.4578275f, 0.40821073f};  // CLIP's
  const float stdev[3] = {0.26862954f, 0.26130258f, 0.27577711f};
  gguf_set_arr_data(g, "clip.vision.image_mean", GGUF_TYPE_FLOAT32, mean, 3);
  gguf_set_arr_data(g, "clip.vision.image_std", GGUF_TYPE_FLOAT32, stdev, 3);

  const int side = v.image_size / v.patch_size;
  const std::int64_t e = v.n_embd, n_pos = static_cast<std::int64_t>(side) * side + 1;
  w.add("v.class_embd", GGML_TYPE_F32, {e}, 0.5f);
  w.add("v.patch_embd.weight", GGML_TYPE_F16, {v.patch_size, v.patch_size, 3, e}, 0.05f);
  w.add("v.position_embd.weight", GGML_TYPE_F16, {e, n_pos}, 0.5f);
  w.add_norm("v.pre_ln", e);
  for (int l = 0; l < v.n_layer; ++l) add_vit_block(w, "v", l, e, v.n_ff, true);
  w.add("mm.0.weight", GGML_TYPE_F16, {e, v.text_embd}, 0.1f);
  w.add("mm.0.bias", GGML_TYPE_F32, {v.text_embd}, 0.1f);
  w.add("mm.2.weight", GGML_TYPE_F16, {v.text_embd, v.text_embd}, 0.1f);
  w.add("mm.2.bias", GGML_TYPE_F32, {v.text_embd}, 0.1f);
  w.write(path);
}

inline void write_mmproj(const std::string& path, const AudioTower& a, std::uint64_t seed,
                         Weights weights = Weights::kRandom) {
  constexpr int kStack = 4;         // clip.audio.projector.stack_factor, GLM-ASR's merge factor
  constexpr int kPositions = 1500;  // 3000 mel frames, halved by the second convolution
  GgufWriter w(seed, weights);
  gguf_context* g = w.gguf();
  set_encoder_keys(g, "galloc-glm-asr-style-projector", "glma", "audio", a.n_embd, a.n_ff, a.n_layer, a.text_embd,
                   a.n_head);
  set_u32(g, "clip.audio.num_mel_bins", a.n_mel);
  set_u32(g, "clip.audio.projector.stack_factor", kStack);

  const std::int64_t e = a.n_embd;
  w.add("a.conv1d.1.weight", GGML_TYPE_F16, {3, a.n_mel, e}, 0.1f);
  w.add("a.conv1d.1.bias", GGML_TYPE_F32, {1, e}, 0.1f);
  w.add("a.conv1d.2.weight", GGML_TYPE_F16, {3, e, e}, 0.1f);
  w.add("a.conv1d.2.bias", GGML_TYPE_F32, {1, e}, 0.1f);
  w.add("a.position_embd.weight", GGML_TYPE_F32, {e, kPositions}, 0.5f);
  for (int l = 0; l < a.n_layer; ++l) add_vit_block(w, "a", l, e, a.n_ff, false);
  w.add_norm("a.post_ln", e);
  w.add_norm("mm.a.norm_pre", e);
  w.add("mm.a.mlp.1.weight", GGML_TYPE_F16, {e * kStack, a.projector_hidden}, 0.1f);
  w.add("mm.a.mlp.1.bias", GGML_TYPE_F32, {a.projector_hidden}, 0.1f);
  w.add("mm.a.mlp.2.weight", GGML_TYPE_F16, {a.projector_hidden, a.text_embd}, 0.1f);
  w.add("mm.a.mlp.2.bias", GGML_TYPE_F32, {a.text_embd}, 0.1f);
  w.add("v.boi", GGML_TYPE_F32, {a.text_embd}, 0.5f);
  w.add("v.eoi", GGML_TYPE_F32, {a.text_embd}, 0.5f);
  w.write(path);
}

// Media to encode, a pattern that differs with `round`: an image of side x side pixels, or
// `seconds` of sound at 16 kHz.
inline mtmd_bitmap* make_test_media(bool audio, int side, int seconds, int round) {
  if (audio) {
    std::vector<float> samples(static_cast<std::size_t>(seconds) * 16000);
    for (std::size_t i = 0; i < samples.size(); ++i) {
      samples[i] = 0.3f * std::sin(0.01f * static_cast<float>(i) * static_cast<float>(round + 2)) +
                   0.1f * std::sin(0.37f * static_cast<float>(i));
    }
    return mtmd_bitmap_init_from_audio(samples.size(), samples.data());
  }
  std::vector<unsigned char> rgb(static_cast<std::size_t>(side) * side * 3);
  for (std::size_t i = 0; i < rgb.size(); ++i)
    rgb[i] = static_cast<unsigned char>((i * 7 + static_cast<std::size_t>(round) * 31 + i / 97) & 0xff);
  return mtmd_bitmap_init(side, side, rgb.data());
}

// mtmd's encoder for `model` from `mmproj`, on the CPU with two threads, made as llama.rn's
// initMultimodal makes it: in the llama.rn context's share group when `shared`. mtmd's and
// clip's log: errors only.
inline mtmd_context* make_mtmd_context(const std::string& mmproj, llama_model* model, bool shared) {
  mtmd_helper_log_set(
      [](ggml_log_level level, const char* text, void*) {
        if (level >= GGML_LOG_LEVEL_ERROR) std::fputs(text, stderr);
      },
      nullptr);
  mtmd_context_params params = mtmd_context_params_default();
  params.use_gpu = false;
  params.print_timings = false;
  params.n_threads = 2;
  mtmd_context* mctx = in_rn_context_group(shared, [&] { return mtmd_init_from_file(mmproj.c_str(), model, params); });
  if (mctx == nullptr) fail("mtmd_init_from_file " + mmproj);
  return mctx;
}

// The chunks of one image or sound with no text around it.
inline mtmd_input_chunks* tokenize_media(mtmd_context* mctx, const mtmd_bitmap* media) {
  mtmd_input_chunks* chunks = mtmd_input_chunks_init();
  const std::string marker = mtmd_default_marker();
  mtmd_input_text text{};
  text.text = marker.c_str();
  text.text_len = marker.size();
  const mtmd_bitmap* bitmaps[] = {media};
  if (mtmd_tokenize(mctx, chunks, &text, bitmaps, 1) != 0) fail("mtmd_tokenize");
  if (mtmd_input_chunks_size(chunks) == 0) fail("mtmd_tokenize gave no chunk");
  return chunks;
}

}  // namespace galloc::dropin_test
