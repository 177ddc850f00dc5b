// A llama.rn context's target and its MTP draft in one share group, at real dimensions, on
// llama.rn 0.12.9 as galloc-rn patches it (bench/llama_share.sh builds and runs this, under GNU
// time for the peak RSS):
//
//   llama_mtp_share_bench write MODEL.gguf
//       writes the model: Qwen3.5-0.8B's text model with its MTP head (mtp_model.hpp), random
//       weights
//   llama_mtp_share_bench MODEL.gguf unshared|shared
//       one realistic run, as a completion with MTP speculative decoding runs in llama.rn: the
//       target's context (2048 positions, batches of 128, rollback for 3 drafted tokens), then
//       the draft's, made as createMTPDraftContext makes it (in the context's share group when
//       shared); a 512-token prompt, then draft-and-verify steps (mtp_speculation.hpp, up to 3
//       drafted tokens each) until 64 tokens are generated.
//
// Prints the compute memory held at the peak, the largest compute buffer (unshared: the
// largest member's own), how many drafted tokens were kept, a hash of every logit and hidden
// state, and the milliseconds of the prompt and per generated token. Compute memory is counted
// by buffer usage (compute_memory.hpp).
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "compute_memory.hpp"
#include "llama.h"
#include "llama_model.hpp"
#include "llama_share_group.hpp"
#include "mtp_model.hpp"
#include "mtp_speculation.hpp"
#include "test_support.hpp"

namespace {

using namespace galloc::dropin_test;

constexpr int kBatch = 128;
constexpr int kDraftMax = 3;
constexpr int kGenerated = 64;

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

int run(const std::string& model_path, const std::string& mode) {
  if (mode != "unshared" && mode != "shared") fail("the mode is unshared or shared, not " + mode);
  const bool shared = mode == "shared";
  if (shared && !kHasShareGroups) fail("this build has no share groups (stock)");
  llama_model* model = load_mtp_model(model_path);
  llama_context_params params = context_params(2048, kBatch);
  params.n_rs_seq = kDraftMax;
  llama_context* target = make_llama_context(model, params, shared);
  if (target == nullptr) fail("llama_init_from_model: target");
  llama_context* draft = make_mtp_draft_context(model, target, context_params(2048, kBatch), shared);
  if (draft == nullptr) fail("llama_init_from_model: MTP draft");

  std::uint64_t outputs = 0xcbf29ce484222325ull;
  int drafted = 0, kept = 0;
  double prompt_ms = 0, token_ms = 0;
  {
    MtpSpeculation speculation(target, draft, kBatch, kDraftMax, [&](const std::string&, std::uint64_t hash) {
      outputs = fnv1a(&hash, sizeof hash, outputs);
    });
    std::vector<llama_token> prompt;
    for (int i = 0; i <= 512; ++i) prompt.push_back(1 + (i * 37) % 997);
    auto start = std::chrono::steady_clock::now();
    speculation.read_prompt(prompt);
    prompt_ms = ms_since(start);
    const int end = speculation.n_past() + kGenerated;
    start = std::chrono::steady_clock::now();
    for (int step = 0; speculation.n_past() < end; ++step) {
      kept += speculation.step("step" + std::to_string(step));
      drafted += kDraftMax;
    }
    token_ms = ms_since(start) / (speculation.n_past() - end + kGenerated);
  }
  const std::size_t largest = largest_compute_buffer();

  llama_free(draft);
  llama_free(target);
  llama_model_free(model);
  llama_backend_free();
  forget_released();
  std::printf(
      "mtp %s: compute peak %zu bytes, largest member %zu; kept %d of %d drafted tokens; outputs %s; prompt %.0f ms, "
      "%.1f ms per generated token\n",
      mode.c_str(), memory().peak, largest, kept, drafted, hex(outputs).c_str(), prompt_ms, token_ms);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "write") == 0) {
    write_qwen35_mtp_model(argv[2], kQwen35_0_8B, 13);
    return 0;
  }
  if (argc != 3) fail("usage: llama_mtp_share_bench write MODEL.gguf | MODEL.gguf unshared|shared");
  return run(argv[1], argv[2]);
}
