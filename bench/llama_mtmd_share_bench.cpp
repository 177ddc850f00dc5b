// A llama.rn context's target and its multimodal encoder in one share group, at real
// dimensions, on llama.rn 0.12.9 as galloc-rn patches it (bench/llama_share.sh builds and runs
// this, under GNU time for the peak RSS):
//
//   llama_mtmd_share_bench write vision|audio MMPROJ.gguf
//       writes a projector, random weights:
//       vision  LLaVA-1.5-7B's: CLIP ViT-L/14 at 336 pixels (1024 wide, 16 heads, 4096
//               feed-forward, 24 blocks, of which clip computes the first 23, as LLaVA takes
//               the second-to-last layer) and a two-layer MLP into Llama-2-7B's 4096;
//       audio   GLM-ASR-Nano-2512's: Whisper large-v3's encoder (128 mel bins, 1280 wide, 20
//               heads, 5120 feed-forward, 32 blocks), frames stacked by 4, and a GELU MLP
//               through 4096 into its text model's 2048
//   llama_mtmd_share_bench MODEL.gguf MMPROJ.gguf unshared|shared
//       one realistic run, as a completion with an image or a sound runs in llama.rn: the
//       target's context (2048 positions, batches of 128), then mtmd's encoder made as
//       initMultimodal makes it (in the context's share group when shared); the media encoded
//       and its embeddings decoded by mtmd's helper, chunk by chunk (an image of 336 x 336, or
//       30 seconds of sound at 16 kHz), a 512-token prompt, 64 generated tokens.
//
// Prints the compute memory held at the peak, the largest compute buffer (unshared: the
// largest member's own), a hash of the embeddings and of every logit, and the milliseconds of
// the media, the prompt and each generated token, on a line that starts "vision MODE:" or
// "audio MODE:". Compute memory is counted by buffer usage (compute_memory.hpp).
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
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

constexpr int kBatch = 128;

// An image of the vision tower's size, or 30 seconds of sound: two chunks, as mtmd pads sound
// to at least 31 seconds, appends 30 seconds of silence to its mel frames and encodes every
// whole 30-second chunk
mtmd_bitmap* make_media(bool audio) { return make_test_media(audio, kLlava15Vision.image_size, 30, 0); }

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

int run(const std::string& model_path, const std::string& mmproj_path, const std::string& mode) {
  if (mode != "unshared" && mode != "shared") fail("the mode is unshared or shared, not " + mode);
  const bool shared = mode == "shared";
  if (shared && !kHasShareGroups) fail("this build has no share groups (stock)");
  llama_model* model = load_llama_model(model_path);
  const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  llama_context* ctx = make_llama_context(model, context_params(2048, kBatch), shared);
  if (ctx == nullptr) fail("llama_init_from_model");
  mtmd_context* mctx = make_mtmd_context(mmproj_path, model, shared);

  std::uint64_t logits_hash = 0xcbf29ce484222325ull;
  int n_past = 0, next = 0;
  auto take_logits = [&] {
    const float* logits = llama_get_logits_ith(ctx, -1);
    logits_hash = fnv1a(logits, static_cast<std::size_t>(n_vocab) * sizeof(float), logits_hash);
    next = argmax(logits, n_vocab);
  };

  // the media
  const bool audio = mtmd_support_audio(mctx);
  mtmd_bitmap* bitmap = make_media(audio);
  mtmd_input_chunks* chunks = tokenize_media(mctx, bitmap);
  std::size_t media_tokens = 0;
  std::uint64_t embd_hash = 0xcbf29ce484222325ull;
  auto start = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < mtmd_input_chunks_size(chunks); ++i) {
    const mtmd_input_chunk* chunk = mtmd_input_chunks_get(chunks, i);
    if (mtmd_input_chunk_get_type(chunk) != (audio ? MTMD_INPUT_CHUNK_TYPE_AUDIO : MTMD_INPUT_CHUNK_TYPE_IMAGE)) {
      fail("mtmd made a chunk of another kind than the media");
    }
    const std::size_t n_tokens = mtmd_input_chunk_get_n_tokens(chunk);
    llama_synchronize(ctx);  // as galloc-rn's edit of rn-mtmd.hpp does
    llama_pos new_n_past = 0;
    if (mtmd_helper_eval_chunk_single(mctx, ctx, chunk, n_past, 0, kBatch, true, &new_n_past) != 0) {
      fail("mtmd_helper_eval_chunk_single");
    }
    embd_hash = fnv1a(mtmd_get_output_embd(mctx),
                      n_tokens * static_cast<std::size_t>(llama_model_n_embd(model)) * sizeof(float), embd_hash);
    media_tokens += n_tokens;
    n_past = new_n_past;
    take_logits();
  }
  const double media_ms = ms_since(start);
  mtmd_input_chunks_free(chunks);
  mtmd_bitmap_free(bitmap);

  // the prompt, then the generated tokens
  llama_batch batch = llama_batch_init(kBatch, 0, 1);
  std::vector<llama_token> prompt;
  for (int i = 0; i < 512; ++i) prompt.push_back(1 + (i * 37) % 997);
  start = std::chrono::steady_clock::now();
  for (std::size_t at = 0; at < prompt.size(); at += kBatch) {
    fill_batch(
        batch,
        {prompt.begin() + static_cast<std::ptrdiff_t>(at), prompt.begin() + static_cast<std::ptrdiff_t>(at + kBatch)},
        n_past);
    if (llama_decode(ctx, batch) != 0) fail("llama_decode of the prompt");
    n_past += kBatch;
    take_logits();
  }
  const double prompt_ms = ms_since(start);
  start = std::chrono::steady_clock::now();
  for (int i = 0; i < 64; ++i) {
    fill_batch(batch, {next}, n_past);
    if (llama_decode(ctx, batch) != 0) fail("llama_decode of a generated token");
    ++n_past;
    take_logits();
  }
  const double token_ms = ms_since(start) / 64;
  const std::size_t largest = largest_compute_buffer();

  llama_batch_free(batch);
  mtmd_free(mctx);
  llama_free(ctx);
  llama_model_free(model);
  llama_backend_free();
  forget_released();
  std::printf(
      "%s %s: compute peak %zu bytes, largest member %zu; embeddings %s; logits %s; %s of %zu tokens %.0f ms,"
      " prompt %.0f ms, %.1f ms per generated token\n",
      audio ? "audio" : "vision", mode.c_str(), memory().peak, largest, hex(embd_hash).c_str(),
      hex(logits_hash).c_str(), audio ? "sound" : "image", media_tokens, media_ms, prompt_ms, token_ms);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const char* usage =
      "usage: llama_mtmd_share_bench write vision|audio MMPROJ.gguf | MODEL.gguf MMPROJ.gguf unshared|shared";
  if (argc == 4 && std::strcmp(argv[1], "write") == 0) {
    if (std::strcmp(argv[2], "vision") == 0) {
      write_mmproj(argv[3], kLlava15Vision, 11);
    } else if (std::strcmp(argv[2], "audio") == 0) {
      write_mmproj(argv[3], kGlmAsrNanoAudio, 13);
    } else {
      fail(usage);
    }
    return 0;
  }
  if (argc != 4) fail(usage);
  return run(argv[1], argv[2], argv[3]);
}
