// What one share group costs and saves a llama.rn context's target and MTP-style draft on
// llama.cpp (llama.rn 0.12.9 as galloc-rn patches it, built by tests/amalgamation/packages_test.sh;
// bench/llama_share.sh builds and runs this). In every round, by turns in this one process:
// the two contexts made outside any group ("unshared") and made in one group as galloc-rn's
// helper makes them ("shared"). Each: the target reads a prompt and decodes TOKENS tokens alone,
// then target and draft take turns, one token each, for TOKENS more. Timed: each target decode.
// Alone, the target reuses its graph in both modes; taking turns, the shared target allocates
// again after every draft decode (another member allocated), the unshared one reuses.
//
//   llama_share_bench MODEL.gguf ROUNDS TOKENS
//
// Prints per mode the median milliseconds per target token (alone, taking turns), the compute
// memory held at the peak, the larger member's buffer and a hash of every target logit; in a
// build with galloc-rn's helper (llama_share_group.hpp) also the shared/unshared ratios, the median of
// each round's. Compute memory is counted by buffer usage (compute_memory.hpp).
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "compute_memory.hpp"
#include "ggml-backend.h"
#include "ggml.h"
#include "llama.h"
#include "llama_model.hpp"
#include "llama_share_group.hpp"
#include "median.hpp"
#include "test_support.hpp"

namespace {

using namespace galloc::dropin_test;

struct Run {
  std::vector<double> alone_ms, turns_ms;  // per target token
  std::size_t peak = 0, larger = 0;
  std::uint64_t logits = 0xcbf29ce484222325ull;
};

llama_context* make_context(llama_model* model, bool shared) {
  llama_context* ctx = make_llama_context(model, context_params(512, 128), shared);
  if (ctx == nullptr) fail("llama_init_from_model");
  return ctx;
}

struct Decoder {
  llama_context* ctx;
  llama_batch batch = llama_batch_init(128, 0, 1);
  int n_past = 0;
  int next = 0;
  explicit Decoder(llama_context* c) : ctx(c) {}
  ~Decoder() {
    llama_batch_free(batch);
    llama_free(ctx);
  }
  // Decodes `tokens`; returns the milliseconds llama_decode took. Adds the logits to `hash`.
  double decode(const std::vector<llama_token>& tokens, std::uint64_t& hash) {
    fill_batch(batch, tokens, n_past);
    const auto start = std::chrono::steady_clock::now();
    if (llama_decode(ctx, batch) != 0) fail("llama_decode");
    const std::chrono::duration<double, std::milli> took = std::chrono::steady_clock::now() - start;
    n_past += static_cast<int>(tokens.size());
    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(llama_get_model(ctx)));
    const float* logits = llama_get_logits_ith(ctx, -1);
    hash = fnv1a(logits, static_cast<std::size_t>(n_vocab) * sizeof(float), hash);
    next = argmax(logits, n_vocab);
    return took.count();
  }
};

Run run(llama_model* model, bool shared, int tokens) {
  Run r;
  forget_released();
  memory().peak = memory().live;
  std::vector<llama_token> prompt;
  for (int i = 0; i < 32; ++i) prompt.push_back(1 + (i * 37) % 997);
  {
    Decoder target(make_context(model, shared));
    target.decode(prompt, r.logits);
    for (int i = 0; i < tokens; ++i) r.alone_ms.push_back(target.decode({target.next}, r.logits));
    Decoder draft(make_context(model, shared));
    std::uint64_t draft_logits = 0;
    draft.decode(prompt, draft_logits);
    for (int i = 0; i < tokens; ++i) {
      draft.decode({draft.next}, draft_logits);
      r.turns_ms.push_back(target.decode({target.next}, r.logits));
    }
    r.larger = largest_compute_buffer();
  }
  forget_released();
  r.peak = memory().peak - memory().live;
  return r;
}

void print(const char* mode, const Run& r) {
  std::printf(
      "%s: %.2f ms per target token alone, %.2f taking turns; compute peak %zu bytes, larger member %zu;"
      " logits %s\n",
      mode, galloc::bench::median(r.alone_ms), galloc::bench::median(r.turns_ms), r.peak, r.larger,
      hex(r.logits).c_str());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) fail("usage: llama_share_bench MODEL.gguf ROUNDS TOKENS");
  const int rounds = std::atoi(argv[2]), tokens = std::atoi(argv[3]);
  if (rounds < 1 || tokens < 1) fail("ROUNDS and TOKENS must be at least 1");
  llama_model* model = load_llama_model(argv[1]);
  if (kHasShareGroups) {
    std::vector<double> alone_ratio, turns_ratio;
    Run unshared, shared;
    for (int round = 0; round < rounds; ++round) {
      // by turns, each mode first in every other round
      if (round % 2 == 0) unshared = run(model, false, tokens);
      shared = run(model, true, tokens);
      if (round % 2 == 1) unshared = run(model, false, tokens);
      if (unshared.logits != shared.logits) fail("shared and unshared targets computed different logits");
      alone_ratio.push_back(galloc::bench::median(shared.alone_ms) / galloc::bench::median(unshared.alone_ms));
      turns_ratio.push_back(galloc::bench::median(shared.turns_ms) / galloc::bench::median(unshared.turns_ms));
    }
    print("unshared", unshared);
    print("shared", shared);
    std::printf("ratio shared/unshared per target token: alone %.3f, taking turns %.3f (median of %d rounds)\n",
                galloc::bench::median(alone_ratio), galloc::bench::median(turns_ratio), rounds);
  } else {
    Run stock;
    for (int round = 0; round < rounds; ++round) stock = run(model, false, tokens);
    print("stock", stock);
  }
  llama_model_free(model);
  llama_backend_free();
  return 0;
}
