// The graph zoo: compute graphs of real models at real dimensions, built the way their ggml
// programs build them (llama.cpp, whisper.cpp, stable-diffusion.cpp, ggml's examples), for
// regression tests, benchmarks and the CLI.
//
//   for (const galloc::zoo::ZooEntry& entry : galloc::zoo::list()) {
//     galloc::Result<galloc::Graph> graph = galloc::zoo::build(entry.name);
//     ...
//   }
//   auto small = galloc::zoo::build("llama-7b-pp512", {.scale = 0.1});  // same ops, tiny shapes
//
// Every graph lists its nodes in ggml_build_forward_expand order and its leafs (weights, KV
// caches, inputs, fresh copy destinations) in first-visit order, with ggml's shapes and
// strides. Weights and caches have has_memory set (the planner never places them); inputs
// are flagged kFlagInput; what the program reads back (logits, the encoder output, the loss)
// is flagged kFlagOutput.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "galloc/graph.hpp"
#include "galloc/status.hpp"

namespace galloc::zoo {

struct ZooEntry {
  std::string name;         // "family-variant": "llama-7b-pp512", "whisper-base-encoder"
  std::string description;  // the model, its dimensions and what the graph is based on
};

struct ZooOptions {
  // Shrinks a model for fast tests: 0 < scale <= 1, 1 is the real model. It multiplies the
  // widths (embedding and hidden sizes, heads, FFN sizes, channels, vocabulary, classes),
  // the lengths (tokens, KV cache and context sizes, audio frames, image and latent sides)
  // and the depth (layers, blocks per stage). Each result is rounded to keep the shapes valid
  // (widths stay multiples of 32 where quantised rows or group norms need it, image sides
  // multiples of the total stride) and every count stays at least 1. The graph keeps its
  // structure: the same ops in the same order, only fewer layers and smaller tensors.
  double scale = 1.0;
};

// All graphs, in a stable order (grouped by family).
[[nodiscard]] std::vector<ZooEntry> list();

// The graph of that name at full size. Unknown names are an invalid_argument error whose
// message lists the known names.
[[nodiscard]] Result<Graph> build(std::string_view name);
[[nodiscard]] Result<Graph> build(std::string_view name, const ZooOptions& options);

// ---- replaying a zoo graph elsewhere ------------------------------------------------------
//
// The zoo's model files build graphs through a builder whose every function is the ggml
// function of the same name (ggml_mul_mat, ggml_view_2d, ggml_conv_2d, ...). A BuilderMirror
// sees each of those calls as the model makes it, so that another graph library (ggml itself,
// in tests/dropin/zoo_ggml.cpp) can make the same calls and build the same graph. Calls
// a builder function makes internally (ggml_conv_2d's im2col and mul_mat) are not reported:
// the mirror makes the composite call, as the ggml program would.

// ggml_unary_op / ggml_glu_op kinds the zoo uses.
enum class UnaryOp : std::uint8_t { kNone, kGelu, kSilu, kRelu, kStep, kTanh };
enum class PoolOp : std::uint8_t { kMax, kAvg };

// One per builder function, named after it (and after the ggml function it follows).
// clang-format off
enum class BuilderFn : std::uint8_t {
  // tensors without an op: ints = ne[0..3]
  kWeight, kInput, kParam, kNewTensor,
  // element-wise
  kAdd, kAddInplace, kMul, kMulInplace, kScale, kScaleInplace, kUnary, kUnaryInplace, kClamp,
  kGluSplit, kRepeat, kRepeatBack,
  // normalisation, attention; group_norm: ints = {n_groups}
  kNorm, kRmsNorm, kGroupNorm, kSoftMax, kSoftMaxInplace, kSoftMaxExt, kDiagMaskInf,
  kDiagMaskInfInplace, kRope, kFlashAttnExt,
  // matrix products, gathers; concat: ints = {dim}
  kMulMat, kOutProd, kGetRows, kSetRows, kConcat, kArgmax, kCountEqual,
  // copies; cont_2d / cont_3d: ints = ne
  kCont, kCont2d, kCont3d, kCpy, kCast,
  // views: ints = the function's integer arguments in order (ne..., nb..., offset; axes)
  kViewTensor, kView1d, kView2d, kView3d, kView4d, kReshape1d, kReshape2d, kReshape3d,
  kReshape4d, kReshapeLike, kPermute, kTranspose,
  // convolution, pooling, images: ints = the function's integer arguments in order
  kIm2col, kConv1d, kConv1dPh, kConv2d, kConv2dDirect, kConv2dDwDirect, kPool2d, kUpscale,
  kTimestepEmbedding,
  // training
  kCrossEntropyLoss, kCrossEntropyLossBack, kSiluBack, kRmsNormBack, kSoftMaxExtBack,
  kRopeBack, kGetRowsBack, kOptStepAdamw,
  // graph: name = the tensor's new name; expand is ggml_build_forward_expand
  kName, kSetOutput, kSetLoss, kExpand,
};
// clang-format on

// One builder call. Tensors are the builder's ids (dense, in creation order, as the calls
// return them; not the ids of the finished Graph, which keeps only what the graph reaches).
struct BuilderCall {
  BuilderFn fn = BuilderFn::kExpand;
  TensorId result = kNoTensor;  // what the function returned (kNoTensor for set_output, expand)
  std::array<TensorId, 5> tensors{kNoTensor, kNoTensor, kNoTensor, kNoTensor, kNoTensor};  // in argument order
  std::array<std::int64_t, 8> ints{};                                                      // integer arguments in order
  DataType type = DataType::F32;   // weight, input, new_tensor, cast, im2col's destination
  UnaryOp unary = UnaryOp::kNone;  // unary, unary_inplace, glu_split
  PoolOp pool = PoolOp::kMax;      // pool_2d
  bool is_2d = false;              // im2col
  std::string_view name;           // weight, input, param, new_tensor, name
};

class BuilderMirror {
 public:
  virtual ~BuilderMirror() = default;
  virtual void on_call(const BuilderCall& call) = 0;
};

// build(name, options), reporting every builder call to `mirror` as it is made. The calls
// stop at the first shape error (build then returns it).
[[nodiscard]] Result<Graph> build(std::string_view name, const ZooOptions& options, BuilderMirror& mirror);

}  // namespace galloc::zoo
