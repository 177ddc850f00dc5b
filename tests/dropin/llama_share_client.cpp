// The members of one llama.rn context in a share group (galloc-ggml.h), as llama.rn makes them:
// the target model's context first; later a draft context for speculative decoding (llama.rn's
// MTP draft is one more llama_context on the model), which needs more compute memory than the
// target, joining the group again by name; the draft freed and made again (a plain completion
// does so each time); and the target's scheduler made again at decode time, as the multimodal
// path does when it switches causal attention off for an image and on again. Target and draft
// take turns token by token, so llama.cpp reuses each one's graph between the other's decodes.
//
// Every logit must be bit-identical to stock's (compare.cmake), which needs galloc-rn's edit to
// llama-context.cpp: a context reuses its graph only while no other member allocated since,
// and makes its scheduler again inside its group. With "share" as the second argument the
// members are made inside one share group, and the compute memory held at the
// peak must be the largest member's need, not the sum: one compute buffer while both live.
//
// The group is opened as llama.rn's code opens it after galloc-rn apply (llama_share_group.hpp);
// the stock build runs unshared only. Compute memory is counted by buffer usage
// (compute_memory.hpp).
#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

#include "compute_memory.hpp"
#include "ggml-backend.h"
#include "ggml.h"
#include "llama.h"
#include "llama_model.hpp"
#include "llama_share_group.hpp"
#include "test_support.hpp"

namespace {

using namespace galloc::dropin_test;

// Makes a context on `model`, inside the group when sharing (llama.rn's loadModel,
// createMTPDraftContext).
llama_context* make_context(llama_model* model, const llama_context_params& params, bool share, const char* what) {
  llama_context* ctx = make_llama_context(model, params, share);
  if (ctx == nullptr) fail(std::string("llama_init_from_model: ") + what);
  return ctx;
}

// One context's decoding: its batch, position and last greedy token.
struct Member {
  llama_context* ctx = nullptr;
  std::string name;
  llama_batch batch = llama_batch_init(64, 0, 1);
  int n_past = 0;
  int next = 0;
  ~Member() { llama_batch_free(batch); }

  void decode(const std::vector<llama_token>& tokens, const std::string& step) {
    const float* logits = decode_tokens(ctx, batch, tokens, n_past, name + " " + step);
    exact("llama_share." + name + "." + step + ".logits", hex(fnv1a(logits, kVocab * sizeof(float))));
    next = argmax(logits, kVocab);
  }
  void start(const std::vector<llama_token>& prompt, const std::string& step) {
    llama_memory_clear(llama_get_memory(ctx), true);
    n_past = 0;
    decode(prompt, step);
  }
};

// The draft and the target take turns, one token each, as speculative decoding does.
void take_turns(Member& draft, Member& target, int tokens, const std::string& round) {
  for (int i = 0; i < tokens; ++i) {
    draft.decode({draft.next}, round + ".gen" + std::to_string(i));
    target.decode({target.next}, round + ".gen" + std::to_string(i));
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) fail("usage: llama_share_client MODEL [share]");
  const std::string path = argv[1];
  const bool share = argc > 2 && std::string(argv[2]) == "share";
  if (share && !kHasShareGroups) fail("share: built without galloc-rn's helper (GALLOC_RN_LLAMA_GROUP)");
  llama_model* model = write_and_load_llama_model(path);

  const std::vector<llama_token> prompt = {1, 17, 33, 5, 99, 120, 64, 2, 77};
  Member target;
  target.name = "target";
  target.ctx = make_context(model, tiny_context_params(false), share, "target");
  target.start(prompt, "prompt");
  for (int i = 0; i < 3; ++i) target.decode({target.next}, "alone.gen" + std::to_string(i));

  // The draft comes later and needs more: its reserve grows the group's buffer after the
  // target's last alloc, so the target must allocate again rather than reuse its graph.
  llama_context_params draft_params = tiny_context_params(false);
  draft_params.n_ctx = 256;
  draft_params.n_batch = 64;
  draft_params.n_ubatch = 64;
  for (int round = 0; round < 2; ++round) {
    const std::string r = "round" + std::to_string(round);
    Member draft;
    draft.name = "draft";
    draft.ctx = make_context(model, draft_params, share, "draft");
    draft.start(prompt, r + ".prompt");
    take_turns(draft, target, 4, r);
    // An image's non-causal decode: the target's scheduler is made again at decode time, on
    // this thread, where no share group is open; in the second round another group is open
    // meanwhile (something else being made), and the scheduler must still join its own.
#ifdef GALLOC_RN_LLAMA_GROUP
    const bool outer = share && round == 1;
    if (outer && !galloc_ggml_share_begin("another llama.rn context")) fail("share_begin of another group");
#endif
    llama_set_causal_attn(target.ctx, false);
    target.decode({3, 4, 5, 6}, r + ".noncausal4");
    report_compute_buffers(share, "llama_share." + r + ".noncausal4" + ".compute_buffers");
#ifdef GALLOC_RN_LLAMA_GROUP
    if (outer && !galloc_ggml_share_end()) fail("share_end of another group");
#endif
    llama_set_causal_attn(target.ctx, true);
    take_turns(draft, target, 3, r + ".after");
    report_compute_buffers(share, "llama_share." + r + ".after" + ".compute_buffers");
    llama_free(draft.ctx);
  }

  llama_free(target.ctx);
  llama_model_free(model);
  llama_backend_free();
  forget_released();
  size_line("llama_share.compute_peak", memory().peak);
  if (memory().live != 0) fail(std::to_string(memory().live) + " bytes of compute buffers left after freeing both");
  std::printf("done\n");
  return 0;
}
