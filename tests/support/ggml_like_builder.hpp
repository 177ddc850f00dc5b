// Builds galloc graphs the way ggml code builds a ggml_cgraph, so that ports of ggml's tests
// read like the originals: each call is the ggml function of the same name with ggml's shape
// rules, and build_forward_expand() lists nodes and leafs in ggml_build_forward_expand order
// (depth first from the tensor over src[0], src[1], ...; a tensor with op NONE is a leaf, in
// first-visit order; every other tensor is a node, in post-order).
//
//   GgmlLikeBuilder b;                       // tensors are named x0, x1, ... as assign_names does
//   TensorId x0 = b.input_with_size(16);     // make_input_with_size: f32, 16 / 4 elements, input
//   TensorId x1 = b.scale(x0);               // ggml_scale
//   b.expand_output(x1);                     // ggml_set_output + ggml_build_forward_expand
//   Graph& graph = b.graph();
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "galloc/graph.hpp"

namespace galloc::testing {

class GgmlLikeBuilder {
 public:
  explicit GgmlLikeBuilder(std::string prefix = "x");

  // Names of the tensors made from now on: prefix + a count kept per prefix ("a0", "a1", ...),
  // like test-alloc.cpp's assign_names(ctx, prefix) over one context per prefix.
  void set_prefix(std::string prefix);

  // ggml_new_tensor_1d (no op, no flags).
  TensorId new_tensor_1d(DataType type, std::int64_t ne0);
  // test-alloc.cpp's make_input_1d: an f32 1-D tensor flagged input.
  TensorId input_1d(std::int64_t n_elements);
  // test-alloc.cpp's make_input_with_size: make_input_1d(bytes / 4).
  TensorId input_with_size(Bytes bytes);

  // Element-wise ops: the result has the first argument's type and shape, contiguous.
  TensorId add(TensorId a, TensorId b);
  TensorId mul(TensorId a, TensorId b);
  TensorId scale(TensorId a);
  // ggml_pad: ne[i] + p_i, op PAD.
  TensorId pad(TensorId a, std::int64_t p0, std::int64_t p1 = 0, std::int64_t p2 = 0, std::int64_t p3 = 0);
  // ggml_mean: f32, ne0 = 1, op MEAN.
  TensorId mean(TensorId a);
  // ggml_concat: ne[dim] is the sum of both, op CONCAT.
  TensorId concat(TensorId a, TensorId b, int dim);

  // Views: view_src is the root of a's view chain, offsets add up, src[0] = a.
  TensorId reshape_2d(TensorId a, std::int64_t ne0, std::int64_t ne1);       // op RESHAPE
  TensorId permute(TensorId a, int axis0, int axis1, int axis2, int axis3);  // op PERMUTE
  TensorId view_1d(TensorId a, std::int64_t ne0, Bytes offset);              // op VIEW

  void set_input(TensorId t);
  void set_output(TensorId t);
  // ggml_build_forward_expand: appends t and everything it depends on that is not listed yet.
  void build_forward_expand(TensorId t);
  // ggml_set_output(t) + ggml_build_forward_expand(t), as test-alloc.cpp's allocate_graph.
  void expand_output(TensorId t);

  [[nodiscard]] Graph& graph() { return graph_; }
  [[nodiscard]] const Graph& graph() const { return graph_; }
  [[nodiscard]] Tensor& operator[](TensorId id) { return graph_[id]; }
  // The tensor of that name; aborts the test program when there is none (a typo in a test).
  [[nodiscard]] TensorId id(const std::string& name) const;
  // Position of a tensor in graph().nodes / graph().leafs, or -1.
  [[nodiscard]] int node_index(TensorId id) const;
  [[nodiscard]] int leaf_index(TensorId id) const;

 private:
  TensorId add_tensor(Tensor tensor);
  TensorId elementwise(Op op, TensorId a, TensorId b);
  Tensor view_of(TensorId a, Op op, Bytes offset) const;
  void visit(TensorId t);

  Graph graph_;
  std::string prefix_;
  std::map<std::string, int> counters_;
  std::vector<char> visited_;
};

}  // namespace galloc::testing
