// The zoo's graphs built with ggml's own API. The zoo's builder reports each call its model
// files make (galloc::zoo::BuilderMirror); GgmlMirror makes the same call to ggml
// (ggml_mul_mat, ggml_view_2d, ggml_conv_2d, ...), so one run builds a galloc::Graph and the
// ggml_cgraph of the same model side by side. Used by the drop-in's zoo test (zoo_ggml.cpp)
// and by bench/ggml_alloc_bench.cpp. Compiled against one ggml build: sources for whisper.rn
// 0.4.0-rc.10's test GALLOC_GGML_WHISPER_RN_0_4_0_RC_10.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "galloc/graph.hpp"
#include "ggml.h"
#include "zoo/builder_mirror.hpp"

namespace galloc::dropin_test {

// What an integer input indexes, so that random inputs stay valid.
struct InputUse {
  std::int64_t bound = 0;  // get_rows / set_rows / get_rows_back: indices below this
  bool adamw = false;      // opt_step_adamw's hyper-parameters
};

class GgmlMirror final : public zoo::BuilderMirror {
 public:
  static constexpr std::size_t kGraphSize = 65536;
  static constexpr std::size_t kMaxTensors = 3 * kGraphSize;

  GgmlMirror();
  ~GgmlMirror() override;
  GgmlMirror(const GgmlMirror&) = delete;
  GgmlMirror& operator=(const GgmlMirror&) = delete;

  ggml_context* weights_ctx() const { return weights_ctx_; }
  ggml_context* graph_ctx() const { return graph_ctx_; }
  ggml_cgraph* graph() const { return gf_; }
  const std::vector<ggml_tensor*>& inputs() const { return inputs_; }
  const std::vector<ggml_tensor*>& outputs() const { return outputs_; }
  InputUse use_of(const ggml_tensor* t) const;

  // The first builder function this ggml does not have (whisper.rn 0.4.0-rc.10's): empty if none.
  const std::string& unsupported() const { return unsupported_; }

  void on_call(const zoo::BuilderCall& c) override;

 private:
  ggml_tensor* t(const zoo::BuilderCall& c, int i) const;
  int i(const zoo::BuilderCall& c, int k) const { return static_cast<int>(c.ints[static_cast<std::size_t>(k)]); }
  std::int64_t n(const zoo::BuilderCall& c, int k) const { return c.ints[static_cast<std::size_t>(k)]; }
  std::size_t z(const zoo::BuilderCall& c, int k) const {
    return static_cast<std::size_t>(c.ints[static_cast<std::size_t>(k)]);
  }
  ggml_tensor* fresh(ggml_context* ctx, const zoo::BuilderCall& c, ggml_type type);
  void uses(ggml_tensor* index, std::int64_t bound);
  ggml_tensor* make(const zoo::BuilderCall& c);
  ggml_tensor* lacks(const char* function);

  std::string unsupported_;
  ggml_context* weights_ctx_ = nullptr;  // weights, caches, parameters: memory of their own
  ggml_context* graph_ctx_ = nullptr;    // everything the graph allocator places
  ggml_cgraph* gf_ = nullptr;
  std::vector<ggml_tensor*> tensors_;  // by builder id
  std::vector<ggml_tensor*> inputs_;
  std::vector<ggml_tensor*> outputs_;
  std::unordered_map<const ggml_tensor*, InputUse> uses_;
};

enum class Outcome { kSame, kDiffers, kUnsupported, kError };

// A zoo graph built both ways.
struct Built {
  std::unique_ptr<GgmlMirror> mirror;
  galloc::Graph graph;
};

// Builds `name` at `scale` both ways and compares them (the differences go to stderr).
Outcome build_both(const std::string& name, double scale, Built& out);

}  // namespace galloc::dropin_test
