// The second real client: whisper.cpp (from whisper.rn's sources) encoding a synthetic signal
// with a tiny whisper model of random weights and decoding a few tokens, linked once against
// stock ggml and once against galloc's drop-in. The model is written here in the legacy ggml
// binary format whisper_model_load reads (magic, hparams, mel filters, vocabulary, then
// tensors by name, shape and type). Reports in the format of dropin_graphs.cpp (see
// compare.cmake): the result of every graph whisper.cpp computes (mel -> conv -> encoder ->
// cross-attention K/V -> decoder) must be bit-identical, the compute buffers no larger.
//
// Linked with -Wl,--wrap= for ggml_backend_sched_graph_compute (to hash each graph's results
// right after it ran), ggml_backend_sched_get_buffer_size (whisper.cpp logs its compute
// buffers only in MB with two decimals: the exact bytes come from here, labelled by the log
// line that follows) and ggml_backend_alloc_ctx_tensors{,_from_buft} (model and KV buffers).
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
enum ggml_status __real_ggml_backend_sched_graph_compute(ggml_backend_sched_t sched, struct ggml_cgraph* graph);
size_t __real_ggml_backend_sched_get_buffer_size(ggml_backend_sched_t sched, ggml_backend_t backend);
ggml_backend_buffer_t __real_ggml_backend_alloc_ctx_tensors(struct ggml_context* ctx, ggml_backend_t backend);
ggml_backend_buffer_t __real_ggml_backend_alloc_ctx_tensors_from_buft(struct ggml_context* ctx,
                                                                      ggml_backend_buffer_type_t buft);
}

namespace {

using namespace galloc::dropin_test;

// Tiny, but with the real model's structure. The loader takes any vocabulary size; the
// special token ids (sot = 50257 ...) only matter to whisper_full, which is not used here.
// n_audio_ctx 200 (4 s of audio) is not a multiple of 256, so the padded KV paths are taken.
constexpr int kVocab = 384, kAudioCtx = 200, kState = 64, kHead = 4, kAudioLayers = 2, kTextCtx = 64, kTextLayers = 2,
              kMels = 80, kFft = 1 + WHISPER_N_FFT / 2;
constexpr int kThreads = 1;  // ggml's threads spin at barriers: slow on a busy 2-core machine

// --------------------------------------------------------------------------- model file
class ModelWriter {
 public:
  explicit ModelWriter(const std::string& path) : out_(path, std::ios::binary), rng_(7) {
    if (!out_) fail("cannot write " + path);
  }
  void i32(std::int32_t v) { out_.write(reinterpret_cast<const char*>(&v), sizeof v); }
  void f32(float v) { out_.write(reinterpret_cast<const char*>(&v), sizeof v); }
  void bytes(const std::string& s) { out_.write(s.data(), static_cast<std::streamsize>(s.size())); }

  // one tensor record: n_dims, name length, type, ne[], name, data (no alignment padding)
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
    for (std::int64_t i = 0; i < n; ++i) {
      const float v = offset + rng_.uniform(scale);
      if (type == GGML_TYPE_F16) {
        const ggml_fp16_t h = ggml_fp32_to_fp16(v);
        out_.write(reinterpret_cast<const char*>(&h), sizeof h);
      } else {
        f32(v);
      }
    }
  }
  void close() {
    out_.close();
    if (!out_) fail("error writing the model file");
  }

 private:
  std::ofstream out_;
  Rng rng_;
};

void write_model(const std::string& path) {
  ModelWriter w(path);
  w.i32(static_cast<std::int32_t>(GGML_FILE_MAGIC));
  for (int v : {kVocab, kAudioCtx, kState, kHead, kAudioLayers, kTextCtx, kState, kHead, kTextLayers, kMels}) w.i32(v);
  w.i32(GGML_FTYPE_MOSTLY_F16);  // matrices and conv kernels in F16, the rest F32

  // mel filters: overlapping triangles over the FFT bins
  w.i32(kMels);
  w.i32(kFft);
  for (int m = 0; m < kMels; ++m) {
    const float center = 1.0f + static_cast<float>(m) * (kFft - 2) / kMels, width = 3.0f;
    for (int f = 0; f < kFft; ++f) w.f32(std::fmax(0.0f, 1.0f - std::fabs(static_cast<float>(f) - center) / width));
  }

  w.i32(kVocab);
  for (int i = 0; i < kVocab; ++i) {
    const std::string word = "t" + std::to_string(i);
    w.i32(static_cast<std::int32_t>(word.size()));
    w.bytes(word);
  }

  const ggml_type f16 = GGML_TYPE_F16, f32 = GGML_TYPE_F32;
  const float mat = 0.2f;  // ~1/sqrt(kState): activations stay in range through the layers
  auto norm = [&](const std::string& name) {
    w.tensor(name + ".weight", f32, {kState}, 0.1f, 1.0f);
    w.tensor(name + ".bias", f32, {kState}, 0.1f);
  };
  auto linear = [&](const std::string& name, int in, int out, bool bias) {
    w.tensor(name + ".weight", f16, {in, out}, mat);
    if (bias) w.tensor(name + ".bias", f32, {out}, 0.05f);
  };
  auto attention = [&](const std::string& name) {
    linear(name + ".query", kState, kState, true);
    linear(name + ".key", kState, kState, false);
    linear(name + ".value", kState, kState, true);
    linear(name + ".out", kState, kState, true);
  };
  auto mlp = [&](const std::string& b) {
    norm(b + "mlp_ln");
    linear(b + "mlp.0", kState, 4 * kState, true);
    linear(b + "mlp.2", 4 * kState, kState, true);
  };

  w.tensor("encoder.positional_embedding", f32, {kState, kAudioCtx}, 0.5f);
  w.tensor("encoder.conv1.weight", f16, {3, kMels, kState}, 0.1f);
  w.tensor("encoder.conv1.bias", f32, {1, kState}, 0.05f);
  w.tensor("encoder.conv2.weight", f16, {3, kState, kState}, 0.1f);
  w.tensor("encoder.conv2.bias", f32, {1, kState}, 0.05f);
  norm("encoder.ln_post");
  for (int l = 0; l < kAudioLayers; ++l) {
    const std::string b = "encoder.blocks." + std::to_string(l) + ".";
    norm(b + "attn_ln");
    attention(b + "attn");
    mlp(b);
  }
  w.tensor("decoder.positional_embedding", f32, {kState, kTextCtx}, 0.5f);
  w.tensor("decoder.token_embedding.weight", f16, {kState, kVocab}, 0.5f);
  norm("decoder.ln");
  for (int l = 0; l < kTextLayers; ++l) {
    const std::string b = "decoder.blocks." + std::to_string(l) + ".";
    norm(b + "attn_ln");
    attention(b + "attn");
    norm(b + "cross_attn_ln");
    attention(b + "cross_attn");
    mlp(b);
  }
  w.close();
}

// --------------------------------------------------------------------------- what ggml saw
struct Capture {
  std::string label;           // "<config>.<step>", set before each whisper call
  int graph_index = 0;         // graphs computed within the current step
  size_t pending_compute = 0;  // sched buffer sizes read since the last "compute buffer" log line
  int compute_lines = 0;
  int ctx_buffers = 0;
  std::vector<std::string> lines;  // report lines, printed in order
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

// --------------------------------------------------------------------------- the run
// 4 s of a chirp over two steady tones and a little noise, so that the mel spectrogram has
// structure in time and frequency
std::vector<float> synthetic_pcm() {
  const int n = kAudioCtx * 2 * WHISPER_HOP_LENGTH;
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

void run(const std::string& path, const std::string& config, bool flash_attn, const std::vector<float>& pcm) {
  Capture& c = capture();
  c.compute_lines = 0;
  c.ctx_buffers = 0;
  begin_step(config);
  whisper_context_params cp = whisper_context_default_params();
  cp.use_gpu = false;
  cp.flash_attn = flash_attn;
  whisper_context* ctx = whisper_init_from_file_with_params(path.c_str(), cp);
  if (ctx == nullptr) fail("cannot load " + path);
  if (c.compute_lines != 4) fail("expected 4 compute buffer log lines, saw " + std::to_string(c.compute_lines));
  flush_lines();

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
    const float* logits = whisper_get_logits(ctx) + static_cast<size_t>(tokens.size() - 1) * kVocab;
    for (int i = 0; i < kVocab; ++i) {
      if (!std::isfinite(logits[i])) fail("non-finite logits");
    }
    std::printf("exact whisper.%s.decode%d.logits %s\n", config.c_str(), step,
                hex(fnv1a(logits, kVocab * sizeof(float))).c_str());
    n_past += static_cast<int>(tokens.size());
    tokens = {argmax(logits)};
  }
  whisper_free(ctx);
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
  ggml_backend_buffer_t buffer = __real_ggml_backend_alloc_ctx_tensors(ctx, backend);
  record_ctx_buffer(buffer);
  return buffer;
}

ggml_backend_buffer_t __wrap_ggml_backend_alloc_ctx_tensors_from_buft(struct ggml_context* ctx,
                                                                      ggml_backend_buffer_type_t buft) {
  ggml_backend_buffer_t buffer = __real_ggml_backend_alloc_ctx_tensors_from_buft(ctx, buft);
  record_ctx_buffer(buffer);
  return buffer;
}

}  // extern "C"

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : "tiny-whisper.bin";
  whisper_log_set(log_to_capture, nullptr);
  write_model(path);
  const std::vector<float> pcm = synthetic_pcm();
  run(path, "attn", false, pcm);
  run(path, "flash_attn", true, pcm);
  std::printf("done\n");
  return 0;
}
