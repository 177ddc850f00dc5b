// Replaying a zoo graph elsewhere: the calls the zoo's builder makes, for the drop-in test
// that builds every zoo graph with ggml's own functions (tests/dropin/ggml_zoo_mirror.cpp).
// Not part of the public API: it changes with every builder function the zoo gains.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "galloc/graph.hpp"
#include "galloc/status.hpp"
#include "galloc/zoo.hpp"

namespace galloc::zoo {

// The zoo's model files build graphs through a builder whose every function is the ggml
// function of the same name (ggml_mul_mat, ggml_view_2d, ggml_conv_2d, ...). A BuilderMirror
// sees each of those calls as the model makes it, so that another graph library (ggml itself,
// in tests/dropin/ggml_zoo_mirror.cpp) can make the same calls and build the same graph. Calls
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
