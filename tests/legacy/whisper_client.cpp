// whisper.cpp as whisper.rn 0.4.0-rc.8 vendors it (late-2023 ggml: the ggml_allocr API with
// measure allocators, no ggml_backend_sched), linked once against stock ggml and once against
// galloc's drop-in. A random-weight model at whisper's real tiny or base dimensions (F16
// matrices, vocabulary 51864 so that the special tokens exist) is written in the legacy ggml
// binary format whisper_model_load reads, encodes a synthetic signal and decodes a 4-token prompt
// and two single tokens. Reports in the format of tests/dropin/dropin_graphs.cpp (see
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
#include <fstream>
#include <string>
#include <unordered_set>
#include <vector>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml.h"
#include "test_support.hpp"
#include "whisper.h"

extern "C" {
bool __real_ggml_backend_graph_compute(ggml_backend_t backend, struct ggml_cgraph* cgraph);
size_t __real_ggml_allocr_max_size(ggml_allocr_t alloc);
ggml_allocr_t __real_ggml_allocr_new_from_buffer(struct ggml_backend_buffer* buffer);
}

namespace {

using namespace galloc::dropin_test;

struct Dims {
  const char* name;
  int audio_state, audio_head, audio_layer, text_state, text_head, text_layer;
};
// OpenAI's tiny and base; both share the rest (below)
constexpr Dims kTiny{"tiny", 384, 6, 4, 384, 6, 4};
constexpr Dims kBase{"base", 512, 8, 6, 512, 8, 6};
constexpr int kVocab = 51864, kAudioCtx = 1500, kTextCtx = 448, kMels = 80, kFft = 1 + WHISPER_N_FFT / 2;
constexpr int kThreads = 1;      // ggml's threads spin at barriers: slow on a busy 2-core machine
constexpr int kMaxNodes = 4096;  // whisper.cpp's WHISPER_MAX_NODES: its graph metadata, part of the logged size

// --------------------------------------------------------------------------- model file
class ModelWriter {
 public:
  explicit ModelWriter(const std::string& path) : out_(path, std::ios::binary), rng_(7) {
    if (!out_) fail("cannot write " + path);
  }
  void i32(std::int32_t v) { out_.write(reinterpret_cast<const char*>(&v), sizeof v); }
  void f32(float v) { out_.write(reinterpret_cast<const char*>(&v), sizeof v); }
  void bytes(const std::string& s) { out_.write(s.data(), static_cast<std::streamsize>(s.size())); }

  // one tensor record: n_dims, name length, type, ne[], name, data (no alignment padding);
  // values uniform in offset +- scale
  void tensor(const std::string& name, ggml_type type, std::vector<std::int32_t> ne, float scale, float offset = 0.0f) {
    i32(static_cast<std::int32_t>(ne.size()));
    i32(static_cast<std::int32_t>(name.size()));
    i32(type);
    std::int64_t n = 1;
    for (std::int32_t d : ne) {
      i32(d);
      n *= d;
    }
    bytes(name);
    // one write per tensor: the token embedding alone has 20 to 27 million values
    data_.clear();
    if (type == GGML_TYPE_F16) {
      data_.resize(static_cast<size_t>(n) * sizeof(ggml_fp16_t));
      auto* h = reinterpret_cast<ggml_fp16_t*>(data_.data());
      for (std::int64_t i = 0; i < n; ++i) h[i] = ggml_fp32_to_fp16(offset + rng_.uniform(scale));
    } else {
      data_.resize(static_cast<size_t>(n) * sizeof(float));
      auto* f = reinterpret_cast<float*>(data_.data());
      for (std::int64_t i = 0; i < n; ++i) f[i] = offset + rng_.uniform(scale);
    }
    out_.write(data_.data(), static_cast<std::streamsize>(data_.size()));
  }
  void close() {
    out_.close();
    if (!out_) fail("error writing the model file");
  }

 private:
  std::ofstream out_;
  Rng rng_;
  std::vector<char> data_;
};

void write_model(const std::string& path, const Dims& d) {
  ModelWriter w(path);
  w.i32(static_cast<std::int32_t>(GGML_FILE_MAGIC));
  for (int v : {kVocab, kAudioCtx, d.audio_state, d.audio_head, d.audio_layer, kTextCtx, d.text_state, d.text_head,
                d.text_layer, kMels})
    w.i32(v);
  w.i32(GGML_FTYPE_MOSTLY_F16);  // matrices and conv kernels in F16, the rest F32

  // mel filters: overlapping triangles over the FFT bins
  w.i32(kMels);
  w.i32(kFft);
  for (int m = 0; m < kMels; ++m) {
    const float center = 1.0f + static_cast<float>(m) * (kFft - 2) / kMels, width = 3.0f;
    for (int f = 0; f < kFft; ++f) w.f32(std::fmax(0.0f, 1.0f - std::fabs(static_cast<float>(f) - center) / width));
  }

  // the whole vocabulary, so that the loader adds no tokens and sot, transcribe ... are real ids
  w.i32(kVocab);
  for (int i = 0; i < kVocab; ++i) {
    const std::string word = "t" + std::to_string(i);
    w.i32(static_cast<std::int32_t>(word.size()));
    w.bytes(word);
  }

  const ggml_type f16 = GGML_TYPE_F16, f32 = GGML_TYPE_F32;
  // matrices uniform in +-1/sqrt(inputs): activations stay in range through the layers
  auto mat = [](int in) { return 1.0f / std::sqrt(static_cast<float>(in)); };
  auto norm = [&](const std::string& name, int n) {
    w.tensor(name + ".weight", f32, {n}, 0.1f, 1.0f);
    w.tensor(name + ".bias", f32, {n}, 0.1f);
  };
  auto linear = [&](const std::string& name, int in, int out, bool bias) {
    w.tensor(name + ".weight", f16, {in, out}, mat(in));
    if (bias) w.tensor(name + ".bias", f32, {out}, 0.05f);
  };
  auto attention = [&](const std::string& name, int n) {
    linear(name + ".query", n, n, true);
    linear(name + ".key", n, n, false);
    linear(name + ".value", n, n, true);
    linear(name + ".out", n, n, true);
  };
  auto mlp = [&](const std::string& b, int n) {
    norm(b + "mlp_ln", n);
    linear(b + "mlp.0", n, 4 * n, true);
    linear(b + "mlp.2", 4 * n, n, true);
  };

  const int a = d.audio_state, t = d.text_state;
  w.tensor("encoder.positional_embedding", f32, {a, kAudioCtx}, 0.5f);
  w.tensor("encoder.conv1.weight", f16, {3, kMels, a}, mat(3 * kMels));
  w.tensor("encoder.conv1.bias", f32, {1, a}, 0.05f);
  w.tensor("encoder.conv2.weight", f16, {3, a, a}, mat(3 * a));
  w.tensor("encoder.conv2.bias", f32, {1, a}, 0.05f);
  norm("encoder.ln_post", a);
  for (int l = 0; l < d.audio_layer; ++l) {
    const std::string b = "encoder.blocks." + std::to_string(l) + ".";
    norm(b + "attn_ln", a);
    attention(b + "attn", a);
    mlp(b, a);
  }
  w.tensor("decoder.positional_embedding", f32, {t, kTextCtx}, 0.5f);
  w.tensor("decoder.token_embedding.weight", f16, {t, kVocab}, 0.5f);
  norm("decoder.ln", t);
  for (int l = 0; l < d.text_layer; ++l) {
    const std::string b = "decoder.blocks." + std::to_string(l) + ".";
    norm(b + "attn_ln", t);
    attention(b + "attn", t);
    norm(b + "cross_attn_ln", t);
    attention(b + "cross_attn", t);
    mlp(b, t);
  }
  w.close();
}

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
// 4 s of a chirp over two steady tones and a little noise, so that the mel spectrogram has
// structure in time and frequency (whisper.cpp pads it with 30 s of silence to the 3000 frames
// of n_audio_ctx 1500)
std::vector<float> synthetic_pcm() {
  const int n = 4 * WHISPER_SAMPLE_RATE;
  std::vector<float> pcm(n);
  Rng rng(3);
  const double pi = 3.14159265358979323846, sr = WHISPER_SAMPLE_RATE;
  for (int i = 0; i < n; ++i) {
    const double t = i / sr;
    const double chirp = std::sin(2 * pi * (200 * t + 300 * t * t));
    pcm[i] = static_cast<float>(0.3 * chirp + 0.2 * std::sin(2 * pi * 440 * t) + 0.1 * std::sin(2 * pi * 1800 * t) +
                                static_cast<double>(rng.uniform(0.02f)));
  }
  return pcm;
}

int argmax(const float* logits) {
  int best = 0;
  for (int i = 1; i < kVocab; ++i) {
    if (logits[i] > logits[best]) best = i;
  }
  return best;
}

void run(const std::string& path, const Dims& dims) {
  const std::string config = dims.name;
  Capture& c = capture();
  auto start = std::chrono::steady_clock::now();
  write_model(path, dims);
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
  if (whisper_model_n_vocab(ctx) != kVocab || whisper_model_n_audio_state(ctx) != dims.audio_state)
    fail("the model loaded with other dimensions");
  std::printf("info whisper.%s.init_seconds %.2f\n", config.c_str(), seconds_since(start));

  start = std::chrono::steady_clock::now();
  const std::vector<float> pcm = synthetic_pcm();
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
    tokens = {argmax(logits)};
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
