#include "support/ggml_like_builder.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <utility>

namespace galloc::testing {

GgmlLikeBuilder::GgmlLikeBuilder(std::string prefix) : prefix_(std::move(prefix)) {}

void GgmlLikeBuilder::set_prefix(std::string prefix) { prefix_ = std::move(prefix); }

TensorId GgmlLikeBuilder::add_tensor(Tensor tensor) {
  tensor.name = prefix_ + std::to_string(counters_[prefix_]++);
  return graph_.add(std::move(tensor));
}

TensorId GgmlLikeBuilder::new_tensor_1d(DataType type, std::int64_t ne0) {
  return add_tensor(graph_.new_tensor("", type, {ne0}));
}

TensorId GgmlLikeBuilder::input_1d(std::int64_t n_elements) {
  const TensorId t = new_tensor_1d(DataType::F32, n_elements);
  set_input(t);
  return t;
}

TensorId GgmlLikeBuilder::input_with_size(Bytes bytes) {
  if (bytes % 4 != 0) {
    std::fprintf(stderr, "input_with_size(%llu): not a multiple of 4\n", static_cast<unsigned long long>(bytes));
    std::abort();
  }
  return input_1d(static_cast<std::int64_t>(bytes / 4));
}

// ggml_dup_tensor(a) as the result of `op`: a's type and shape, contiguous strides.
TensorId GgmlLikeBuilder::elementwise(Op op, TensorId a, TensorId b) {
  Tensor t;
  t.type = graph_[a].type;
  t.ne = graph_[a].ne;
  t.nb = contiguous_strides(t.type, t.ne);
  t.op = op;
  t.src[0] = a;
  t.src[1] = b;
  return add_tensor(std::move(t));
}

TensorId GgmlLikeBuilder::add(TensorId a, TensorId b) { return elementwise(Op::Add, a, b); }
TensorId GgmlLikeBuilder::mul(TensorId a, TensorId b) { return elementwise(Op::Mul, a, b); }
TensorId GgmlLikeBuilder::scale(TensorId a) { return elementwise(Op::Scale, a, kNoTensor); }

TensorId GgmlLikeBuilder::pad(TensorId a, std::int64_t p0, std::int64_t p1, std::int64_t p2, std::int64_t p3) {
  const Tensor& s = graph_[a];
  Tensor t;
  t.type = s.type;
  t.ne = {s.ne[0] + p0, s.ne[1] + p1, s.ne[2] + p2, s.ne[3] + p3};
  t.nb = contiguous_strides(t.type, t.ne);
  t.op = Op::Pad;
  t.src[0] = a;
  return add_tensor(std::move(t));
}

TensorId GgmlLikeBuilder::mean(TensorId a) {
  const Tensor& s = graph_[a];
  Tensor t;
  t.type = DataType::F32;
  t.ne = {1, s.ne[1], s.ne[2], s.ne[3]};
  t.nb = contiguous_strides(t.type, t.ne);
  t.op = Op::Mean;
  t.src[0] = a;
  return add_tensor(std::move(t));
}

TensorId GgmlLikeBuilder::concat(TensorId a, TensorId b, int dim) {
  const Tensor& s = graph_[a];
  Tensor t;
  t.type = s.type;
  t.ne = s.ne;
  t.ne[static_cast<std::size_t>(dim)] += graph_[b].ne[static_cast<std::size_t>(dim)];
  t.nb = contiguous_strides(t.type, t.ne);
  t.op = Op::Concat;
  t.src[0] = a;
  t.src[1] = b;
  return add_tensor(std::move(t));
}

// ggml_new_tensor_impl with view_src = a: the root of a's chain, offsets added.
Tensor GgmlLikeBuilder::view_of(TensorId a, Op op, Bytes offset) const {
  const Tensor& s = graph_[a];
  Tensor t;
  t.type = s.type;
  t.op = op;
  t.src[0] = a;
  t.view_src = s.is_view() ? s.view_src : a;
  t.view_offs = (s.is_view() ? s.view_offs : 0) + offset;
  return t;
}

TensorId GgmlLikeBuilder::reshape_2d(TensorId a, std::int64_t ne0, std::int64_t ne1) {
  Tensor t = view_of(a, Op::Reshape, 0);
  t.ne = {ne0, ne1, 1, 1};
  t.nb = contiguous_strides(t.type, t.ne);
  return add_tensor(std::move(t));
}

TensorId GgmlLikeBuilder::permute(TensorId a, int axis0, int axis1, int axis2, int axis3) {
  const Tensor& s = graph_[a];
  Tensor t = view_of(a, Op::Permute, 0);
  const int axes[kMaxDims] = {axis0, axis1, axis2, axis3};
  for (int i = 0; i < kMaxDims; ++i) {
    t.ne[static_cast<std::size_t>(axes[i])] = s.ne[static_cast<std::size_t>(i)];
    t.nb[static_cast<std::size_t>(axes[i])] = s.nb[static_cast<std::size_t>(i)];
  }
  return add_tensor(std::move(t));
}

TensorId GgmlLikeBuilder::view_1d(TensorId a, std::int64_t ne0, Bytes offset) {
  Tensor t = view_of(a, Op::View, offset);
  t.ne = {ne0, 1, 1, 1};
  t.nb = contiguous_strides(t.type, t.ne);
  return add_tensor(std::move(t));
}

void GgmlLikeBuilder::set_input(TensorId t) { graph_[t].flags |= kFlagInput; }
void GgmlLikeBuilder::set_output(TensorId t) { graph_[t].flags |= kFlagOutput; }

void GgmlLikeBuilder::visit(TensorId t) {
  if (visited_[static_cast<std::size_t>(t)]) return;
  visited_[static_cast<std::size_t>(t)] = 1;
  for (TensorId src : graph_[t].src) {
    if (src != kNoTensor) visit(src);
  }
  const Tensor& tensor = graph_[t];
  if (tensor.op == Op::None && (tensor.flags & kFlagParam) == 0) {
    graph_.leafs.push_back(t);
  } else {
    graph_.nodes.push_back(t);
  }
}

void GgmlLikeBuilder::build_forward_expand(TensorId t) {
  visited_.resize(graph_.tensors.size(), 0);
  visit(t);
}

void GgmlLikeBuilder::expand_output(TensorId t) {
  set_output(t);
  build_forward_expand(t);
}

TensorId GgmlLikeBuilder::id(const std::string& name) const {
  const auto found = graph_.find(name);
  if (!found) {
    std::fprintf(stderr, "GgmlLikeBuilder: no tensor named %s\n", name.c_str());
    std::abort();
  }
  return *found;
}

int GgmlLikeBuilder::node_index(TensorId id) const {
  const auto it = std::find(graph_.nodes.begin(), graph_.nodes.end(), id);
  return it == graph_.nodes.end() ? -1 : static_cast<int>(it - graph_.nodes.begin());
}

int GgmlLikeBuilder::leaf_index(TensorId id) const {
  const auto it = std::find(graph_.leafs.begin(), graph_.leafs.end(), id);
  return it == graph_.leafs.end() ? -1 : static_cast<int>(it - graph_.leafs.begin());
}

}  // namespace galloc::testing
