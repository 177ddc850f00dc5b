// What the two whisper.cpp clients (tests/dropin for whisper.rn 0.4.0-rc.10 and later,
// tests/api_2023 for rc.8) feed whisper.cpp: a model of random weights at any dimensions, in the
// ggml binary format (not GGUF) whisper_model_load reads (magic, hyperparameters, mel filters,
// vocabulary, then tensors by name, shape and type), and a synthetic signal. Matrices and conv
// kernels are F16, uniform in +-1/sqrt(inputs) so that activations stay in range through the
// layers; the rest F32.
#pragma once

#include <cmath>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "ggml.h"
#include "test_support.hpp"
#include "whisper.h"

namespace galloc::dropin_test {

struct WhisperDims {
  int vocab, audio_ctx, audio_state, audio_head, audio_layer, text_ctx, text_state, text_head, text_layer, mels;
};

// Tiny, but with the real model's structure: what the tests run. The loader takes any
// vocabulary size; the special token ids (sot = 50257 ...) only matter to whisper_full, which
// is not used here. n_audio_ctx 200 (4 s of audio) is not a multiple of 256, so the padded KV
// paths are taken.
inline constexpr WhisperDims kWhisperTestDims{384, 200, 64, 4, 2, 64, 64, 4, 2, 80};

// The dimensions a size names: "test" (the above) or OpenAI's tiny, base, small and large-v3
// (for capturing real graphs and for benchmarks); false for any other name.
inline bool whisper_dims_named(const std::string& size, WhisperDims& dims) {
  if (size == "test")
    dims = kWhisperTestDims;
  else if (size == "tiny")
    dims = {51864, 1500, 384, 6, 4, 448, 384, 6, 4, 80};
  else if (size == "base")
    dims = {51864, 1500, 512, 8, 6, 448, 512, 8, 6, 80};
  else if (size == "small")
    dims = {51864, 1500, 768, 12, 12, 448, 768, 12, 12, 80};
  else if (size == "large-v3")
    dims = {51866, 1500, 1280, 20, 32, 448, 1280, 20, 32, 128};
  else
    return false;
  return true;
}

class WhisperModelWriter {
 public:
  explicit WhisperModelWriter(const std::string& path) : out_(path, std::ios::binary), rng_(7) {
    if (!out_) fail("cannot write " + path);
  }
  void i32(std::int32_t v) { out_.write(reinterpret_cast<const char*>(&v), sizeof v); }
  void f32(float v) { out_.write(reinterpret_cast<const char*>(&v), sizeof v); }
  void bytes(const std::string& s) { out_.write(s.data(), static_cast<std::streamsize>(s.size())); }

  // one tensor record: n_dims, name length, type, ne[], name, data (no alignment padding);
  // values uniform in offset +- scale, written at once (a real token embedding has millions)
  void tensor(const std::string& name, ggml_type type, const std::vector<std::int32_t>& ne, float scale,
              float offset = 0.0f) {
    i32(static_cast<std::int32_t>(ne.size()));
    i32(static_cast<std::int32_t>(name.size()));
    i32(type);
    std::int64_t n = 1;
    for (std::int32_t d : ne) {
      i32(d);
      n *= d;
    }
    bytes(name);
    data_.clear();
    if (type == GGML_TYPE_F16) {
      data_.resize(static_cast<std::size_t>(n) * sizeof(ggml_fp16_t));
      auto* h = reinterpret_cast<ggml_fp16_t*>(data_.data());
      for (std::int64_t i = 0; i < n; ++i) h[i] = ggml_fp32_to_fp16(offset + rng_.uniform(scale));
    } else {
      data_.resize(static_cast<std::size_t>(n) * sizeof(float));
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

inline void write_whisper_model(const std::string& path, const WhisperDims& d) {
  WhisperModelWriter w(path);
  w.i32(static_cast<std::int32_t>(GGML_FILE_MAGIC));
  for (int v : {d.vocab, d.audio_ctx, d.audio_state, d.audio_head, d.audio_layer, d.text_ctx, d.text_state, d.text_head,
                d.text_layer, d.mels})
    w.i32(v);
  w.i32(GGML_FTYPE_MOSTLY_F16);

  // mel filters: overlapping triangles over the FFT bins
  const int n_fft = 1 + WHISPER_N_FFT / 2;
  w.i32(d.mels);
  w.i32(n_fft);
  for (int m = 0; m < d.mels; ++m) {
    const float center = 1.0f + static_cast<float>(m) * static_cast<float>(n_fft - 2) / static_cast<float>(d.mels);
    const float width = 3.0f;
    for (int f = 0; f < n_fft; ++f) w.f32(std::fmax(0.0f, 1.0f - std::fabs(static_cast<float>(f) - center) / width));
  }

  // the whole vocabulary: with a real model's size the loader adds no tokens and the special
  // ones (sot, transcribe ...) are real ids
  w.i32(d.vocab);
  for (int i = 0; i < d.vocab; ++i) {
    const std::string word = "t" + std::to_string(i);
    w.i32(static_cast<std::int32_t>(word.size()));
    w.bytes(word);
  }

  const ggml_type f16 = GGML_TYPE_F16, f32 = GGML_TYPE_F32;
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
  w.tensor("encoder.positional_embedding", f32, {a, d.audio_ctx}, 0.5f);
  w.tensor("encoder.conv1.weight", f16, {3, d.mels, a}, mat(3 * d.mels));
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
  w.tensor("decoder.positional_embedding", f32, {t, d.text_ctx}, 0.5f);
  w.tensor("decoder.token_embedding.weight", f16, {t, d.vocab}, 0.5f);
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

// `n` samples (4 s at whisper's 16 kHz in both clients) of a chirp over two steady tones and a
// little noise, so that the mel spectrogram has structure in time and frequency
inline std::vector<float> synthetic_pcm(int n) {
  std::vector<float> pcm(static_cast<std::size_t>(n));
  Rng rng(3);
  const double pi = 3.14159265358979323846, sr = WHISPER_SAMPLE_RATE;
  for (int i = 0; i < n; ++i) {
    const double t = i / sr;
    const double chirp = std::sin(2 * pi * (200 * t + 300 * t * t));
    pcm[static_cast<std::size_t>(i)] =
        static_cast<float>(0.3 * chirp + 0.2 * std::sin(2 * pi * 440 * t) + 0.1 * std::sin(2 * pi * 1800 * t) +
                           static_cast<double>(rng.uniform(0.02f)));
  }
  return pcm;
}

}  // namespace galloc::dropin_test
