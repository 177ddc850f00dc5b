// A llama.rn context's target model and its multimodal encoder in one share group
// (galloc-ggml.h), as llama.rn makes and runs them after galloc-rn apply: the target's context
// first (loadModel), then mtmd's encoder, made later inside the same group by name
// (initMultimodal → mtmd_init_from_file, whose clip context makes its scheduler and reserves
// it), with a vision or an audio projector (mmproj_model.hpp). Then media and text take turns as
// a completion with media does: each media chunk is encoded and its embeddings decoded by mtmd's
// helper (mtmd_helper_eval_chunk_single, after the llama_synchronize galloc-rn's edit puts before
// it), and the target generates a few tokens after each image or sound, so llama.cpp would reuse
// its graph across the encoder's allocs.
//
// Every embedding and every logit must be bit-identical to stock's (compare.cmake). With
// "share" as the fourth argument the two are made inside one share group: one compute buffer
// while both live, and the compute memory held at the peak is the largest member's need, as
// the encoder carries nothing to the target (its embeddings are copied to host memory).
// Compute memory is counted by buffer usage (compute_memory.hpp).
#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

#include "compute_memory.hpp"
#include "ggml.h"
#include "llama.h"
#include "llama_model.hpp"
#include "llama_share_group.hpp"
#include "mmproj_model.hpp"
#include "mtmd-helper.h"
#include "mtmd.h"
#include "test_support.hpp"

namespace {

using namespace galloc::dropin_test;

// The media of one round: an image of the tower's size, or three seconds of sound.
mtmd_bitmap* make_media(bool audio, int round) { return make_test_media(audio, kTinyVisionTower.image_size, 3, round); }

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) fail("usage: llama_mtmd_share_client MODEL MMPROJ vision|audio [share]");
  const std::string model_path = argv[1], mmproj_path = argv[2], kind = argv[3];
  if (kind != "vision" && kind != "audio") fail("the projector is vision or audio, not " + kind);
  const bool audio = kind == "audio";
  const bool share = argc > 4 && std::string(argv[4]) == "share";
  if (share && !kHasShareGroups) fail("share: built without galloc-rn's helper (GALLOC_RN_LLAMA_GROUP)");
  llama_model* model = write_and_load_llama_model(model_path);
  if (audio) {
    write_mmproj(mmproj_path, kTinyAudioTower, 7);
  } else {
    write_mmproj(mmproj_path, kTinyVisionTower, 7);
  }

  // room for two rounds of media and the text around them: an image is 65 tokens, a sound two
  // 30-second chunks of 377 (mtmd pads it by 30 seconds)
  llama_context_params params = context_params(audio ? 2048 : 512, 32);
  llama_context* ctx = make_llama_context(model, params, share);
  if (ctx == nullptr) fail("llama_init_from_model");
  llama_batch batch = llama_batch_init(32, 0, 1);
  int n_past = 0;
  int next = 0;
  auto decode = [&](const std::vector<llama_token>& tokens, const std::string& step) {
    const float* logits = decode_tokens(ctx, batch, tokens, n_past, "target " + step);
    exact("llama_mtmd." + step + ".logits", hex(fnv1a(logits, kVocab * sizeof(float))));
    next = argmax(logits, kVocab);
  };
  decode({1, 17, 33, 5, 99, 120, 64, 2, 77}, "prompt");
  for (int i = 0; i < 3; ++i) decode({next}, "alone.gen" + std::to_string(i));

  mtmd_context* mctx = make_mtmd_context(mmproj_path, model, share);
  if (audio ? !mtmd_support_audio(mctx) : !mtmd_support_vision(mctx)) fail("the projector has no " + kind + " encoder");

  for (int round = 0; round < 2; ++round) {
    const std::string step = kind + std::to_string(round);
    mtmd_bitmap* media = make_media(audio, round);
    mtmd_input_chunks* chunks = tokenize_media(mctx, media);
    for (std::size_t i = 0; i < mtmd_input_chunks_size(chunks); ++i) {
      const std::string chunk_step = step + ".chunk" + std::to_string(i);
      const mtmd_input_chunk* chunk = mtmd_input_chunks_get(chunks, i);
      const auto type = mtmd_input_chunk_get_type(chunk);
      if (type != (audio ? MTMD_INPUT_CHUNK_TYPE_AUDIO : MTMD_INPUT_CHUNK_TYPE_IMAGE))
        fail(chunk_step + ": not " + kind);
      const std::size_t n_tokens = mtmd_input_chunk_get_n_tokens(chunk);
      llama_synchronize(ctx);
      llama_pos new_n_past = 0;
      if (mtmd_helper_eval_chunk_single(mctx, ctx, chunk, n_past, 0, 32, true, &new_n_past) != 0) {
        fail(chunk_step + ": mtmd_helper_eval_chunk_single");
      }
      const float* embd = mtmd_get_output_embd(mctx);
      exact("llama_mtmd." + chunk_step + ".embeddings",
            hex(fnv1a(embd, n_tokens * static_cast<std::size_t>(llama_model_n_embd(model)) * sizeof(float))));
      const float* logits = llama_get_logits_ith(ctx, -1);
      exact("llama_mtmd." + chunk_step + ".logits", hex(fnv1a(logits, kVocab * sizeof(float))));
      n_past = new_n_past;
      next = argmax(logits, kVocab);
    }
    mtmd_input_chunks_free(chunks);
    mtmd_bitmap_free(media);
    for (int i = 0; i < 3; ++i) decode({next}, step + ".gen" + std::to_string(i));
    report_compute_buffers(share, "llama_mtmd." + step + ".compute_buffers");
  }
  size_line("llama_mtmd.largest_buffer", largest_compute_buffer());

  mtmd_free(mctx);
  llama_batch_free(batch);
  llama_free(ctx);
  llama_model_free(model);
  llama_backend_free();
  forget_released();
  size_line("llama_mtmd.compute_peak", memory().peak);
  if (memory().live != 0) fail(std::to_string(memory().live) + " bytes of compute buffers left after freeing both");
  std::printf("done\n");
  return 0;
}
