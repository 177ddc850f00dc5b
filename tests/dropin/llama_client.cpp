// The real client: llama.cpp (from llama.rn's sources) decoding with a tiny llama model of
// random weights (llama_model.hpp), linked once against stock ggml and once against galloc's
// drop-in. Reports in the format of dropin_graphs.cpp (see compare.cmake): the logits of a
// prompt and of every generated token must be bit-identical, the compute buffers no larger.
//
// The program is linked with -Wl,--wrap=ggml_backend_sched_get_buffer_size so that it sees
// the exact compute buffer sizes llama.cpp reads from its scheduler.
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "ggml-backend.h"
#include "ggml.h"
#include "llama.h"
#include "llama_model.hpp"
#include "sched_buffer_sizes.hpp"
#include "test_support.hpp"

namespace {

using namespace galloc::dropin_test;

// A prompt, then tokens generated one at a time (greedy), then a second, longer prompt.
void run(llama_model* model, const char* label, bool flash_attn) {
  const llama_context_params cp = tiny_context_params(flash_attn);
  compute_sizes().clear();
  llama_context* ctx = llama_init_from_model(model, cp);
  if (ctx == nullptr) fail("llama_init_from_model");
  const std::string key = std::string("llama_cpp.") + label;
  for (const auto& [backend, size] : compute_sizes())
    std::printf("size %s.reserved.%s %zu\n", key.c_str(), backend.c_str(), size);

  llama_batch batch = llama_batch_init(32, 0, 1);
  int n_past = 0;
  auto decode = [&](const std::vector<llama_token>& tokens, const std::string& step) {
    const float* logits = decode_tokens(ctx, batch, tokens, n_past, step);
    std::printf("exact %s.%s.logits %s\n", key.c_str(), step.c_str(),
                hex(fnv1a(logits, kVocab * sizeof(float))).c_str());
    return argmax(logits, kVocab);
  };
  int next = decode({1, 17, 33, 5, 99, 120, 64, 2, 77}, "prompt9");
  for (int i = 0; i < 4; ++i) next = decode({next}, "gen" + std::to_string(i));
  std::vector<llama_token> second;
  for (int i = 0; i < 21; ++i) second.push_back((i * 37 + 11) % kVocab);
  next = decode(second, "prompt21");
  decode({next}, "gen_after");
  for (const auto& [backend, size] : compute_sizes())
    std::printf("size %s.final.%s %zu\n", key.c_str(), backend.c_str(), size);
  llama_batch_free(batch);
  llama_free(ctx);
}

}  // namespace

int main(int argc, char** argv) {
  llama_model* model = write_and_load_llama_model(argc > 1 ? argv[1] : "tiny-llama.gguf");
  run(model, "attn", false);
  run(model, "flash_attn", true);
  llama_model_free(model);
  llama_backend_free();
  std::printf("done\n");
  return 0;
}
