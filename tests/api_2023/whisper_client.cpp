// whisper.cpp as whisper.rn 0.4.0-rc.8 vendors it (late-2023 ggml: the ggml_allocr API with
// measure allocators, no ggml_backend_sched), linked once against stock ggml and once against
// galloc's drop-in. A random-weight model at whisper's real tiny or base dimensions (F16
// matrices, vocabulary 51864 so that the special tokens exist; whisper_model.hpp), encodes a synthetic signal and
// decodes a 4-token prompt and two single tokens. Reports in the format of tests/dropin/dropin_graphs.cpp (see
// compare.cmake): the results of every graph (conv, encoder, cross-attention K/V, decoder) and
// the logits must be bit-identical, the buffers no larger.
//
// Linked with -Wl,--wrap= for ggml_backend_graph_compute (to hash each graph's results right
// after it ran), ggml_allocr_max_size (whisper.cpp logs its compute buffers only in MB with two
// decimals; whisper_allocr_size reads the exact bytes from here right before each log line;
// reported without the heap-address-dependent padding of stock's measure allocator) and
// ggml_allocr_new_from_buffer (whisper.cpp sizes the model and KV buffers itself and hands each
// to an allocator for its tensors: the buffers' sizes come from here, labelled by the log line
// that follows).
//
// usage: whisper_client MODEL_PATH tiny|base   (MODEL_PATH is written, loaded and removed)
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_set>
#include <vector>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml.h"
#include "test_support.hpp"
#include "whisper.h"
#include "whisper_model.hpp"

extern "C" {
bool __real_ggml_backend_graph_compute(ggml_backend_t backend, struct ggml_cgraph* cgraph);
size_t __real_ggml_allocr_max_size(ggml_allocr_t alloc);
ggml_allocr_t __real_ggml_allocr_new_from_buffer(struct ggml_backend_buffer* buffer);
}

namespace {

using namespace galloc::dropin_test;

// OpenAI's tiny and base
struct Dims {
  const char* name;
  WhisperDims model;
};
constexpr int kVocab = 51864, kAudioCtx = 1500;
constexpr Dims kTiny{"tiny", {kVocab, kAudioCtx, 384, 6, 4, 448, 384, 6, 4, 80}};
constexpr Dims kBase{"base", {kVocab, kAudioCtx, 512, 8, 6, 448, 512, 8, 6, 80}};
constexpr int kThreads = 1;      // ggml's threads spin at barriers: slow on a busy 2-core machine
constexpr int kMaxNodes = 4096;  // whisper.cpp's WHISPER_MAX_NODES: its graph metadata, part of the logged size

// --------------------------------------------------------------------------- what ggml saw
struct Capture {
  std::string label;                  // "<size>.<step>", set before each whisper call
  int graph_index = 0;                // graphs computed within the current step
  size_t last_max_size = 0;           // the last ggml_allocr_max_size whisper.cpp read
  int compute_lines = 0;              // "compute buffer (...)" log lines seen
  std::vector<size_t> given_buffers;  // sizes handed to ggml_allocr_new_from_buffer since the last label
  std::vector<std::string> lines;     // report lines, printed in order
};

Capture& capture() {
  static Capture c;
  return c;
}

void begin_step(const std::string& label) {
  capture().label = label;
  capture().graph_index = 0;
}

// The bytes of a tensor's elements, row by row: a view's span may hold memory that no graph
// wrote (the self-attention V view strides over KV cells this version of whisper.cpp never
// clears), which must not reach the hash. Fails on a non-finite F32 or F16 value.
std::vector<unsigned char> element_bytes(const ggml_tensor* t) {
  std::vector<unsigned char> span(ggml_nbytes(t));
  ggml_backend_tensor_get(t, span.data(), 0, span.size());
  const size_t type_size = ggml_type_size(t->type);
  const bool rows_contiguous = t->nb[0] == type_size || ggml_blck_size(t->type) != 1;
  const size_t row = ggml_row_size(t->type, t->ne[0]);
  std::vector<unsigned char> out;
  out.reserve(row * static_cast<size_t>(t->ne[1] * t->ne[2] * t->ne[3]));
  for (int64_t i3 = 0; i3 < t->ne[3]; ++i3) {
    for (int64_t i2 = 0; i2 < t->ne[2]; ++i2) {
      for (int64_t i1 = 0; i1 < t->ne[1]; ++i1) {
        const unsigned char* base = span.data() + i1 * t->nb[1] + i2 * t->nb[2] + i3 * t->nb[3];
        if (rows_contiguous) {
          out.insert(out.end(), base, base + row);
        } else {
          for (int64_t i0 = 0; i0 < t->ne[0]; ++i0) {
            out.insert(out.end(), base + i0 * t->nb[0], base + i0 * t->nb[0] + type_size);
          }
        }
      }
    }
  }
  bool finite = true;
  if (t->type == GGML_TYPE_F32) {
    const auto* f = reinterpret_cast<const float*>(out.data());
    for (size_t k = 0; k < out.size() / sizeof(float); ++k) finite = finite && std::isfinite(f[k]);
  } else if (t->type == GGML_TYPE_F16) {
    const auto* h = reinterpret_cast<const ggml_fp16_t*>(out.data());
    for (size_t k = 0; k < out.size() / sizeof(ggml_fp16_t); ++k)
      finite = finite && std::isfinite(ggml_fp16_to_fp32(h[k]));
  }
  if (!finite) fail(capture().label + ": non-finite value in " + ggml_get_name(t));
  return out;
}

// The results of a graph: the nodes no other node reads (the conv output, embd_enc, the K/V
// copies into the caches, the logits). ggml-alloc never frees those, so after the compute they
// hold what the graph produced; everything else may have been overwritten.
std::uint64_t hash_graph_results(const ggml_cgraph* graph, int* n_results) {
  std::unordered_set<const ggml_tensor*> read;
  for (int i = 0; i < graph->n_nodes; ++i) {
    for (const ggml_tensor* src : graph->nodes[i]->src) {
      if (src != nullptr) read.insert(src);
    }
  }
  std::uint64_t h = 0xcbf29ce484222325ull;
  *n_results = 0;
  for (int i = 0; i < graph->n_nodes; ++i) {
    const ggml_tensor* node = graph->nodes[i];
    if (read.count(node) != 0) continue;
    const std::vector<unsigned char> bytes = element_bytes(node);
    h = fnv1a(bytes.data(), bytes.size(), h);
    ++*n_results;
  }
  return h;
}

// The model and KV buffers whisper.cpp handed to allocators since the last label, reported
// under `what` (the log line that follows each: "model size", "kv self size", "kv cross size").
void report_given_buffers(const std::string& what) {
  Capture& c = capture();
  if (c.given_buffers.empty()) fail("no buffer handed to ggml_allocr_new_from_buffer before the " + what + " log line");
  size_t total = 0;
  for (size_t size : c.given_buffers) total += size;
  c.lines.push_back("size whisper." + c.label + "." + what + "_buffer " + std::to_string(total));
  c.lines.push_back("exact whisper." + c.label + "." + what + "_buffer_count " +
                    std::to_string(c.given_buffers.size()));
  c.given_buffers.clear();
}

void log_to_capture(ggml_log_level level, const char* text, void*) {
  if (level <= GGML_LOG_LEVEL_WARN) std::fputs(text, stderr);  // ERROR is 2, WARN 3 in this ggml
  const char* p = nullptr;
  if (std::strstr(text, "model size ") != nullptr) {
    report_given_buffers("model");
  } else if (std::strstr(text, "kv self size ") != nullptr) {
    report_given_buffers("kv_self");
  } else if (std::strstr(text, "kv cross size ") != nullptr) {
    report_given_buffers("kv_cross");
  } else {
    // "whisper_init_state: compute buffer (encode) =   12.34 MB", right after whisper_allocr_size
    // read ggml_allocr_max_size
    p = std::strstr(text, "compute buffer (");
  }
  if (p == nullptr) return;
  p += std::strlen("compute buffer (");
  const char* q = std::strchr(p, ')');
  const char* eq = std::strchr(p, '=');
  if (q == nullptr || eq == nullptr) fail(std::string("unexpected log line: ") + text);
  Capture& c = capture();
  const std::string name(p, q);
  // the logged MB include the graph metadata; a mismatch means the wrap read another allocator
  const size_t meta = ggml_tensor_overhead() * kMaxNodes + ggml_graph_overhead();
  const double logged_mb = std::strtod(eq + 1, nullptr), mb = static_cast<double>(meta + c.last_max_size) / 1e6;
  if (std::fabs(logged_mb - mb) > 0.0051) {
    fail("compute buffer (" + name + "): logged " + std::to_string(logged_mb) +
         " MB, but the last ggml_allocr_max_size was " + std::to_string(c.last_max_size) + " bytes (" +
         std::to_string(mb) + " MB with the metadata)");
  }
  // Stock's measure allocator starts at its 1-byte buffer's malloc address rounded up to the
  // alignment, and counts that padding in its size: 0 to alignment - 1 bytes that change from run
  // to run with the heap. Its plan itself is a multiple of the alignment, so rounding down drops
  // exactly the padding (the real buffer's own padding is in the 64 bytes the CPU buffer adds).
  const size_t alignment = ggml_backend_buft_get_alignment(ggml_backend_cpu_buffer_type());
  c.lines.push_back("size whisper." + c.label + ".compute_" + name + " " +
                    std::to_string(c.last_max_size / alignment * alignment));
  c.lines.push_back("info whisper." + c.label + ".compute_" + name + "_as_read " + std::to_string(c.last_max_size));
  c.last_max_size = 0;
  ++c.compute_lines;
}

void flush_lines() {
  for (const std::string& line : capture().lines) std::printf("%s\n", line.c_str());
  capture().lines.clear();
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// --------------------------------------------------------------------------- the run
void run(const std::string& path, const Dims& dims) {
  const std::string config = dims.name;
  Capture& c = capture();
  auto start = std::chrono::steady_clock::now();
  write_whisper_model(path, dims.model);
  std::printf("info whisper.%s.write_seconds %.2f\n", config.c_str(), seconds_since(start));

  start = std::chrono::steady_clock::now();
  begin_step(config);
  whisper_context_params cp = whisper_context_default_params();
  cp.use_gpu = false;
  whisper_context* ctx = whisper_init_from_file_with_params(path.c_str(), cp);
  if (ctx == nullptr) fail("cannot load " + path);
  std::remove(path.c_str());  // 76 MB (tiny) or 145 MB (base), rewritten on every run
  if (c.compute_lines != 4) fail("expected 4 compute buffer log lines, saw " + std::to_string(c.compute_lines));
  // after the logs, whisper_allocr_graph_realloc gives each compute graph its buffer
  if (c.given_buffers.size() != 4)
    fail("expected 4 compute buffers after the logs, saw " + std::to_string(c.given_buffers.size()));
  c.given_buffers.clear();
  flush_lines();
  if (whisper_model_n_vocab(ctx) != kVocab || whisper_model_n_audio_state(ctx) != dims.model.audio_state)
    fail("the model loaded with other dimensions");
  std::printf("info whisper.%s.init_seconds %.2f\n", config.c_str(), seconds_since(start));

  start = std::chrono::steady_clock::now();
  const std::vector<float> pcm = synthetic_pcm(4 * WHISPER_SAMPLE_RATE);
  if (whisper_pcm_to_mel(ctx, pcm.data(), static_cast<int>(pcm.size()), kThreads) != 0) fail("whisper_pcm_to_mel");
  begin_step(config + ".encode");
  if (whisper_encode(ctx, 0, kThreads) != 0) fail("whisper_encode");
  if (c.graph_index != 3)
    fail("expected 3 graphs (conv, encoder, cross) in whisper_encode, saw " + std::to_string(c.graph_index));
  flush_lines();
  std::printf("info whisper.%s.encode_seconds %.2f\n", config.c_str(), seconds_since(start));

  // start of transcript, transcribe, no timestamps, a word; then two tokens one at a time (greedy)
  start = std::chrono::steady_clock::now();
  std::vector<whisper_token> tokens = {whisper_token_sot(ctx), whisper_token_transcribe(ctx), whisper_token_not(ctx),
                                       440};
  int n_past = 0;
  for (int step = 0; step < 3; ++step) {
    begin_step(config + ".decode" + std::to_string(step));
    if (whisper_decode(ctx, tokens.data(), static_cast<int>(tokens.size()), n_past, kThreads) != 0)
      fail("whisper_decode");
    if (c.graph_index != 1) fail("expected 1 graph in whisper_decode, saw " + std::to_string(c.graph_index));
    flush_lines();
    // whisper.cpp keeps the last token's logits, at that token's row
    const float* logits = whisper_get_logits(ctx) + static_cast<size_t>(tokens.size() - 1) * kVocab;
    for (int i = 0; i < kVocab; ++i) {
      if (!std::isfinite(logits[i])) fail("non-finite logits");
    }
    std::printf("exact whisper.%s.decode%d.logits %s\n", config.c_str(), step,
                hex(fnv1a(logits, kVocab * sizeof(float))).c_str());
    n_past += static_cast<int>(tokens.size());
    tokens = {argmax(logits, kVocab)};
    std::printf("exact whisper.%s.decode%d.next_token %d\n", config.c_str(), step, tokens[0]);
  }
  std::printf("info whisper.%s.decode_seconds %.2f\n", config.c_str(), seconds_since(start));
  whisper_free(ctx);
}

}  // namespace

extern "C" {

bool __wrap_ggml_backend_graph_compute(ggml_backend_t backend, struct ggml_cgraph* cgraph) {
  const bool ok = __real_ggml_backend_graph_compute(backend, cgraph);
  if (ok) {
    Capture& c = capture();
    int n_results = 0;
    const std::uint64_t h = hash_graph_results(cgraph, &n_results);
    const std::string key = "whisper." + c.label + ".graph" + std::to_string(c.graph_index++);
    c.lines.push_back("exact " + key + ".results " + std::to_string(n_results) + " " + hex(h));
    c.lines.push_back("exact " + key + ".nodes " + std::to_string(cgraph->n_nodes));
  }
  return ok;
}

size_t __wrap_ggml_allocr_max_size(ggml_allocr_t alloc) {
  const size_t size = __real_ggml_allocr_max_size(alloc);
  capture().last_max_size = size;
  return size;
}

ggml_allocr_t __wrap_ggml_allocr_new_from_buffer(struct ggml_backend_buffer* buffer) {
  capture().given_buffers.push_back(ggml_backend_buffer_get_size(buffer));
  return __real_ggml_allocr_new_from_buffer(buffer);
}

}  // extern "C"

int main(int argc, char** argv) {
  const std::string size = argc > 2 ? argv[2] : "";
  if (argc != 3 || (size != "tiny" && size != "base")) {
    std::fprintf(stderr, "usage: %s MODEL_PATH tiny|base\n", argv[0]);
    return 2;
  }
  whisper_log_set(log_to_capture, nullptr);
  run(argv[1], size == "tiny" ? kTiny : kBase);
  std::printf("done\n");
  return 0;
}
