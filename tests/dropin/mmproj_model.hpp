// A LLaVA-style vision projector (clip.projector_type "mlp": a ViT with a class token and a
// two-layer MLP into the text model's width), written with gguf's API as llama.cpp's converter
// lays out an mmproj file, random weights. mtmd needs no tokenizer for it: an image chunk has no
// begin or end marker text, so the tiny no_vocab text model (llama_model.hpp) can take it.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "ggml.h"
#include "gguf.h"
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

// Tiny, for make test: 8 x 8 patches, 65 positions.
constexpr VisionTower kTinyVisionTower{112, 14, 64, 4, 256, 3, 64};

inline void write_mmproj(const std::string& path, const VisionTower& v, std::uint64_t seed) {
  gguf_context* g = gguf_init_empty();
  gguf_set_val_str(g, "general.architecture", "clip");
  gguf_set_val_str(g, "general.name", "galloc-llava-style-projector");
  gguf_set_val_bool(g, "clip.has_vision_encoder", true);
  gguf_set_val_str(g, "clip.projector_type", "mlp");
  gguf_set_val_u32(g, "clip.vision.image_size", static_cast<std::uint32_t>(v.image_size));
  gguf_set_val_u32(g, "clip.vision.patch_size", static_cast<std::uint32_t>(v.patch_size));
  gguf_set_val_u32(g, "clip.vision.embedding_length", static_cast<std::uint32_t>(v.n_embd));
  gguf_set_val_u32(g, "clip.vision.feed_forward_length", static_cast<std::uint32_t>(v.n_ff));
  gguf_set_val_u32(g, "clip.vision.block_count", static_cast<std::uint32_t>(v.n_layer));
  gguf_set_val_u32(g, "clip.vision.projection_dim", static_cast<std::uint32_t>(v.text_embd));
  gguf_set_val_u32(g, "clip.vision.attention.head_count", static_cast<std::uint32_t>(v.n_head));
  gguf_set_val_f32(g, "clip.vision.attention.layer_norm_epsilon", 1e-5f);
  const float mean[3] = {0.48145466f, 0.4578275f, 0.40821073f};  // CLIP's
  const float stdev[3] = {0.26862954f, 0.26130258f, 0.27577711f};
  gguf_set_arr_data(g, "clip.vision.image_mean", GGUF_TYPE_FLOAT32, mean, 3);
  gguf_set_arr_data(g, "clip.vision.image_std", GGUF_TYPE_FLOAT32, stdev, 3);

  const int side = v.image_size / v.patch_size;
  const std::int64_t n_pos = static_cast<std::int64_t>(side) * side + 1;
  ggml_init_params params{};
  params.mem_size = 4096 * ggml_tensor_overhead();
  params.no_alloc = true;  // the data is written below, tensor by tensor, into buffers of its own
  ggml_context* ctx = ggml_init(params);
  std::vector<std::vector<std::uint8_t>> data;
  Rng rng(seed);
  auto add = [&](const std::string& name, ggml_type type, std::initializer_list<std::int64_t> ne, float scale,
                 float offset = 0.0f) {
    std::int64_t dims[4] = {1, 1, 1, 1};
    int n = 0;
    for (std::int64_t d : ne) dims[n++] = d;
    ggml_tensor* t = ggml_new_tensor(ctx, type, n, dims);
    ggml_set_name(t, name.c_str());
    data.emplace_back(ggml_nbytes(t));
    t->data = data.back().data();
    const std::int64_t count = ggml_nelements(t);
    for (std::int64_t i = 0; i < count; ++i) {
      const float x = offset + rng.uniform(scale);
      if (type == GGML_TYPE_F32) {
        static_cast<float*>(t->data)[i] = x;
      } else {
        static_cast<ggml_fp16_t*>(t->data)[i] = ggml_fp32_to_fp16(x);
      }
    }
    gguf_add_tensor(g, t);
  };
  const std::int64_t e = v.n_embd;
  add("v.class_embd", GGML_TYPE_F32, {e}, 0.5f);
  add("v.patch_embd.weight", GGML_TYPE_F16, {v.patch_size, v.patch_size, 3, e}, 0.05f);
  add("v.position_embd.weight", GGML_TYPE_F16, {e, n_pos}, 0.5f);
  add("v.pre_ln.weight", GGML_TYPE_F32, {e}, 0.1f, 1.0f);
  add("v.pre_ln.bias", GGML_TYPE_F32, {e}, 0.1f);
  for (int l = 0; l < v.n_layer; ++l) {
    const std::string b = "v.blk." + std::to_string(l) + ".";
    for (const char* m : {"attn_q", "attn_k", "attn_v", "attn_out"}) {
      add(b + m + ".weight", GGML_TYPE_F16, {e, e}, 0.1f);
      add(b + m + ".bias", GGML_TYPE_F32, {e}, 0.1f);
    }
    for (const char* m : {"ln1", "ln2"}) {
      add(b + m + ".weight", GGML_TYPE_F32, {e}, 0.1f, 1.0f);
      add(b + m + ".bias", GGML_TYPE_F32, {e}, 0.1f);
    }
    add(b + "ffn_up.weight", GGML_TYPE_F16, {e, v.n_ff}, 0.1f);
    add(b + "ffn_up.bias", GGML_TYPE_F32, {v.n_ff}, 0.1f);
    add(b + "ffn_down.weight", GGML_TYPE_F16, {v.n_ff, e}, 0.1f);
    add(b + "ffn_down.bias", GGML_TYPE_F32, {e}, 0.1f);
  }
  add("mm.0.weight", GGML_TYPE_F16, {e, v.text_embd}, 0.1f);
  add("mm.0.bias", GGML_TYPE_F32, {v.text_embd}, 0.1f);
  add("mm.2.weight", GGML_TYPE_F16, {v.text_embd, v.text_embd}, 0.1f);
  add("mm.2.bias", GGML_TYPE_F32, {v.text_embd}, 0.1f);
  if (!gguf_write_to_file(g, path.c_str(), false)) fail("cannot write " + path);
  gguf_free(g);
  ggml_free(ctx);
}

}  // namespace galloc::dropin_test
