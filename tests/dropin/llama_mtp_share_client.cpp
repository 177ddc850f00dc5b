// A llama.rn context's target model and its MTP draft in one share group (galloc-ggml.h), as
// llama.rn makes and runs them after galloc-rn apply: a Qwen3.5 model with its MTP head
// (mtp_model.hpp), loaded with the head as for speculative.type "draft-mtp"; the target's
// context first (loadModel), and at each completion the draft, a LLAMA_CONTEXT_TYPE_MTP context
// on the same model with the target as ctx_other (createMTPDraftContext), made in the same group
// by name and freed after it (llama.rn's completion resets its speculative state each time).
// Each completion decodes as llama.cpp's draft-mtp speculative decoding does
// (mtp_speculation.hpp): target and draft alternate at every step, and what the draft reads of
// the target goes through host memory. The draft's reserve, the only one that can grow the
// group's buffer, comes before the completion's first target decode, whose shape differs from
// the target's last: no graph is reused across a growth here (llama_share_client.cpp tests
// that case).
//
// Every logit and hidden state must be bit-identical to stock's (compare.cmake). With "share" as
// the second argument: one compute buffer while both live, and the compute memory held at the
// peak no more than the largest member's need. Compute memory is counted by buffer usage
// (compute_memory.hpp).
#include <algorithm>
#include <cstddef>
#include <cstdio>
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

constexpr int kDraftMax = 3;  // speculative.n_max
constexpr int kBatch = 32;
constexpr int kSteps = 6;  // draft-and-verify steps per completion

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) fail("usage: llama_mtp_share_client MODEL [share]");
  const std::string path = argv[1];
  const bool share = argc > 2 && std::string(argv[2]) == "share";
  if (share && !kHasShareGroups) fail("share: built without galloc-rn's helper (GALLOC_RN_LLAMA_GROUP)");
  write_qwen35_mtp_model(path, kTinyQwen35, 5);
  llama_model* model = load_mtp_model(path);
  if (llama_model_n_layer_nextn(model) != 1) fail("the model has no MTP head");

  // loadModel: room for kDraftMax recurrent-state snapshots, so that a rejected draft rolls back
  llama_context_params target_params = context_params(256, kBatch);
  target_params.n_rs_seq = kDraftMax;
  llama_context* target = make_llama_context(model, target_params, share);
  if (target == nullptr) fail("llama_init_from_model: target");
  std::size_t largest = 0;
  for (int completion = 0; completion < 2; ++completion) {
    const std::string name = "completion" + std::to_string(completion);
    llama_context* draft = make_mtp_draft_context(model, target, context_params(256, kBatch), share);
    if (draft == nullptr) fail("llama_init_from_model: MTP draft");
    {
      MtpSpeculation speculation(target, draft, kBatch, kDraftMax, [&](const std::string& key, std::uint64_t hash) {
        exact("llama_mtp." + name + "." + key, hex(hash));
      });
      std::vector<llama_token> prompt = {1, 17, 33, 5, 99, 120, 64, 2, 77};
      prompt.push_back(static_cast<llama_token>(10 + completion));
      speculation.read_prompt(prompt);
      for (int step = 0; step < kSteps; ++step) {
        const std::string key = "step" + std::to_string(step);
        exact("llama_mtp." + name + "." + key + ".accepted", std::to_string(speculation.step(key)));
      }
    }
    report_compute_buffers(share, "llama_mtp." + name + ".compute_buffers");
    largest = std::max(largest, largest_compute_buffer());
    llama_free(draft);
  }
  size_line("llama_mtp.largest_buffer", largest);

  llama_free(target);
  llama_model_free(model);
  llama_backend_free();
  forget_released();
  size_line("llama_mtp.compute_peak", memory().peak);
  if (memory().live != 0) fail(std::to_string(memory().live) + " bytes of compute buffers left after freeing both");
  std::printf("done\n");
  return 0;
}
