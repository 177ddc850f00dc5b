// A gguf file of random or all-zero weights, written with gguf's API as llama.cpp's converters
// lay them out: the writer behind the tests' model files (mmproj_model.hpp, mtp_model.hpp,
// real_model.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <system_error>
#include <vector>

#include "ggml.h"
#include "gguf.h"
#include "test_support.hpp"

namespace galloc::dropin_test {

// kZero: every weight zero, the data section left as a hole in the file (a sparse file: a 7B
// model costs no disk and no time to write; all-zero bytes give zero scales, so zeros, in the
// quantised types too). For programs that create contexts and compute nothing that matters.
enum class Weights { kRandom, kZero };

// The tensors of one gguf file, each with data of its own: random values, or none (kZero).
class GgufWriter {
 public:
  explicit GgufWriter(std::uint64_t seed, Weights weights = Weights::kRandom) : rng_(seed), weights_(weights) {
    ggml_init_params params{};
    params.mem_size = 4096 * ggml_tensor_overhead();
    params.no_alloc = true;  // each tensor's data is a vector of data_
    ctx_ = ggml_init(params);
  }
  ~GgufWriter() {
    gguf_free(gguf_);
    ggml_free(ctx_);
  }
  GgufWriter(const GgufWriter&) = delete;
  GgufWriter& operator=(const GgufWriter&) = delete;

  gguf_context* gguf() { return gguf_; }

  // A tensor of shape `ne`, values offset + uniform(-scale, scale).
  void add(const std::string& name, ggml_type type, std::initializer_list<std::int64_t> ne, float scale,
           float offset = 0.0f) {
    add_with(name, type, ne, [&](std::int64_t) { return offset + rng_.uniform(scale); });
  }
  // A tensor of shape `ne` (F32 or F16; with kZero any type), value(i) for element i in memory
  // order (kZero: not called).
  template <typename Value>
  void add_with(const std::string& name, ggml_type type, std::initializer_list<std::int64_t> ne, Value value) {
    std::int64_t dims[4] = {1, 1, 1, 1};
    int n = 0;
    for (std::int64_t d : ne) dims[n++] = d;
    ggml_tensor* t = ggml_new_tensor(ctx_, type, n, dims);
    ggml_set_name(t, name.c_str());
    last_ = t;
    if (weights_ == Weights::kZero) {
      gguf_add_tensor(gguf_, t);  // shape only: write() leaves the data as a hole
      return;
    }
    if (type != GGML_TYPE_F32 && type != GGML_TYPE_F16) fail(name + ": random values are written as F32 or F16 only");
    data_.emplace_back(ggml_nbytes(t));
    t->data = data_.back().data();
    const std::int64_t count = ggml_nelements(t);
    for (std::int64_t i = 0; i < count; ++i) {
      const float x = value(i);
      if (type == GGML_TYPE_F32) {
        static_cast<float*>(t->data)[i] = x;
      } else {
        static_cast<ggml_fp16_t*>(t->data)[i] = ggml_fp32_to_fp16(x);
      }
    }
    gguf_add_tensor(gguf_, t);
  }
  Rng& rng() { return rng_; }
  // A layer norm's weight (about 1) and bias.
  void add_norm(const std::string& name, std::int64_t n) {
    add(name + ".weight", GGML_TYPE_F32, {n}, 0.1f, 1.0f);
    add(name + ".bias", GGML_TYPE_F32, {n}, 0.1f);
  }
  void write(const std::string& path) {
    if (weights_ == Weights::kRandom || last_ == nullptr) {
      if (!gguf_write_to_file(gguf_, path.c_str(), false)) fail("cannot write " + path);
      return;
    }
    if (!gguf_write_to_file(gguf_, path.c_str(), /*only_meta=*/true)) fail("cannot write " + path);
    const std::size_t alignment = gguf_get_alignment(gguf_);
    const std::size_t data_size = gguf_get_tensor_offset(gguf_, gguf_find_tensor(gguf_, ggml_get_name(last_))) +
                                  GGML_PAD(ggml_nbytes(last_), alignment);
    std::error_code error;
    std::filesystem::resize_file(path, gguf_get_meta_size(gguf_) + data_size, error);  // a hole: no disk used
    if (error) fail("cannot extend " + path + ": " + error.message());
  }

 private:
  gguf_context* gguf_ = gguf_init_empty();
  ggml_context* ctx_ = nullptr;
  std::vector<std::vector<std::uint8_t>> data_;
  Rng rng_;
  Weights weights_;
  ggml_tensor* last_ = nullptr;  // gguf lays the data out in the order of adding
};

inline void set_u32(gguf_context* g, const std::string& key, int value) {
  gguf_set_val_u32(g, key.c_str(), static_cast<std::uint32_t>(value));
}

}  // namespace galloc::dropin_test
