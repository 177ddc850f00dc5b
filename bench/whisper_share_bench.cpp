// How long ggml_gallocr_alloc_graph takes in real whisper.cpp with and without a shared
// compute buffer (galloc-ggml.h), by turns in one process so that a busy machine slows both
// alike. Each round loads two whisper contexts, one on its own buffers and one with its four
// graphs in one share group, and then, TURNS times, each context in turn (which one first
// alternates) encodes a synthetic signal and decodes a prompt and then tokens one at a time.
// The time of every ggml_gallocr_alloc_graph call comes from -Wl,--wrap=ggml_gallocr_alloc_graph.
// The report gives, per step (encode, the prompt, each token), the median of the mean call time
// over all turns, and the median over the turns of shared / own in the same turn. The logits
// of both must be the same.
//
// TURNS is 1 unless --turns gives it. With --dry the graphs are built and allocated but not
// computed (-Wl,--wrap=ggml_backend_sched_graph_compute), so that only the allocator's time is
// left and many turns take seconds (no logits are compared then); --dry N is --dry --turns N,
// and --dry alone gives 20 turns.
//
// With --only own or --only shared, only contexts of that kind run (no ratio then): for
// counting instructions with callgrind, where the two kinds would mix in one count.
//
//   whisper_share_bench MODEL test|tiny|base|small [ROUNDS] [TOKENS] [--dry [TURNS]] [--turns TURNS]
//                       [--only own|shared]
//
// Linked against libggml-galloc.a only (GALLOC_STRATEGY applies, best by default here).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "ggml-alloc.h"
#include "ggml.h"
#include "test_support.hpp"
#include "whisper.h"
#include "whisper_model.hpp"

extern "C" {
bool __real_ggml_gallocr_alloc_graph(ggml_gallocr_t galloc, struct ggml_cgraph* graph);
enum ggml_status __real_ggml_backend_sched_graph_compute(ggml_backend_sched_t sched, struct ggml_cgraph* graph);
bool galloc_ggml_share_begin(const char* name);
bool galloc_ggml_share_end(void);
}

namespace {

using namespace galloc::dropin_test;

// Where the calls of the current step go: total microseconds and count, per step label.
struct Timing {
  std::string step;
  bool dry = false;  // --dry: graphs are not computed
  std::map<std::string, std::pair<double, int>> per_step;
};
Timing& timing() {
  static Timing t;
  return t;
}

whisper_context* load(const std::string& path, bool share, const std::vector<float>& pcm) {
  whisper_context_params cp = whisper_context_default_params();
  cp.use_gpu = false;
  if (share && !galloc_ggml_share_begin("bench")) fail("galloc_ggml_share_begin");
  whisper_context* ctx = whisper_init_from_file_with_params(path.c_str(), cp);
  if (share && !galloc_ggml_share_end()) fail("galloc_ggml_share_end");
  if (ctx == nullptr) fail("cannot load " + path);
  if (whisper_pcm_to_mel(ctx, pcm.data(), static_cast<int>(pcm.size()), 1) != 0) fail("whisper_pcm_to_mel");
  return ctx;
}

// One turn of a context: encode, the prompt, then `tokens` tokens. Returns the mean
// alloc_graph time per step, and appends the logits' hash of every decode step to `hashes`.
std::map<std::string, double> take_turn(whisper_context* ctx, const WhisperDims& dims, int tokens,
                                        std::vector<std::string>& hashes) {
  timing().per_step.clear();
  timing().step = "encode";
  if (whisper_encode(ctx, 0, 1) != 0) fail("whisper_encode");
  std::vector<whisper_token> prompt = {1, 17, 33, 5};
  timing().step = "decode_prompt";
  if (whisper_decode(ctx, prompt.data(), static_cast<int>(prompt.size()), 0, 1) != 0) fail("whisper_decode");
  int n_past = static_cast<int>(prompt.size());
  const float* logits = whisper_get_logits(ctx) + static_cast<size_t>(prompt.size() - 1) * dims.vocab;
  whisper_token next = timing().dry ? 0 : argmax(logits, dims.vocab);
  if (!timing().dry) hashes.push_back(hex(fnv1a(logits, static_cast<size_t>(dims.vocab) * sizeof(float))));
  timing().step = "decode_token";
  for (int i = 0; i < tokens; ++i) {
    if (whisper_decode(ctx, &next, 1, n_past++, 1) != 0) fail("whisper_decode");
    if (timing().dry) continue;
    logits = whisper_get_logits(ctx);
    hashes.push_back(hex(fnv1a(logits, static_cast<size_t>(dims.vocab) * sizeof(float))));
    next = argmax(logits, dims.vocab);
  }
  std::map<std::string, double> mean;
  for (const auto& [step, total] : timing().per_step) mean[step] = total.first / total.second;
  return mean;
}

std::string fixed1(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", value);
  return text;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

}  // namespace

extern "C" bool __wrap_ggml_gallocr_alloc_graph(ggml_gallocr_t galloc, struct ggml_cgraph* graph) {
  const auto t0 = std::chrono::steady_clock::now();
  const bool ok = __real_ggml_gallocr_alloc_graph(galloc, graph);
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  auto& [total, count] = timing().per_step[timing().step];
  total += us;
  ++count;
  return ok;
}

extern "C" enum ggml_status __wrap_ggml_backend_sched_graph_compute(ggml_backend_sched_t sched,
                                                                    struct ggml_cgraph* graph) {
  if (timing().dry) return GGML_STATUS_SUCCESS;
  return __real_ggml_backend_sched_graph_compute(sched, graph);
}

int main(int argc, char** argv) {
  const char* usage =
      "usage: whisper_share_bench MODEL test|tiny|base|small [ROUNDS] [TOKENS] [--dry [TURNS]] [--turns TURNS] "
      "[--only own|shared]";
  if (argc < 3) fail(usage);
  const std::string path = argv[1], size = argv[2];
  WhisperDims dims{};
  if (!whisper_dims_named(size, dims)) fail("unknown size " + size + " (test, tiny, base or small)");
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 5;
  const int tokens = argc > 4 ? std::atoi(argv[4]) : 16;
  int turns = -1;    // not given: 20 with --dry, else 1
  std::string only;  // --only: one kind of context, for counting instructions (callgrind)
  for (int i = 5; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--dry") {
      timing().dry = true;
      if (i + 1 < argc && argv[i + 1][0] != '-') turns = std::atoi(argv[++i]);
    } else if (arg == "--turns" && i + 1 < argc) {
      turns = std::atoi(argv[++i]);
    } else if (arg == "--only" && i + 1 < argc &&
               (std::string(argv[i + 1]) == "own" || std::string(argv[i + 1]) == "shared")) {
      only = argv[++i];
    } else {
      fail(usage);
    }
  }
  if (turns == -1) turns = timing().dry ? 20 : 1;
  if (rounds < 1 || tokens < 1 || turns < 1) fail("ROUNDS, TOKENS and TURNS must be positive");
  if (std::getenv("GALLOC_STRATEGY") == nullptr) setenv("GALLOC_STRATEGY", "best", 1);
  whisper_log_set(
      [](ggml_log_level level, const char* text, void*) {
        if (level >= GGML_LOG_LEVEL_ERROR) std::fputs(text, stderr);
      },
      nullptr);
  write_whisper_model(path, dims);
  const std::vector<float> pcm = synthetic_pcm(4 * WHISPER_SAMPLE_RATE);

  std::map<std::string, std::vector<double>> own, shared, ratio;
  for (int round = 0; round < rounds; ++round) {
    std::vector<std::string> own_hashes, shared_hashes;
    whisper_context* own_ctx = only == "shared" ? nullptr : load(path, false, pcm);
    whisper_context* shared_ctx = only == "own" ? nullptr : load(path, true, pcm);
    for (int turn = 0; turn < turns; ++turn) {
      // which goes first alternates, so that neither always runs on a warmer or colder machine
      std::map<std::string, double> mine, ours;
      const bool shared_first = (round + turn) % 2 == 1;
      for (const bool share : {shared_first, !shared_first}) {
        whisper_context* ctx = share ? shared_ctx : own_ctx;
        if (ctx != nullptr) (share ? ours : mine) = take_turn(ctx, dims, tokens, share ? shared_hashes : own_hashes);
      }
      for (const auto& [step, us] : mine) own[step].push_back(us);
      for (const auto& [step, us] : ours) {
        shared[step].push_back(us);
        if (mine.count(step) != 0) ratio[step].push_back(us / mine[step]);
      }
    }
    if (own_ctx != nullptr) whisper_free(own_ctx);
    if (shared_ctx != nullptr) whisper_free(shared_ctx);
    if (only.empty() && own_hashes != shared_hashes) fail("the shared run decoded other logits than the unshared one");
  }
  std::printf("whisper %s%s, ggml_gallocr_alloc_graph per call, median of %d rounds x %d turns (us):\n", size.c_str(),
              timing().dry ? " (not computed)" : "", rounds, turns);
  std::printf("%-14s %10s %10s %8s\n", "step", "own", "shared", "ratio");
  for (const auto& [step, times] : only == "shared" ? shared : own) {
    auto column = [&](const std::map<std::string, std::vector<double>>& kind) {
      return kind.count(step) == 0 ? std::string("-") : fixed1(median(kind.at(step)));
    };
    char ratio_text[32] = "-";
    if (ratio.count(step) != 0) std::snprintf(ratio_text, sizeof ratio_text, "%.3f", median(ratio[step]));
    std::printf("%-14s %10s %10s %8s\n", step.c_str(), column(own).c_str(), column(shared).c_str(), ratio_text);
  }
  std::printf("done\n");
  return 0;
}
