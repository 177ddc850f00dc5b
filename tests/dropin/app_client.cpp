// whisper.cpp and llama.cpp in one program on one ggml, as an app that transcribes and then
// answers keeps both loaded (whisper.cpp's talk-llama example links the two so). A tiny whisper
// model (whisper_model.hpp) and a tiny llama model (llama_model.hpp) of random weights; then
// three rounds of: whisper encodes a synthetic signal and decodes a few tokens, llama.cpp
// reads a prompt and generates a few tokens. Every round must give what the first gave,
// bit for bit, and compare.cmake checks that stock and galloc report the same results.
//
// With "share" as the third argument both are created inside one share group (galloc-ggml.h),
// so whisper's four graphs and llama.cpp's graph take their compute memory from one buffer:
// what the program holds at its peak must then be the largest need, not the sum.
//
// Compute memory is counted by buffer usage (compute_memory.hpp).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "compute_memory.hpp"
#include "ggml-backend.h"
#include "ggml.h"
#include "llama.h"
#include "llama_model.hpp"
#include "test_support.hpp"
#include "whisper.h"
#include "whisper_model.hpp"

// galloc-ggml.h's, defined by the drop-in only: weak, so that the stock build links.
extern "C" {
__attribute__((weak)) bool galloc_ggml_share_begin(const char* name);
__attribute__((weak)) bool galloc_ggml_share_end(void);
}

namespace {

using namespace galloc::dropin_test;

// One round of whisper: the mel spectrogram, the encoder (conv, encoder and cross graphs),
// a 4-token prompt and two tokens decoded greedily. Returns the report lines.
std::vector<std::string> run_whisper(whisper_context* ctx, const std::vector<float>& pcm) {
  std::vector<std::string> lines;
  if (whisper_pcm_to_mel(ctx, pcm.data(), static_cast<int>(pcm.size()), 1) != 0) fail("whisper_pcm_to_mel");
  if (whisper_encode(ctx, 0, 1) != 0) fail("whisper_encode");
  std::vector<whisper_token> tokens = {1, 17, 33, 5};
  int n_past = 0;
  for (int step = 0; step < 3; ++step) {
    if (whisper_decode(ctx, tokens.data(), static_cast<int>(tokens.size()), n_past, 1) != 0) fail("whisper_decode");
    const int n_vocab = kWhisperTestDims.vocab;
    const float* logits = whisper_get_logits(ctx) + static_cast<size_t>(tokens.size() - 1) * n_vocab;
    for (int i = 0; i < n_vocab; ++i) {
      if (!std::isfinite(logits[i])) fail("whisper: non-finite logits");
    }
    lines.push_back("exact app.whisper.decode" + std::to_string(step) + ".logits " +
                    hex(fnv1a(logits, static_cast<size_t>(n_vocab) * sizeof(float))));
    n_past += static_cast<int>(tokens.size());
    tokens = {argmax(logits, n_vocab)};
  }
  return lines;
}

// One round of llama.cpp from an empty cache: a 9-token prompt, then three tokens greedily.
std::vector<std::string> run_llama(llama_context* ctx) {
  std::vector<std::string> lines;
  llama_memory_clear(llama_get_memory(ctx), true);
  llama_batch batch = llama_batch_init(32, 0, 1);
  int n_past = 0;
  auto decode = [&](const std::vector<llama_token>& tokens, const std::string& step) {
    const float* logits = decode_tokens(ctx, batch, tokens, n_past, "llama " + step);
    lines.push_back("exact app.llama." + step + ".logits " + hex(fnv1a(logits, kVocab * sizeof(float))));
    return argmax(logits, kVocab);
  };
  int next = decode({1, 17, 33, 5, 99, 120, 64, 2, 77}, "prompt9");
  for (int i = 0; i < 3; ++i) next = decode({next}, "gen" + std::to_string(i));
  llama_batch_free(batch);
  return lines;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) fail("usage: app_client WHISPER_MODEL LLAMA_MODEL [share]");
  const std::string whisper_path = argv[1], llama_path = argv[2];
  const bool share = argc > 3 && std::string(argv[3]) == "share";
  if (share && galloc_ggml_share_begin == nullptr) fail("share: this build has no galloc drop-in");
  auto quiet = [](ggml_log_level level, const char* text, void*) {
    if (level >= GGML_LOG_LEVEL_ERROR) std::fputs(text, stderr);
  };
  whisper_log_set(quiet, nullptr);
  llama_log_set(quiet, nullptr);
  llama_backend_init();
  write_whisper_model(whisper_path, kWhisperTestDims);
  write_llama_model(llama_path);

  if (share && !galloc_ggml_share_begin("app")) fail("galloc_ggml_share_begin");
  whisper_context_params wp = whisper_context_default_params();
  wp.use_gpu = false;
  whisper_context* whisper = whisper_init_from_file_with_params(whisper_path.c_str(), wp);
  if (whisper == nullptr) fail("cannot load " + whisper_path);
  forget_released();
  const size_t after_whisper = memory().live;
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  mp.progress_callback = [](float, void*) { return true; };  // no progress dots
  llama_model* model = llama_model_load_from_file(llama_path.c_str(), mp);
  if (model == nullptr) fail("cannot load " + llama_path);
  const llama_context_params cp = tiny_context_params(false);
  llama_context* llama = llama_init_from_model(model, cp);
  if (llama == nullptr) fail("llama_init_from_model");
  if (share && !galloc_ggml_share_end()) fail("galloc_ggml_share_end");
  // what each one's reserve took: with sharing, llama.cpp's only what it needs beyond whisper's
  std::printf("size app.whisper.compute_reserved %zu\n", after_whisper);
  forget_released();
  std::printf("size app.llama.compute_reserved %zu\n", memory().live - after_whisper);

  const std::vector<float> pcm = synthetic_pcm(4 * WHISPER_SAMPLE_RATE);
  std::vector<std::string> first;
  for (int round = 0; round < 3; ++round) {
    std::vector<std::string> lines = run_whisper(whisper, pcm);
    for (std::string& line : run_llama(llama)) lines.push_back(std::move(line));
    if (round == 0) {
      first = lines;
      for (const std::string& line : lines) std::printf("%s\n", line.c_str());
    } else if (lines != first) {
      fail("round " + std::to_string(round) + " computed other results than the first");
    }
  }
  std::printf("info app.rounds 3, each with the first round's results\n");
  llama_free(llama);
  llama_model_free(model);
  whisper_free(whisper);
  llama_backend_free();
  forget_released();
  std::printf("size app.compute_peak %zu\n", memory().peak);
  if (memory().live != 0) fail(std::to_string(memory().live) + " bytes of compute buffers left after freeing both");
  std::printf("done\n");
  return 0;
}
