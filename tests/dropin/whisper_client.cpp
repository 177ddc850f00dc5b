// The second real client: whisper.cpp (from whisper.rn's sources) encoding a synthetic signal
// with a tiny whisper model of random weights and decoding a few tokens, linked once against
// stock ggml and once against galloc's drop-in. The model comes from whisper_model.hpp.
// Reports in the format of dropin_graphs.cpp (see
// compare.cmake): the result of every graph whisper.cpp computes (mel -> conv -> encoder ->
// cross-attention K/V -> decoder) must be bit-identical, the compute buffers no larger.
//
// Linked with -Wl,--wrap= for ggml_backend_sched_graph_compute (to hash each graph's results
// right after it ran), ggml_backend_sched_get_buffer_size (whisper.cpp logs its compute
// buffers only in MB with two decimals: the exact bytes come from here, labelled by the log
// line that follows), ggml_backend_alloc_ctx_tensors{,_from_buft} (model and KV buffers), and
// ggml_backend_buft_alloc_buffer and ggml_backend_buffer_free: every other buffer is a compute
// buffer, so their live bytes are the compute memory the process really holds (its peak is
// what sharing, GALLOC_SHARE=1, must bring down to the largest graph's need).
//
// Built with GALLOC_TEST_RPC, where $GALLOC_TEST_RPC_SERVERS names an RPC server
// (tests/rpc/with_rpc_servers.sh), whisper.cpp runs on it as its GPU backend.
//
// With "share" as the third argument the run opens a share group around each context
// (galloc-ggml.h), so the four graphs of its state share one compute buffer. With "reserve"
// it only creates the contexts, which reserves the four graphs (bench/graphs/capture-whisper.sh).
#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml.h"
#include "test_support.hpp"
#include "whisper.h"
#include "whisper_model.hpp"
#ifdef GALLOC_TEST_RPC
#include "ggml-rpc.h"
#endif

extern "C" {
enum ggml_status __real_ggml_backend_sched_graph_compute(ggml_backend_sched_t sched, struct ggml_cgraph* graph);
size_t __real_ggml_backend_sched_get_buffer_size(ggml_backend_sched_t sched, ggml_backend_t backend);
ggml_backend_buffer_t __real_ggml_backend_alloc_ctx_tensors(struct ggml_context* ctx, ggml_backend_t backend);
ggml_backend_buffer_t __real_ggml_backend_alloc_ctx_tensors_from_buft(struct ggml_context* ctx,
                                                                      ggml_backend_buffer_type_t buft);
ggml_backend_buffer_t __real_ggml_backend_buft_alloc_buffer(ggml_backend_buffer_type_t buft, size_t size);
void __real_ggml_backend_buffer_free(ggml_backend_buffer_t buffer);
// galloc-ggml.h's, defined by the drop-in only: weak, so that the stock build links.
__attribute__((weak)) bool galloc_ggml_share_begin(const char* name);
__attribute__((weak)) bool galloc_ggml_share_end(void);
}

namespace {

using namespace galloc::dropin_test;

WhisperDims g_dims = kWhisperTestDims;
constexpr int kThreads = 1;  // ggml's threads spin at barriers: slow on a busy 2-core machine

// --------------------------------------------------------------------------- what ggml saw
struct Capture {
  std::string label;           // "<config>.<step>", set before each whisper call
  int graph_index = 0;         // graphs computed within the current step
  size_t pending_compute = 0;  // sched buffer sizes read since the last "compute buffer" log line
  int compute_lines = 0;
  int ctx_buffers = 0;
  std::vector<std::string> lines;  // report lines, printed in order
  // compute buffers: those allocated outside ggml_backend_alloc_ctx_tensors*, with their sizes
  int in_ctx_alloc = 0;
  std::unordered_map<ggml_backend_buffer_t, size_t> compute_buffers;
  size_t compute_live = 0;
  size_t compute_peak = 0;
};

Capture& capture() {
  static Capture c;
  return c;
}

void begin_step(const std::string& label) {
  capture().label = label;
  capture().graph_index = 0;
}

// The results of a graph: the nodes no other node reads (the encoder's embd_enc, the K/V
// copies into the caches, the logits). ggml-alloc never frees those, so after the compute
// they hold what the graph produced; everything else may have been overwritten.
std::uint64_t hash_graph_results(ggml_cgraph* graph, int* n_results) {
  const int n = ggml_graph_n_nodes(graph);
  std::unordered_set<const ggml_tensor*> read;
  for (int i = 0; i < n; ++i) {
    const ggml_tensor* node = ggml_graph_node(graph, i);
    for (int s = 0; s < GGML_MAX_SRC; ++s) {
      if (node->src[s] != nullptr) read.insert(node->src[s]);
    }
  }
  std::uint64_t h = 0xcbf29ce484222325ull;
  std::vector<unsigned char> bytes;
  *n_results = 0;
  for (int i = 0; i < n; ++i) {
    ggml_tensor* node = ggml_graph_node(graph, i);
    if (read.count(node) != 0) continue;
    bytes.resize(ggml_nbytes(node));
    ggml_backend_tensor_get(node, bytes.data(), 0, bytes.size());
    if (node->type == GGML_TYPE_F32) {
      const auto* f = reinterpret_cast<const float*>(bytes.data());
      for (size_t k = 0; k < bytes.size() / sizeof(float); ++k) {
        if (!std::isfinite(f[k])) fail(capture().label + ": non-finite value in " + ggml_get_name(node));
      }
    }
    h = fnv1a(bytes.data(), bytes.size(), h);
    ++*n_results;
  }
  return h;
}

void log_to_capture(ggml_log_level level, const char* text, void*) {
  if (level >= GGML_LOG_LEVEL_ERROR) std::fputs(text, stderr);
  // "whisper_init_state: compute buffer (encode) =    1.23 MB"
  const char* p = std::strstr(text, "compute buffer (");
  if (p == nullptr) return;
  p += std::strlen("compute buffer (");
  const char* q = std::strchr(p, ')');
  if (q == nullptr) return;
  Capture& c = capture();
  c.lines.push_back("size whisper." + c.label + ".compute_" + std::string(p, q) + " " +
                    std::to_string(c.pending_compute));
  c.pending_compute = 0;
  ++c.compute_lines;
}

void record_ctx_buffer(ggml_backend_buffer_t buffer) {
  Capture& c = capture();
  const size_t size = buffer != nullptr ? ggml_backend_buffer_get_size(buffer) : 0;
  c.lines.push_back("size whisper." + c.label + ".ctx_buffer" + std::to_string(c.ctx_buffers++) + " " +
                    std::to_string(size));
}

void flush_lines() {
  for (const std::string& line : capture().lines) std::printf("%s\n", line.c_str());
  capture().lines.clear();
}

// A shared compute buffer that grew released its old memory but keeps the old handle, emptied
// (size 0), until its arena goes (the drop-in's shared arenas): that memory is no longer held.
void forget_released() {
  Capture& c = capture();
  for (auto it = c.compute_buffers.begin(); it != c.compute_buffers.end();) {
    if (it->second == 0 || ggml_backend_buffer_get_size(it->first) != 0) {
      ++it;
      continue;
    }
    c.compute_live -= it->second;
    it = c.compute_buffers.erase(it);
  }
}

// --------------------------------------------------------------------------- the run
bool g_share = false;
bool g_use_gpu = false;       // an RPC server registered as the GPU backend
bool g_reserve_only = false;  // stop after whisper_init: the four graphs are reserved, none run

void run(const std::string& path, const std::string& config, bool flash_attn, const std::vector<float>& pcm) {
  Capture& c = capture();
  c.compute_lines = 0;
  c.ctx_buffers = 0;
  c.compute_peak = c.compute_live;
  begin_step(config);
  whisper_context_params cp = whisper_context_default_params();
  cp.use_gpu = g_use_gpu;
  cp.flash_attn = flash_attn;
  if (g_share && !galloc_ggml_share_begin(("whisper." + config).c_str())) fail("galloc_ggml_share_begin");
  whisper_context* ctx = whisper_init_from_file_with_params(path.c_str(), cp);
  if (g_share && !galloc_ggml_share_end()) fail("galloc_ggml_share_end");
  if (ctx == nullptr) fail("cannot load " + path);
  if (c.compute_lines != 4) fail("expected 4 compute buffer log lines, saw " + std::to_string(c.compute_lines));
  flush_lines();
  if (g_reserve_only) {
    whisper_free(ctx);
    return;
  }

  if (whisper_pcm_to_mel(ctx, pcm.data(), static_cast<int>(pcm.size()), kThreads) != 0) fail("whisper_pcm_to_mel");
  std::printf("info whisper.%s.mel_frames %d\n", config.c_str(), whisper_n_len(ctx));
  begin_step(config + ".encode");
  if (whisper_encode(ctx, 0, kThreads) != 0) fail("whisper_encode");
  if (c.graph_index != 3)
    fail("expected 3 graphs (conv, encoder, cross) in whisper_encode, saw " + std::to_string(c.graph_index));
  flush_lines();

  // a 4-token prompt, then two tokens one at a time (greedy)
  std::vector<whisper_token> tokens = {1, 17, 33, 5};
  int n_past = 0;
  for (int step = 0; step < 3; ++step) {
    begin_step(config + ".decode" + std::to_string(step));
    if (whisper_decode(ctx, tokens.data(), static_cast<int>(tokens.size()), n_past, kThreads) != 0)
      fail("whisper_decode");
    flush_lines();
    const int n_vocab = g_dims.vocab;
    const float* logits = whisper_get_logits(ctx) + static_cast<size_t>(tokens.size() - 1) * n_vocab;
    for (int i = 0; i < n_vocab; ++i) {
      if (!std::isfinite(logits[i])) fail("non-finite logits");
    }
    std::printf("exact whisper.%s.decode%d.logits %s\n", config.c_str(), step,
                hex(fnv1a(logits, static_cast<size_t>(n_vocab) * sizeof(float))).c_str());
    n_past += static_cast<int>(tokens.size());
    tokens = {argmax(logits, n_vocab)};
  }
  whisper_free(ctx);
  forget_released();
  // galloc's `best` may hold less than stock: these are `size` lines, compared as such
  std::printf("size whisper.%s.compute_allocated_peak %zu\n", config.c_str(), c.compute_peak);
  if (c.compute_live != 0) fail(std::to_string(c.compute_live) + " bytes of compute buffers left after whisper_free");
}

}  // namespace

extern "C" {

enum ggml_status __wrap_ggml_backend_sched_graph_compute(ggml_backend_sched_t sched, struct ggml_cgraph* graph) {
  const enum ggml_status status = __real_ggml_backend_sched_graph_compute(sched, graph);
  if (status == GGML_STATUS_SUCCESS) {
    Capture& c = capture();
    int n_results = 0;
    const std::uint64_t h = hash_graph_results(graph, &n_results);
    const std::string key = "whisper." + c.label + ".graph" + std::to_string(c.graph_index++);
    c.lines.push_back("exact " + key + ".results " + std::to_string(n_results) + " " + hex(h));
    c.lines.push_back("exact " + key + ".nodes " + std::to_string(ggml_graph_n_nodes(graph)));
    // the scheduler's buffer as this graph used it: a re-reserve on the way shows here
    size_t size = 0;
    for (int i = 0; i < ggml_backend_sched_get_n_backends(sched); ++i) {
      size += __real_ggml_backend_sched_get_buffer_size(sched, ggml_backend_sched_get_backend(sched, i));
    }
    c.lines.push_back("size " + key + ".buffer " + std::to_string(size));
  }
  return status;
}

size_t __wrap_ggml_backend_sched_get_buffer_size(ggml_backend_sched_t sched, ggml_backend_t backend) {
  const size_t size = __real_ggml_backend_sched_get_buffer_size(sched, backend);
  capture().pending_compute += size;
  return size;
}

ggml_backend_buffer_t __wrap_ggml_backend_alloc_ctx_tensors(struct ggml_context* ctx, ggml_backend_t backend) {
  ++capture().in_ctx_alloc;
  ggml_backend_buffer_t buffer = __real_ggml_backend_alloc_ctx_tensors(ctx, backend);
  --capture().in_ctx_alloc;
  record_ctx_buffer(buffer);
  return buffer;
}

ggml_backend_buffer_t __wrap_ggml_backend_alloc_ctx_tensors_from_buft(struct ggml_context* ctx,
                                                                      ggml_backend_buffer_type_t buft) {
  ++capture().in_ctx_alloc;
  ggml_backend_buffer_t buffer = __real_ggml_backend_alloc_ctx_tensors_from_buft(ctx, buft);
  --capture().in_ctx_alloc;
  record_ctx_buffer(buffer);
  return buffer;
}

ggml_backend_buffer_t __wrap_ggml_backend_buft_alloc_buffer(ggml_backend_buffer_type_t buft, size_t size) {
  forget_released();
  ggml_backend_buffer_t buffer = __real_ggml_backend_buft_alloc_buffer(buft, size);
  Capture& c = capture();
  if (buffer != nullptr && c.in_ctx_alloc == 0) {
    c.compute_buffers[buffer] = size;
    c.compute_live += size;
    c.compute_peak = std::max(c.compute_peak, c.compute_live);
  }
  return buffer;
}

void __wrap_ggml_backend_buffer_free(ggml_backend_buffer_t buffer) {
  Capture& c = capture();
  if (auto it = c.compute_buffers.find(buffer); it != c.compute_buffers.end()) {
    c.compute_live -= it->second;
    c.compute_buffers.erase(it);
  }
  __real_ggml_backend_buffer_free(buffer);
}

}  // extern "C"

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : "tiny-whisper.bin";
  const std::string size = argc > 2 ? argv[2] : "";
  if (!size.empty() && !whisper_dims_named(size, g_dims))
    fail("unknown size " + size + " (test, tiny, base, small or large-v3)");
  g_share = argc > 3 && std::string(argv[3]) == "share";
  g_reserve_only = argc > 3 && std::string(argv[3]) == "reserve";
  if (g_share && galloc_ggml_share_begin == nullptr) fail("share: this build has no galloc drop-in");
  whisper_log_set(log_to_capture, nullptr);
#ifdef GALLOC_TEST_RPC
  if (const char* servers = std::getenv("GALLOC_TEST_RPC_SERVERS")) {
    const std::string first = std::string(servers).substr(0, std::string(servers).find(','));
    ggml_backend_reg_t reg = ggml_backend_rpc_add_server(first.c_str());
    if (reg == nullptr || ggml_backend_reg_dev_count(reg) == 0) fail("no RPC device at " + first);
    ggml_backend_register(reg);
    g_use_gpu = true;
  }
#endif
  write_whisper_model(path, g_dims);
  // 4 s of signal (the test model's whole audio context)
  const std::vector<float> pcm = synthetic_pcm(4 * WHISPER_SAMPLE_RATE);
  run(path, "attn", false, pcm);
  run(path, "flash_attn", true, pcm);
  std::printf("done\n");
  return 0;
}
