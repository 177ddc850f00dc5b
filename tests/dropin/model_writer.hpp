// A gguf file of random weights, written with gguf's API as llama.cpp's converters lay them
// out: the writer behind the tests' model files (mmproj_model.hpp, mtp_model.hpp).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "ggml.h"
#include "gguf.h"
#include "test_support.hpp"

namespace galloc::dropin_test {

// The tensors of one gguf file, each with data of its own; random values.
class GgufWriter {
 public:
  explicit GgufWriter(std::uint64_t seed) : rng_(seed) {
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
  // A tensor of shape `ne` (F32 or F16), value(i) for element i in memory order.
  template <typename Value>
  void add_with(const std::string& name, ggml_type type, std::initializer_list<std::int64_t> ne, Value value) {
    std::int64_t dims[4] = {1, 1, 1, 1};
    int n = 0;
    for (std::int64_t d : ne) dims[n++] = d;
    ggml_tensor* t = ggml_new_tensor(ctx_, type, n, dims);
    ggml_set_name(t, name.c_str());
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
    if (!gguf_write_to_file(gguf_, path.c_str(), false)) fail("cannot write " + path);
  }

 private:
  gguf_context* gguf_ = gguf_init_empty();
  ggml_context* ctx_ = nullptr;
  std::vector<std::vector<std::uint8_t>> data_;
  Rng rng_;
};

inline void set_u32(gguf_context* g, const std::string& key, int value) {
  gguf_set_val_u32(g, key.c_str(), static_cast<std::uint32_t>(value));
}

}  // namespace galloc::dropin_test
