// What one share group costs and saves a llama.rn context's target and MTP-style draft on
// llama.cpp (llama.rn 0.12.9 as galloc-rn patches it, built by tests/amalgamation/packages_test.sh;
// bench/llama_share.sh builds and runs this). Two ways to run it:
//
//   llama_share_bench MODEL.gguf ROUNDS TOKENS
//
// In every round, by turns in this one process: the two contexts made outside any group
// ("unshared") and made in one group as galloc-rn's helper makes them ("shared"). Each: the
// target reads a prompt and decodes TOKENS tokens alone, then target and draft take turns, one
// token each, for TOKENS more. Timed: each target decode, and the ggml_gallocr_alloc_graph calls
// inside it. Alone, the target reuses its graph in both modes; taking turns, the shared target
// allocates again after every draft decode (another member allocated), the unshared one reuses.
// Each round runs once more with llama.cpp's graph reuse off (LLAMA_GRAPH_REUSE_DISABLE), where
// both modes allocate every token, to compare one alloc_graph shared with one unshared.
// Prints per mode the median milliseconds per target token and alloc_graph's microseconds per
// target token (each the median of the rounds' medians), the compute memory held at the peak,
// the larger member's buffer and a hash of every target logit; in a build with galloc-rn's
// helper (llama_share_group.hpp) also the shared/unshared ratios, the median of each round's.
// Compute memory is counted by buffer usage (compute_memory.hpp).
//
//   llama_share_bench MODEL.gguf rss unshared|shared
//
// One realistic run for a peak RSS measure (the script runs it under GNU time): 1024 positions,
// the target and then the draft read a 512-token prompt, then they take turns for 64 tokens.
// Prints the compute peak and the logits' hash.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "compute_memory.hpp"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml.h"
#include "llama.h"
#include "llama_model.hpp"
#include "llama_share_group.hpp"
#include "median.hpp"
#include "test_support.hpp"

// Every ggml_gallocr_alloc_graph call (the program links with -Wl,--wrap= for it): ggml's
// scheduler makes them, from another object of the library.
namespace {
struct AllocGraphTime {
  double us = 0;
  int calls = 0;
};
AllocGraphTime alloc_graph_time;
}  // namespace

extern "C" {
bool __real_ggml_gallocr_alloc_graph(ggml_gallocr_t galloc, struct ggml_cgraph* graph);
bool __wrap_ggml_gallocr_alloc_graph(ggml_gallocr_t galloc, struct ggml_cgraph* graph) {
  const auto start = std::chrono::steady_clock::now();
  const bool allocated = __real_ggml_gallocr_alloc_graph(galloc, graph);
  const std::chrono::duration<double, std::micro> took = std::chrono::steady_clock::now() - start;
  alloc_graph_time.us += took.count();
  ++alloc_graph_time.calls;
  return allocated;
}
}

namespace {

using namespace galloc::dropin_test;

constexpr int kBatch = 128;  // n_ubatch, and the most tokens one llama_decode is given

// One kind of target decode: per token, the milliseconds llama_decode took and the microseconds
// of alloc_graph calls inside it.
struct Timings {
  std::vector<double> decode_ms, alloc_us;
  int alloc_calls = 0;
};

struct Run {
  Timings alone, turns;
  std::size_t peak = 0, larger = 0;
  std::uint64_t logits = 0xcbf29ce484222325ull;
};

llama_context* make_context(llama_model* model, bool shared, std::uint32_t n_ctx, bool reuse) {
  if (!reuse) setenv("LLAMA_GRAPH_REUSE_DISABLE", "1", 1);  // read when the context is made
  llama_context* ctx = make_llama_context(model, context_params(n_ctx, kBatch), shared);
  unsetenv("LLAMA_GRAPH_REUSE_DISABLE");
  if (ctx == nullptr) fail("llama_init_from_model");
  return ctx;
}

struct Decoder {
  llama_context* ctx;
  llama_batch batch = llama_batch_init(kBatch, 0, 1);
  int n_past = 0;
  int next = 0;
  explicit Decoder(llama_context* c) : ctx(c) {}
  ~Decoder() {
    llama_batch_free(batch);
    llama_free(ctx);
  }
  // Decodes `tokens` (at most kBatch); adds the logits to `hash`, and the time taken to
  // `timings` if given.
  void decode(const std::vector<llama_token>& tokens, std::uint64_t& hash, Timings* timings = nullptr) {
    fill_batch(batch, tokens, n_past);
    const AllocGraphTime before = alloc_graph_time;
    const auto start = std::chrono::steady_clock::now();
    if (llama_decode(ctx, batch) != 0) fail("llama_decode");
    const std::chrono::duration<double, std::milli> took = std::chrono::steady_clock::now() - start;
    if (timings != nullptr) {
      timings->decode_ms.push_back(took.count());
      timings->alloc_us.push_back(alloc_graph_time.us - before.us);
      timings->alloc_calls += alloc_graph_time.calls - before.calls;
    }
    n_past += static_cast<int>(tokens.size());
    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(llama_get_model(ctx)));
    const float* logits = llama_get_logits_ith(ctx, -1);
    hash = fnv1a(logits, static_cast<std::size_t>(n_vocab) * sizeof(float), hash);
    next = argmax(logits, n_vocab);
  }
  void read_prompt(const std::vector<llama_token>& prompt, std::uint64_t& hash) {
    for (std::size_t at = 0; at < prompt.size(); at += kBatch) {
      const std::size_t end = std::min(prompt.size(), at + kBatch);
      decode({prompt.begin() + static_cast<std::ptrdiff_t>(at), prompt.begin() + static_cast<std::ptrdiff_t>(end)},
             hash);
    }
  }
};

std::vector<llama_token> prompt_of(int length) {
  std::vector<llama_token> prompt;
  for (int i = 0; i < length; ++i) prompt.push_back(1 + (i * 37) % 997);
  return prompt;
}

// The target reads `prompt_length` tokens and decodes `alone` tokens; the draft reads the
// prompt; they take turns for `turns` tokens each.
Run run(llama_model* model, bool shared, std::uint32_t n_ctx, int prompt_length, int alone, int turns, bool reuse) {
  Run r;
  forget_released();
  memory().peak = memory().live;
  const std::vector<llama_token> prompt = prompt_of(prompt_length);
  {
    Decoder target(make_context(model, shared, n_ctx, reuse));
    target.read_prompt(prompt, r.logits);
    for (int i = 0; i < alone; ++i) target.decode({target.next}, r.logits, &r.alone);
    Decoder draft(make_context(model, shared, n_ctx, reuse));
    std::uint64_t draft_logits = 0;
    draft.read_prompt(prompt, draft_logits);
    for (int i = 0; i < turns; ++i) {
      draft.decode({draft.next}, draft_logits);
      target.decode({target.next}, r.logits, &r.turns);
    }
    r.larger = largest_compute_buffer();
  }
  forget_released();
  r.peak = memory().peak - memory().live;
  return r;
}

double median_ms(const Timings& t) { return galloc::bench::median(t.decode_ms); }
double median_alloc_us(const Timings& t) { return galloc::bench::median(t.alloc_us); }

// One mode's runs, a round each: what print reports is the median of the rounds' medians.
struct Rounds {
  std::vector<double> alone_ms, turns_ms, alone_us, turns_us;
  Run last;
  void add(const Run& r) {
    alone_ms.push_back(median_ms(r.alone));
    turns_ms.push_back(median_ms(r.turns));
    alone_us.push_back(median_alloc_us(r.alone));
    turns_us.push_back(median_alloc_us(r.turns));
    last = r;
  }
};

// The median over the rounds of shared[i] / unshared[i].
double median_ratio(const std::vector<double>& shared, const std::vector<double>& unshared) {
  std::vector<double> ratios;
  for (std::size_t i = 0; i < shared.size() && i < unshared.size(); ++i) ratios.push_back(shared[i] / unshared[i]);
  return galloc::bench::median(ratios);
}

void print(const char* mode, const Rounds& rounds) {
  using galloc::bench::median;
  const Run& r = rounds.last;
  std::printf(
      "%s: %.2f ms per target token alone, %.2f taking turns; alloc_graph %.1f us per target token alone"
      " (%d calls), %.1f taking turns (%d calls); compute peak %zu bytes, larger member %zu; logits %s\n",
      mode, median(rounds.alone_ms), median(rounds.turns_ms), median(rounds.alone_us), r.alone.alloc_calls,
      median(rounds.turns_us), r.turns.alloc_calls, r.peak, r.larger, hex(r.logits).c_str());
}

// The realistic run for peak RSS, in one mode.
int rss_run(llama_model* model, const std::string& mode) {
  if (mode != "unshared" && mode != "shared") fail("the rss run's mode is unshared or shared, not " + mode);
  if (mode == "shared" && !kHasShareGroups) fail("this build has no share groups (stock)");
  const Run r = run(model, mode == "shared", 1024, 512, 0, 64, true);
  std::printf("rss %s: compute peak %zu bytes, larger member %zu; logits %s\n", mode.c_str(), r.peak, r.larger,
              hex(r.logits).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) fail("usage: llama_share_bench MODEL.gguf ROUNDS TOKENS | MODEL.gguf rss unshared|shared");
  llama_model* model = load_llama_model(argv[1]);
  if (std::strcmp(argv[2], "rss") == 0) {
    const int status = rss_run(model, argv[3]);
    llama_model_free(model);
    llama_backend_free();
    return status;
  }
  const int rounds = std::atoi(argv[2]), tokens = std::atoi(argv[3]);
  if (rounds < 1 || tokens < 1) fail("ROUNDS and TOKENS must be at least 1");
  const auto run_mode = [&](bool shared, bool reuse) { return run(model, shared, 512, 32, tokens, tokens, reuse); };
  if (kHasShareGroups) {
    Rounds unshared, shared, unshared_rebuild, shared_rebuild;
    for (int round = 0; round < rounds; ++round) {
      // by turns, each mode first in every other round
      for (const bool reuse : {true, false}) {
        Run u, s;
        if (round % 2 == 0) u = run_mode(false, reuse);
        s = run_mode(true, reuse);
        if (round % 2 == 1) u = run_mode(false, reuse);
        if (u.logits != s.logits) fail("shared and unshared targets computed different logits");
        (reuse ? unshared : unshared_rebuild).add(u);
        (reuse ? shared : shared_rebuild).add(s);
      }
    }
    print("unshared", unshared);
    print("shared", shared);
    print("unshared, graph reuse off", unshared_rebuild);
    print("shared, graph reuse off", shared_rebuild);
    std::printf(
        "ratio shared/unshared per target token: decode alone %.3f, taking turns %.3f; "
        "alloc_graph with graph reuse off alone %.3f, taking turns %.3f (median of %d rounds)\n",
        median_ratio(shared.alone_ms, unshared.alone_ms), median_ratio(shared.turns_ms, unshared.turns_ms),
        median_ratio(shared_rebuild.alone_us, unshared_rebuild.alone_us),
        median_ratio(shared_rebuild.turns_us, unshared_rebuild.turns_us), rounds);
  } else {
    Rounds stock;
    for (int round = 0; round < rounds; ++round) stock.add(run_mode(false, true));
    print("stock", stock);
  }
  llama_model_free(model);
  llama_backend_free();
  return 0;
}
