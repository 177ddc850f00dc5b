#include "builder.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace galloc::zoo {

namespace {

Shape shape_of(std::initializer_list<std::int64_t> ne) {
  Shape shape{1, 1, 1, 1};
  std::size_t i = 0;
  for (std::int64_t n : ne) {
    if (i < shape.size()) shape[i++] = n;
  }
  return shape;
}

std::int64_t elements(const Shape& ne) { return ne[0] * ne[1] * ne[2] * ne[3]; }

std::string shape_text(const Shape& ne) {
  return "[" + std::to_string(ne[0]) + ", " + std::to_string(ne[1]) + ", " + std::to_string(ne[2]) + ", " +
         std::to_string(ne[3]) + "]";
}

// ggml_can_repeat(small, big): every dimension of `big` is a multiple of `small`'s.
bool can_repeat(const Shape& small, const Shape& big) {
  for (int i = 0; i < kMaxDims; ++i) {
    if (small[i] == 0 || big[i] % small[i] != 0) return false;
  }
  return true;
}

// ggml_calc_conv_output_size / ggml_calc_pool_output_size.
std::int64_t conv_out(std::int64_t in, std::int64_t kernel, int s, int p, int d) {
  return (in + 2 * p - d * (kernel - 1) - 1) / s + 1;
}
std::int64_t pool_out(std::int64_t in, int kernel, int s, int p) { return (in + 2 * p - kernel) / s + 1; }

}  // namespace

std::int64_t Scaler::count(std::int64_t value) const {
  if (full()) return value;
  return std::max<std::int64_t>(1, std::llround(static_cast<double>(value) * scale_));
}

std::int64_t Scaler::width(std::int64_t value, std::int64_t multiple) const {
  if (full()) return value;
  const double units = static_cast<double>(value) * scale_ / static_cast<double>(multiple);
  return std::max<std::int64_t>(1, std::llround(units)) * multiple;
}

Bytes GraphBuilder::row_size(DataType type, std::int64_t n) {
  const auto traits = data_type_traits(type).value_or(DataTypeTraits{"", 1, 1});
  return traits.type_size * static_cast<Bytes>(n) / static_cast<Bytes>(traits.block_size);
}

std::int64_t GraphBuilder::nelements(T t) const { return elements(graph_[t].ne); }

void GraphBuilder::check(bool ok, std::string_view op, const std::string& detail) {
  if (ok || !error_.empty()) return;
  error_ = std::string(op) + ": " + detail;
}

std::string GraphBuilder::describe(T t) const {
  const Tensor& tensor = graph_[t];
  return "'" + tensor.name + "' " + std::string(data_type_name(tensor.type)) + " " + shape_text(tensor.ne);
}

// ggml_is_contiguous (ggml_is_contiguous_n with n = 0): dimensions of size 1 may have any stride.
bool GraphBuilder::contiguous(T t) const {
  const Tensor& tensor = graph_[t];
  const auto traits = data_type_traits(tensor.type).value_or(DataTypeTraits{"", 1, 1});
  Bytes next = traits.type_size;
  if (tensor.ne[0] != traits.block_size && tensor.nb[0] != next) return false;
  next *= static_cast<Bytes>(tensor.ne[0] / traits.block_size);
  for (int i = 1; i < kMaxDims; ++i) {
    if (tensor.ne[i] == 1) continue;
    if (tensor.nb[i] != next) return false;
    next *= static_cast<Bytes>(tensor.ne[i]);
  }
  return true;
}

GraphBuilder::T GraphBuilder::push(Tensor tensor, OpInfo info) {
  const T id = graph_.add(std::move(tensor));
  info_.push_back(info);
  visited_.push_back(0);
  return id;
}

GraphBuilder::T GraphBuilder::compute(std::string name, Op op, DataType type, const Shape& ne,
                                      std::initializer_list<T> sources, OpInfo info) {
  Tensor t;
  t.name = std::move(name);
  t.type = type;
  t.ne = ne;
  t.nb = contiguous_strides(type, ne);
  t.op = op;
  std::size_t i = 0;
  for (T s : sources) {
    if (i < t.src.size()) t.src[i++] = s;
  }
  return push(std::move(t), info);
}

GraphBuilder::T GraphBuilder::view_of(T a, std::string name, Op op, Bytes offset, const Shape& ne, const Strides& nb,
                                      OpInfo info) {
  Tensor t = graph_.new_view(std::move(name), op, a, offset, {ne[0], ne[1], ne[2], ne[3]});
  t.nb = nb;
  return push(std::move(t), info);
}

GraphBuilder::T GraphBuilder::inplace_view(T a, Op op, std::initializer_list<T> sources, OpInfo info) {
  const Tensor& source = graph_[a];
  const Shape ne = source.ne;
  const Strides nb = source.nb;
  const T id = view_of(a, source.name + " (view)", op, 0, ne, nb, info);
  Tensor& t = graph_[id];
  t.src.fill(kNoTensor);
  std::size_t i = 0;
  for (T s : sources) {
    if (i < t.src.size()) t.src[i++] = s;
  }
  return id;
}

GraphBuilder::T GraphBuilder::dup_op(T a, Op op, std::initializer_list<T> sources, OpInfo info) {
  const DataType type = graph_[a].type;
  const Shape ne = graph_[a].ne;
  return compute({}, op, type, ne, sources, info);
}

// ---- the mirror ---------------------------------------------------------------------------

GraphBuilder::T GraphBuilder::emit(const Scope& scope, T result, BuilderCall call) {
  // After a shape error the graph is wrong: a mirror replaying it would fail on its own.
  if (scope.outer() && mirror_ != nullptr && error_.empty()) {
    call.result = result;
    mirror_->on_call(call);
  }
  return result;
}

BuilderCall GraphBuilder::call_of(BuilderFn fn, std::initializer_list<T> tensors,
                                  std::initializer_list<std::int64_t> ints) {
  BuilderCall call;
  call.fn = fn;
  std::size_t i = 0;
  for (T t : tensors) {
    if (i < call.tensors.size()) call.tensors[i++] = t;
  }
  i = 0;
  for (std::int64_t n : ints) {
    if (i < call.ints.size()) call.ints[i++] = n;
  }
  return call;
}

namespace {

BuilderCall with_type(BuilderCall call, DataType type) {
  call.type = type;
  return call;
}
BuilderCall with_unary(BuilderCall call, UnaryOp op) {
  call.unary = op;
  return call;
}

}  // namespace

// ---- tensors without an op ----------------------------------------------------------------

GraphBuilder::T GraphBuilder::weight(std::string name, DataType type, std::initializer_list<std::int64_t> ne) {
  const Scope scope(*this);
  const Shape shape = shape_of(ne);
  const auto traits = data_type_traits(type).value_or(DataTypeTraits{"", 1, 1});
  check(shape[0] % traits.block_size == 0, "weight",
        name + ": ne[0] = " + std::to_string(shape[0]) + " is not a multiple of the block size");
  const T id = compute(std::move(name), Op::None, type, shape, {});
  graph_[id].has_memory = true;
  BuilderCall call = with_type(call_of(BuilderFn::kWeight, {}, {shape[0], shape[1], shape[2], shape[3]}), type);
  call.name = graph_[id].name;
  return emit(scope, id, call);
}

GraphBuilder::T GraphBuilder::input(std::string name, DataType type, std::initializer_list<std::int64_t> ne) {
  const Scope scope(*this);
  const Shape shape = shape_of(ne);
  const T id = compute(std::move(name), Op::None, type, shape, {});
  graph_[id].flags |= kFlagInput;
  BuilderCall call = with_type(call_of(BuilderFn::kInput, {}, {shape[0], shape[1], shape[2], shape[3]}), type);
  call.name = graph_[id].name;
  return emit(scope, id, call);
}

GraphBuilder::T GraphBuilder::param(std::string name, std::initializer_list<std::int64_t> ne) {
  const Scope scope(*this);
  const Shape shape = shape_of(ne);
  const T id = weight(std::move(name), DataType::F32, ne);
  graph_[id].flags |= kFlagParam;
  BuilderCall call = call_of(BuilderFn::kParam, {}, {shape[0], shape[1], shape[2], shape[3]});
  call.name = graph_[id].name;
  return emit(scope, id, call);
}

GraphBuilder::T GraphBuilder::new_tensor(DataType type, std::initializer_list<std::int64_t> ne, std::string name) {
  const Scope scope(*this);
  const Shape shape = shape_of(ne);
  const T id = compute(std::move(name), Op::None, type, shape, {});
  BuilderCall call = with_type(call_of(BuilderFn::kNewTensor, {}, {shape[0], shape[1], shape[2], shape[3]}), type);
  call.name = graph_[id].name;
  return emit(scope, id, call);
}

// ---- element-wise -------------------------------------------------------------------------

GraphBuilder::T GraphBuilder::add(T a, T b) {
  const Scope scope(*this);
  check(can_repeat(graph_[b].ne, graph_[a].ne), "add", describe(b) + " does not repeat to " + describe(a));
  return emit(scope, dup_op(a, Op::Add, {a, b}), call_of(BuilderFn::kAdd, {a, b}));
}

GraphBuilder::T GraphBuilder::add_inplace(T a, T b) {
  const Scope scope(*this);
  check(can_repeat(graph_[b].ne, graph_[a].ne), "add_inplace", describe(b) + " does not repeat to " + describe(a));
  return emit(scope, inplace_view(a, Op::Add, {a, b}), call_of(BuilderFn::kAddInplace, {a, b}));
}

GraphBuilder::T GraphBuilder::mul(T a, T b) {
  const Scope scope(*this);
  check(can_repeat(graph_[b].ne, graph_[a].ne), "mul", describe(b) + " does not repeat to " + describe(a));
  return emit(scope, dup_op(a, Op::Mul, {a, b}), call_of(BuilderFn::kMul, {a, b}));
}

GraphBuilder::T GraphBuilder::mul_inplace(T a, T b) {
  const Scope scope(*this);
  check(can_repeat(graph_[b].ne, graph_[a].ne), "mul_inplace", describe(b) + " does not repeat to " + describe(a));
  return emit(scope, inplace_view(a, Op::Mul, {a, b}), call_of(BuilderFn::kMulInplace, {a, b}));
}

GraphBuilder::T GraphBuilder::scale(T a) {
  const Scope scope(*this);
  return emit(scope, dup_op(a, Op::Scale, {a}), call_of(BuilderFn::kScale, {a}));
}
GraphBuilder::T GraphBuilder::scale_inplace(T a) {
  const Scope scope(*this);
  return emit(scope, inplace_view(a, Op::Scale, {a}), call_of(BuilderFn::kScaleInplace, {a}));
}

GraphBuilder::T GraphBuilder::unary(T a, UnaryOp op) {
  const Scope scope(*this);
  OpInfo info;
  info.unary = op;
  return emit(scope, dup_op(a, Op::Unary, {a}, info), with_unary(call_of(BuilderFn::kUnary, {a}), op));
}

GraphBuilder::T GraphBuilder::unary_inplace(T a, UnaryOp op) {
  const Scope scope(*this);
  OpInfo info;
  info.unary = op;
  return emit(scope, inplace_view(a, Op::Unary, {a}, info), with_unary(call_of(BuilderFn::kUnaryInplace, {a}), op));
}

GraphBuilder::T GraphBuilder::clamp(T a) {
  const Scope scope(*this);
  return emit(scope, inplace_view(a, Op::Clamp, {a}), call_of(BuilderFn::kClamp, {a}));
}

GraphBuilder::T GraphBuilder::glu_split(T a, T b, UnaryOp act) {
  const Scope scope(*this);
  check(graph_[a].ne == graph_[b].ne, "glu_split", describe(a) + " and " + describe(b) + " differ");
  OpInfo info;
  info.unary = act;
  return emit(scope, dup_op(a, Op::Glu, {a, b}, info), with_unary(call_of(BuilderFn::kGluSplit, {a, b}), act));
}

GraphBuilder::T GraphBuilder::repeat(T a, T like) {
  const Scope scope(*this);
  check(can_repeat(graph_[a].ne, graph_[like].ne), "repeat", describe(a) + " does not repeat to " + describe(like));
  const DataType type = graph_[a].type;
  const Shape ne = graph_[like].ne;
  return emit(scope, compute({}, Op::Repeat, type, ne, {a}), call_of(BuilderFn::kRepeat, {a, like}));
}

GraphBuilder::T GraphBuilder::repeat_back(T a, T like) {
  const Scope scope(*this);
  check(can_repeat(graph_[like].ne, graph_[a].ne), "repeat_back",
        describe(like) + " does not repeat to " + describe(a));
  const DataType type = graph_[a].type;
  const Shape ne = graph_[like].ne;
  return emit(scope, compute({}, Op::RepeatBack, type, ne, {a}), call_of(BuilderFn::kRepeatBack, {a, like}));
}

// ---- normalisation, attention ---------------------------------------------------------------

GraphBuilder::T GraphBuilder::norm(T a) {
  const Scope scope(*this);
  return emit(scope, dup_op(a, Op::Norm, {a}), call_of(BuilderFn::kNorm, {a}));
}
GraphBuilder::T GraphBuilder::rms_norm(T a) {
  const Scope scope(*this);
  return emit(scope, dup_op(a, Op::RmsNorm, {a}), call_of(BuilderFn::kRmsNorm, {a}));
}

GraphBuilder::T GraphBuilder::group_norm(T a, std::int64_t n_groups) {
  const Scope scope(*this);
  check(n_groups > 0 && graph_[a].ne[2] % n_groups == 0, "group_norm",
        describe(a) + " has channels not divisible into " + std::to_string(n_groups) + " groups");
  return emit(scope, dup_op(a, Op::GroupNorm, {a}), call_of(BuilderFn::kGroupNorm, {a}, {n_groups}));
}

GraphBuilder::T GraphBuilder::soft_max(T a) {
  const Scope scope(*this);
  return emit(scope, dup_op(a, Op::SoftMax, {a}), call_of(BuilderFn::kSoftMax, {a}));
}
GraphBuilder::T GraphBuilder::soft_max_inplace(T a) {
  const Scope scope(*this);
  return emit(scope, inplace_view(a, Op::SoftMax, {a}), call_of(BuilderFn::kSoftMaxInplace, {a}));
}

GraphBuilder::T GraphBuilder::soft_max_ext(T a, T mask) {
  const Scope scope(*this);
  if (mask != kNoTensor) {
    const Tensor& m = graph_[mask];
    const Tensor& x = graph_[a];
    check((m.type == DataType::F16 || m.type == DataType::F32) && m.ne[0] == x.ne[0] && m.ne[1] >= x.ne[1] &&
              x.ne[2] % m.ne[2] == 0 && x.ne[3] % m.ne[3] == 0,
          "soft_max_ext", "mask " + describe(mask) + " does not fit " + describe(a));
  }
  return emit(scope, dup_op(a, Op::SoftMax, {a, mask}), call_of(BuilderFn::kSoftMaxExt, {a, mask}));
}

GraphBuilder::T GraphBuilder::diag_mask_inf(T a) {
  const Scope scope(*this);
  return emit(scope, dup_op(a, Op::DiagMaskInf, {a}), call_of(BuilderFn::kDiagMaskInf, {a}));
}
GraphBuilder::T GraphBuilder::diag_mask_inf_inplace(T a) {
  const Scope scope(*this);
  return emit(scope, inplace_view(a, Op::DiagMaskInf, {a}), call_of(BuilderFn::kDiagMaskInfInplace, {a}));
}

GraphBuilder::T GraphBuilder::rope(T a, T positions, T freq_factors) {
  const Scope scope(*this);
  const Tensor& p = graph_[positions];
  check(p.type == DataType::I32 && p.ne[0] == graph_[a].ne[2], "rope",
        "positions " + describe(positions) + " do not match " + describe(a));
  check(graph_[a].ne[0] % 2 == 0, "rope", describe(a) + " has an odd head size");
  return emit(scope, dup_op(a, Op::Rope, {a, positions, freq_factors}),
              call_of(BuilderFn::kRope, {a, positions, freq_factors}));
}

GraphBuilder::T GraphBuilder::flash_attn_ext(T q, T k, T v, T mask) {
  const Scope scope(*this);
  const Tensor& Q = graph_[q];
  const Tensor& K = graph_[k];
  const Tensor& V = graph_[v];
  check(Q.ne[0] == K.ne[0] && K.ne[1] == V.ne[1] && K.ne[2] == V.ne[2] && Q.ne[2] % K.ne[2] == 0 &&
            Q.ne[3] % K.ne[3] == 0,
        "flash_attn_ext", describe(q) + ", " + describe(k) + " and " + describe(v) + " do not fit");
  if (mask != kNoTensor) {
    const Tensor& m = graph_[mask];
    check(m.type == DataType::F16 && m.ne[0] == K.ne[1] && m.ne[1] >= Q.ne[1], "flash_attn_ext",
          "mask " + describe(mask) + " does not fit " + describe(q) + " and " + describe(k));
  }
  // [n_embd_v, n_head, n_batch, n_seq]: permuted so the result reshapes into [n_embd, n_batch].
  const Shape ne{V.ne[0], Q.ne[2], Q.ne[1], Q.ne[3]};
  return emit(scope, compute({}, Op::FlashAttnExt, DataType::F32, ne, {q, k, v, mask}),
              call_of(BuilderFn::kFlashAttnExt, {q, k, v, mask}));
}

// ---- matrix products, gathers -----------------------------------------------------------------

GraphBuilder::T GraphBuilder::mul_mat(T a, T b) {
  const Scope scope(*this);
  const Tensor& A = graph_[a];
  const Tensor& B = graph_[b];
  check(A.ne[0] == B.ne[0] && B.ne[2] % A.ne[2] == 0 && B.ne[3] % A.ne[3] == 0, "mul_mat",
        describe(a) + " x " + describe(b));
  check(!(A.nb[0] > A.nb[1]), "mul_mat", describe(a) + " is transposed");
  const Shape ne{A.ne[1], B.ne[1], B.ne[2], B.ne[3]};
  return emit(scope, compute({}, Op::MulMat, DataType::F32, ne, {a, b}), call_of(BuilderFn::kMulMat, {a, b}));
}

GraphBuilder::T GraphBuilder::out_prod(T a, T b) {
  const Scope scope(*this);
  const Tensor& A = graph_[a];
  const Tensor& B = graph_[b];
  check(A.ne[1] == B.ne[1] && B.ne[2] % A.ne[2] == 0 && B.ne[3] % A.ne[3] == 0, "out_prod",
        describe(a) + " x " + describe(b));
  const Shape ne{A.ne[0], B.ne[0], B.ne[2], B.ne[3]};
  return emit(scope, compute({}, Op::OutProd, DataType::F32, ne, {a, b}), call_of(BuilderFn::kOutProd, {a, b}));
}

GraphBuilder::T GraphBuilder::get_rows(T a, T rows) {
  const Scope scope(*this);
  const Tensor& A = graph_[a];
  const Tensor& R = graph_[rows];
  check(R.type == DataType::I32 && A.ne[2] == R.ne[1] && R.ne[3] == 1, "get_rows",
        describe(rows) + " does not index " + describe(a));
  const DataType type = A.type == DataType::I32 ? DataType::I32 : DataType::F32;
  const Shape ne{A.ne[0], R.ne[0], R.ne[1], R.ne[2]};
  return emit(scope, compute({}, Op::GetRows, type, ne, {a, rows}), call_of(BuilderFn::kGetRows, {a, rows}));
}

// ggml_set_rows: a view of dst whose sources are {src, rows, dst} (ggml's order, "for legacy
// reasons"): dst is a source, so a reshaped cache view becomes a node of the graph.
GraphBuilder::T GraphBuilder::set_rows(T dst, T src, T rows) {
  const Scope scope(*this);
  const Tensor& D = graph_[dst];
  const Tensor& S = graph_[src];
  const Tensor& R = graph_[rows];
  check(D.ne[0] == S.ne[0] && D.ne[2] == S.ne[2] && D.ne[3] == S.ne[3] && S.ne[1] == R.ne[0] &&
            S.type == DataType::F32 && (R.type == DataType::I64 || R.type == DataType::I32),
        "set_rows", describe(src) + " rows " + describe(rows) + " into " + describe(dst));
  return emit(scope, inplace_view(dst, Op::SetRows, {src, rows, dst}), call_of(BuilderFn::kSetRows, {dst, src, rows}));
}

GraphBuilder::T GraphBuilder::concat(T a, T b, int dim) {
  const Scope scope(*this);
  const Tensor& A = graph_[a];
  const Tensor& B = graph_[b];
  bool fits = A.type == B.type && dim >= 0 && dim < kMaxDims;
  for (int i = 0; i < kMaxDims && fits; ++i) {
    if (i != dim && A.ne[i] != B.ne[i]) fits = false;
  }
  check(fits, "concat", describe(a) + " and " + describe(b) + " along " + std::to_string(dim));
  Shape ne = A.ne;
  if (dim >= 0 && dim < kMaxDims) ne[static_cast<std::size_t>(dim)] += B.ne[static_cast<std::size_t>(dim)];
  const DataType type = A.type;
  return emit(scope, compute({}, Op::Concat, type, ne, {a, b}), call_of(BuilderFn::kConcat, {a, b}, {dim}));
}

GraphBuilder::T GraphBuilder::argmax(T a) {
  const Scope scope(*this);
  const std::int64_t rows = graph_[a].ne[1];
  return emit(scope, compute({}, Op::Argmax, DataType::I32, {rows, 1, 1, 1}, {a}), call_of(BuilderFn::kArgmax, {a}));
}

GraphBuilder::T GraphBuilder::count_equal(T a, T b) {
  const Scope scope(*this);
  check(graph_[a].ne == graph_[b].ne, "count_equal", describe(a) + " and " + describe(b) + " differ");
  return emit(scope, compute({}, Op::CountEqual, DataType::I64, {1, 1, 1, 1}, {a, b}),
              call_of(BuilderFn::kCountEqual, {a, b}));
}

// ---- copies -------------------------------------------------------------------------------------

GraphBuilder::T GraphBuilder::cont(T a) {
  const Scope scope(*this);
  const DataType type = graph_[a].type;
  const Shape ne = graph_[a].ne;
  return emit(scope, compute(graph_[a].name + " (cont)", Op::Cont, type, ne, {a}), call_of(BuilderFn::kCont, {a}));
}

GraphBuilder::T GraphBuilder::cont_2d(T a, std::int64_t ne0, std::int64_t ne1) {
  const Scope scope(*this);
  return emit(scope, cont_3d(a, ne0, ne1, 1), call_of(BuilderFn::kCont2d, {a}, {ne0, ne1}));
}

GraphBuilder::T GraphBuilder::cont_3d(T a, std::int64_t ne0, std::int64_t ne1, std::int64_t ne2) {
  const Scope scope(*this);
  const Shape ne{ne0, ne1, ne2, 1};
  check(elements(ne) == nelements(a), "cont", describe(a) + " into " + shape_text(ne));
  const DataType type = graph_[a].type;
  return emit(scope, compute(graph_[a].name + " (cont)", Op::Cont, type, ne, {a}),
              call_of(BuilderFn::kCont3d, {a}, {ne0, ne1, ne2}));
}

GraphBuilder::T GraphBuilder::cpy(T a, T dst) {
  const Scope scope(*this);
  check(nelements(a) == nelements(dst), "cpy", describe(a) + " into " + describe(dst));
  const T id = inplace_view(dst, Op::Cpy, {a, dst});
  graph_[id].name =
      graph_[dst].name.empty() ? graph_[a].name + " (copy)" : graph_[dst].name + " (copy of " + graph_[a].name + ")";
  return emit(scope, id, call_of(BuilderFn::kCpy, {a, dst}));
}

GraphBuilder::T GraphBuilder::cast(T a, DataType type) {
  const Scope scope(*this);
  const Shape ne = graph_[a].ne;
  return emit(scope, compute(graph_[a].name + " (copy)", Op::Cpy, type, ne, {a}),
              with_type(call_of(BuilderFn::kCast, {a}), type));
}

// ---- views ------------------------------------------------------------------------------------

GraphBuilder::T GraphBuilder::view_tensor(T a) {
  const Scope scope(*this);
  return emit(scope, inplace_view(a, Op::None, {}), call_of(BuilderFn::kViewTensor, {a}));
}

GraphBuilder::T GraphBuilder::view_1d(T a, std::int64_t ne0, Bytes offset) {
  const Scope scope(*this);
  const Shape ne{ne0, 1, 1, 1};
  const Strides nb = contiguous_strides(graph_[a].type, ne);
  return emit(scope, view_of(a, graph_[a].name + " (view)", Op::View, offset, ne, nb),
              call_of(BuilderFn::kView1d, {a}, {ne0, static_cast<std::int64_t>(offset)}));
}

GraphBuilder::T GraphBuilder::view_2d(T a, std::int64_t ne0, std::int64_t ne1, Bytes nb1, Bytes offset) {
  const Scope scope(*this);
  const Shape ne{ne0, ne1, 1, 1};
  Strides nb = contiguous_strides(graph_[a].type, ne);
  nb[1] = nb1;
  nb[2] = nb[1] * static_cast<Bytes>(ne1);
  nb[3] = nb[2];
  return emit(
      scope, view_of(a, graph_[a].name + " (view)", Op::View, offset, ne, nb),
      call_of(BuilderFn::kView2d, {a}, {ne0, ne1, static_cast<std::int64_t>(nb1), static_cast<std::int64_t>(offset)}));
}

GraphBuilder::T GraphBuilder::view_3d(T a, std::int64_t ne0, std::int64_t ne1, std::int64_t ne2, Bytes nb1, Bytes nb2,
                                      Bytes offset) {
  const Scope scope(*this);
  const Shape ne{ne0, ne1, ne2, 1};
  Strides nb = contiguous_strides(graph_[a].type, ne);
  nb[1] = nb1;
  nb[2] = nb2;
  nb[3] = nb[2] * static_cast<Bytes>(ne2);
  return emit(scope, view_of(a, graph_[a].name + " (view)", Op::View, offset, ne, nb),
              call_of(BuilderFn::kView3d, {a},
                      {ne0, ne1, ne2, static_cast<std::int64_t>(nb1), static_cast<std::int64_t>(nb2),
                       static_cast<std::int64_t>(offset)}));
}

GraphBuilder::T GraphBuilder::view_4d(T a, std::int64_t ne0, std::int64_t ne1, std::int64_t ne2, std::int64_t ne3,
                                      Bytes nb1, Bytes nb2, Bytes nb3, Bytes offset) {
  const Scope scope(*this);
  const Shape ne{ne0, ne1, ne2, ne3};
  Strides nb = contiguous_strides(graph_[a].type, ne);
  nb[1] = nb1;
  nb[2] = nb2;
  nb[3] = nb3;
  return emit(scope, view_of(a, graph_[a].name + " (view)", Op::View, offset, ne, nb),
              call_of(BuilderFn::kView4d, {a},
                      {ne0, ne1, ne2, ne3, static_cast<std::int64_t>(nb1), static_cast<std::int64_t>(nb2),
                       static_cast<std::int64_t>(nb3), static_cast<std::int64_t>(offset)}));
}

GraphBuilder::T GraphBuilder::reshape_to(T a, const Shape& ne) {
  check(contiguous(a), "reshape", describe(a) + " is not contiguous");
  check(elements(ne) == nelements(a), "reshape", describe(a) + " into " + shape_text(ne));
  const Strides nb = contiguous_strides(graph_[a].type, ne);
  return view_of(a, graph_[a].name + " (reshaped)", Op::Reshape, 0, ne, nb);
}

GraphBuilder::T GraphBuilder::reshape_1d(T a, std::int64_t ne0) {
  const Scope scope(*this);
  return emit(scope, reshape_to(a, {ne0, 1, 1, 1}), call_of(BuilderFn::kReshape1d, {a}, {ne0}));
}
GraphBuilder::T GraphBuilder::reshape_2d(T a, std::int64_t ne0, std::int64_t ne1) {
  const Scope scope(*this);
  return emit(scope, reshape_to(a, {ne0, ne1, 1, 1}), call_of(BuilderFn::kReshape2d, {a}, {ne0, ne1}));
}
GraphBuilder::T GraphBuilder::reshape_3d(T a, std::int64_t ne0, std::int64_t ne1, std::int64_t ne2) {
  const Scope scope(*this);
  return emit(scope, reshape_to(a, {ne0, ne1, ne2, 1}), call_of(BuilderFn::kReshape3d, {a}, {ne0, ne1, ne2}));
}
GraphBuilder::T GraphBuilder::reshape_4d(T a, std::int64_t ne0, std::int64_t ne1, std::int64_t ne2, std::int64_t ne3) {
  const Scope scope(*this);
  return emit(scope, reshape_to(a, {ne0, ne1, ne2, ne3}), call_of(BuilderFn::kReshape4d, {a}, {ne0, ne1, ne2, ne3}));
}
GraphBuilder::T GraphBuilder::reshape_like(T a, T like) {
  const Scope scope(*this);
  const Shape ne = graph_[like].ne;
  return emit(scope, reshape_to(a, ne), call_of(BuilderFn::kReshapeLike, {a, like}));
}

GraphBuilder::T GraphBuilder::permute(T a, int axis0, int axis1, int axis2, int axis3) {
  const Scope scope(*this);
  const std::array<int, kMaxDims> axes{axis0, axis1, axis2, axis3};
  bool distinct = true;
  for (int i = 0; i < kMaxDims; ++i) {
    if (axes[i] < 0 || axes[i] >= kMaxDims) distinct = false;
    for (int j = 0; j < i; ++j) {
      if (axes[i] == axes[j]) distinct = false;
    }
  }
  check(distinct, "permute", "axes of " + describe(a) + " are not a permutation");
  if (!distinct) return a;
  const Tensor& source = graph_[a];
  Shape ne{};
  Strides nb{};
  for (int i = 0; i < kMaxDims; ++i) {
    ne[static_cast<std::size_t>(axes[i])] = source.ne[i];
    nb[static_cast<std::size_t>(axes[i])] = source.nb[i];
  }
  OpInfo info;
  info.axes = axes;
  return emit(scope, view_of(a, source.name + " (permuted)", Op::Permute, 0, ne, nb, info),
              call_of(BuilderFn::kPermute, {a}, {axis0, axis1, axis2, axis3}));
}

GraphBuilder::T GraphBuilder::transpose(T a) {
  const Scope scope(*this);
  const Tensor& source = graph_[a];
  Shape ne = source.ne;
  Strides nb = source.nb;
  std::swap(ne[0], ne[1]);
  std::swap(nb[0], nb[1]);
  OpInfo info;
  info.axes = {1, 0, 2, 3};
  return emit(scope, view_of(a, source.name + " (transposed)", Op::Transpose, 0, ne, nb, info),
              call_of(BuilderFn::kTranspose, {a}));
}

// ---- convolution, pooling, images -------------------------------------------------------------

GraphBuilder::T GraphBuilder::im2col(T kernel, T data, int s0, int s1, int p0, int p1, int d0, int d1, bool is_2d,
                                     DataType dst_type) {
  const Scope scope(*this);
  const Tensor& a = graph_[kernel];
  const Tensor& b = graph_[data];
  if (is_2d) {
    check(a.ne[2] == b.ne[2], "im2col", describe(kernel) + " does not fit " + describe(data));
  } else {
    check(a.ne[1] == b.ne[1] && b.ne[3] == 1, "im2col", describe(kernel) + " does not fit " + describe(data));
  }
  const std::int64_t oh = is_2d ? conv_out(b.ne[1], a.ne[1], s1, p1, d1) : 0;
  const std::int64_t ow = conv_out(b.ne[0], a.ne[0], s0, p0, d0);
  check(ow > 0 && (!is_2d || oh > 0), "im2col", describe(data) + " is smaller than the kernel");
  const Shape ne{is_2d ? a.ne[2] * a.ne[1] * a.ne[0] : a.ne[1] * a.ne[0], ow, is_2d ? oh : b.ne[2],
                 is_2d ? b.ne[3] : 1};
  BuilderCall call = with_type(call_of(BuilderFn::kIm2col, {kernel, data}, {s0, s1, p0, p1, d0, d1}), dst_type);
  call.is_2d = is_2d;
  return emit(scope, compute({}, Op::Im2col, dst_type, ne, {kernel, data}), call);
}

GraphBuilder::T GraphBuilder::conv_1d(T kernel, T data, int s0, int p0, int d0) {
  const Scope scope(*this);
  const T cols = im2col(kernel, data, s0, 0, p0, 0, d0, 0, false, DataType::F16);  // [N, OL, IC*K]
  const Tensor& c = graph_[cols];
  const Shape cne = c.ne;
  const Shape kne = graph_[kernel].ne;
  // (sequenced: the order of tensor ids must not depend on the compiler)
  const T cols_2d = reshape_2d(cols, cne[0], cne[2] * cne[1]);      // [N*OL, IC*K]
  const T kernel_2d = reshape_2d(kernel, kne[0] * kne[1], kne[2]);  // [OC, IC*K]
  const T result = mul_mat(cols_2d, kernel_2d);
  return emit(scope, reshape_3d(result, cne[1], kne[2], cne[2]),  // [N, OC, OL]
              call_of(BuilderFn::kConv1d, {kernel, data}, {s0, p0, d0}));
}

GraphBuilder::T GraphBuilder::conv_1d_ph(T kernel, T data, int s, int d) {
  const Scope scope(*this);
  return emit(scope, conv_1d(kernel, data, s, static_cast<int>(graph_[kernel].ne[0] / 2), d),
              call_of(BuilderFn::kConv1dPh, {kernel, data}, {s, d}));
}

GraphBuilder::T GraphBuilder::conv_im2col_2d(T kernel, T data, int s0, int s1, int p0, int p1, int d0, int d1) {
  const DataType type = graph_[kernel].type;
  const T cols = im2col(kernel, data, s0, s1, p0, p1, d0, d1, true, type);  // [N, OH, OW, IC*KH*KW]
  const Shape cne = graph_[cols].ne;
  const Shape kne = graph_[kernel].ne;
  const T cols_2d = reshape_2d(cols, cne[0], cne[3] * cne[2] * cne[1]);      // [N*OH*OW, IC*KH*KW]
  const T kernel_2d = reshape_2d(kernel, kne[0] * kne[1] * kne[2], kne[3]);  // [OC, IC*KH*KW]
  const T result = mul_mat(cols_2d, kernel_2d);
  return reshape_4d(result, cne[1], cne[2], cne[3], kne[3]);  // [OC, N, OH, OW]
}

GraphBuilder::T GraphBuilder::conv_2d(T kernel, T data, int s0, int s1, int p0, int p1, int d0, int d1) {
  const Scope scope(*this);
  const T result = conv_im2col_2d(kernel, data, s0, s1, p0, p1, d0, d1);
  return emit(scope, cont(permute(result, 0, 1, 3, 2)),  // [N, OC, OH, OW]
              call_of(BuilderFn::kConv2d, {kernel, data}, {s0, s1, p0, p1, d0, d1}));
}

GraphBuilder::T GraphBuilder::conv_2d_direct(T kernel, T data, int s0, int s1, int p0, int p1, int d0, int d1) {
  const Scope scope(*this);
  const Tensor& a = graph_[kernel];
  const Tensor& b = graph_[data];
  check(a.ne[2] == b.ne[2], "conv_2d_direct", describe(kernel) + " does not fit " + describe(data));
  const Shape ne{conv_out(b.ne[0], a.ne[0], s0, p0, d0), conv_out(b.ne[1], a.ne[1], s1, p1, d1), a.ne[3], b.ne[3]};
  return emit(scope, compute({}, Op::Conv2d, DataType::F32, ne, {kernel, data}),
              call_of(BuilderFn::kConv2dDirect, {kernel, data}, {s0, s1, p0, p1, d0, d1}));
}

GraphBuilder::T GraphBuilder::conv_2d_dw_direct(T kernel, T data, int s0, int s1, int p0, int p1, int d0, int d1) {
  const Scope scope(*this);
  const Tensor& a = graph_[kernel];
  const Tensor& b = graph_[data];
  check(a.ne[2] == 1 && a.ne[3] == b.ne[2], "conv_2d_dw_direct", describe(kernel) + " does not fit " + describe(data));
  const Shape ne{conv_out(b.ne[0], a.ne[0], s0, p0, d0), conv_out(b.ne[1], a.ne[1], s1, p1, d1), b.ne[2], b.ne[3]};
  const DataType type = b.type;
  return emit(scope, compute({}, Op::Conv2dDw, type, ne, {kernel, data}),
              call_of(BuilderFn::kConv2dDwDirect, {kernel, data}, {s0, s1, p0, p1, d0, d1}));
}

GraphBuilder::T GraphBuilder::pool_2d(T a, PoolOp op, int k0, int k1, int s0, int s1, int p0, int p1) {
  const Scope scope(*this);
  const Tensor& x = graph_[a];
  const Shape ne{pool_out(x.ne[0], k0, s0, p0), pool_out(x.ne[1], k1, s1, p1), x.ne[2], x.ne[3]};
  check(ne[0] > 0 && ne[1] > 0, "pool_2d", describe(a) + " is smaller than the window");
  BuilderCall call = call_of(BuilderFn::kPool2d, {a}, {k0, k1, s0, s1, p0, p1});
  call.pool = op;
  return emit(scope, compute({}, Op::Pool2d, DataType::F32, ne, {a}), call);
}

GraphBuilder::T GraphBuilder::upscale(T a, int factor) {
  const Scope scope(*this);
  const Tensor& x = graph_[a];
  const Shape ne{x.ne[0] * factor, x.ne[1] * factor, x.ne[2], x.ne[3]};
  const DataType type = x.type;
  return emit(scope, compute({}, Op::Upscale, type, ne, {a}), call_of(BuilderFn::kUpscale, {a}, {factor}));
}

GraphBuilder::T GraphBuilder::timestep_embedding(T timesteps, std::int64_t dim) {
  const Scope scope(*this);
  const std::int64_t n = graph_[timesteps].ne[0];
  return emit(scope, compute({}, Op::TimestepEmbedding, DataType::F32, {dim + dim % 2, n, 1, 1}, {timesteps}),
              call_of(BuilderFn::kTimestepEmbedding, {timesteps}, {dim}));
}

// ---- training -----------------------------------------------------------------------------------

GraphBuilder::T GraphBuilder::cross_entropy_loss(T logits, T labels) {
  const Scope scope(*this);
  check(graph_[logits].ne == graph_[labels].ne, "cross_entropy_loss",
        describe(logits) + " and " + describe(labels) + " differ");
  const DataType type = graph_[logits].type;
  return emit(scope, compute({}, Op::CrossEntropyLoss, type, {1, 1, 1, 1}, {logits, labels}),
              call_of(BuilderFn::kCrossEntropyLoss, {logits, labels}));
}

GraphBuilder::T GraphBuilder::cross_entropy_loss_back(T grad, T logits, T labels) {
  const Scope scope(*this);
  check(nelements(grad) == 1, "cross_entropy_loss_back", describe(grad) + " is not a scalar");
  return emit(scope, dup_op(logits, Op::CrossEntropyLossBack, {grad, logits, labels}),
              call_of(BuilderFn::kCrossEntropyLossBack, {grad, logits, labels}));
}

GraphBuilder::T GraphBuilder::silu_back(T grad, T x) {
  const Scope scope(*this);
  check(graph_[grad].ne == graph_[x].ne, "silu_back", describe(grad) + " and " + describe(x) + " differ");
  return emit(scope, dup_op(grad, Op::SiluBack, {grad, x}), call_of(BuilderFn::kSiluBack, {grad, x}));
}

GraphBuilder::T GraphBuilder::rms_norm_back(T grad, T x) {
  const Scope scope(*this);
  check(graph_[grad].ne == graph_[x].ne, "rms_norm_back", describe(grad) + " and " + describe(x) + " differ");
  return emit(scope, dup_op(grad, Op::RmsNormBack, {grad, x}), call_of(BuilderFn::kRmsNormBack, {grad, x}));
}

GraphBuilder::T GraphBuilder::soft_max_ext_back(T grad, T y) {
  const Scope scope(*this);
  check(graph_[grad].ne == graph_[y].ne, "soft_max_ext_back", describe(grad) + " and " + describe(y) + " differ");
  return emit(scope, dup_op(grad, Op::SoftMaxBack, {grad, y}), call_of(BuilderFn::kSoftMaxExtBack, {grad, y}));
}

GraphBuilder::T GraphBuilder::rope_back(T grad, T positions) {
  const Scope scope(*this);
  check(graph_[positions].ne[0] == graph_[grad].ne[2], "rope_back",
        "positions " + describe(positions) + " do not match " + describe(grad));
  return emit(scope, dup_op(grad, Op::RopeBack, {grad, positions}), call_of(BuilderFn::kRopeBack, {grad, positions}));
}

GraphBuilder::T GraphBuilder::get_rows_back(T grad, T rows, T like) {
  const Scope scope(*this);
  const Shape ne{graph_[like].ne[0], graph_[like].ne[1], 1, 1};
  check(graph_[grad].ne[0] == ne[0] && graph_[grad].ne[1] == graph_[rows].ne[0], "get_rows_back",
        describe(grad) + " does not fit " + describe(like));
  return emit(scope, compute({}, Op::GetRowsBack, DataType::F32, ne, {grad, rows}),
              call_of(BuilderFn::kGetRowsBack, {grad, rows, like}));
}

GraphBuilder::T GraphBuilder::opt_step_adamw(T param, T grad, T m, T v, T adamw_params) {
  const Scope scope(*this);
  const Shape ne = graph_[param].ne;
  check(graph_[grad].ne == ne && graph_[m].ne == ne && graph_[v].ne == ne && nelements(adamw_params) == 7,
        "opt_step_adamw", "the gradient and moments of " + describe(param) + " differ from it");
  return emit(scope, inplace_view(param, Op::OptStepAdamw, {param, grad, m, v, adamw_params}),
              call_of(BuilderFn::kOptStepAdamw, {param, grad, m, v, adamw_params}));
}

// ---- graph --------------------------------------------------------------------------------------

GraphBuilder::T GraphBuilder::name(T t, std::string_view name, int layer) {
  const Scope scope(*this);
  graph_[t].name = layer >= 0 ? std::string(name) + "-" + std::to_string(layer) : std::string(name);
  BuilderCall call = call_of(BuilderFn::kName, {t});
  call.name = graph_[t].name;
  return emit(scope, t, call);
}

void GraphBuilder::set_output(T t) {
  const Scope scope(*this);
  graph_[t].flags |= kFlagOutput;
  emit(scope, kNoTensor, call_of(BuilderFn::kSetOutput, {t}));
}

void GraphBuilder::set_loss(T t) {
  const Scope scope(*this);
  graph_[t].flags |= kFlagLoss;
  emit(scope, kNoTensor, call_of(BuilderFn::kSetLoss, {t}));
}

void GraphBuilder::expand(T root) {
  const Scope scope(*this);
  emit(scope, kNoTensor, call_of(BuilderFn::kExpand, {root}));
  expand_graph(root);
}

void GraphBuilder::expand_graph(T root) {
  if (visited_[static_cast<std::size_t>(root)]) return;
  // Depth first, sources in order, post-order lists: ggml_visit_parents without recursion.
  struct Frame {
    T id;
    int next_source;
  };
  std::vector<Frame> stack;
  stack.push_back({root, 0});
  visited_[static_cast<std::size_t>(root)] = 1;
  while (!stack.empty()) {
    const T id = stack.back().id;
    int& next = stack.back().next_source;
    T child = kNoTensor;
    while (next < kMaxSources && child == kNoTensor) {
      const T s = graph_[id].src[static_cast<std::size_t>(next++)];
      if (s != kNoTensor && !visited_[static_cast<std::size_t>(s)]) child = s;
    }
    if (child != kNoTensor) {
      visited_[static_cast<std::size_t>(child)] = 1;
      stack.push_back({child, 0});
      continue;
    }
    Tensor& t = graph_[id];
    if (t.op == Op::None && (t.flags & kFlagParam) == 0) {
      if (t.name.empty()) t.name = "leaf_" + std::to_string(graph_.leafs.size());
      graph_.leafs.push_back(id);
    } else {
      if (t.name.empty()) t.name = "node_" + std::to_string(graph_.nodes.size());
      graph_.nodes.push_back(id);
    }
    stack.pop_back();
  }
}

Result<Graph> GraphBuilder::finish() {
  if (!error_.empty()) return internal_error("zoo graph: " + error_);
  // Keep what the graph lists, plus the roots its views point into (a KV cache reached only
  // as the destination of SET_ROWS, an encoder output viewed with ggml_view_tensor).
  const std::size_t n = graph_.tensors.size();
  std::vector<char> keep(n, 0);
  for (T id : graph_.nodes) keep[static_cast<std::size_t>(id)] = 1;
  for (T id : graph_.leafs) keep[static_cast<std::size_t>(id)] = 1;
  for (std::size_t i = 0; i < n; ++i) {
    if (keep[i] && graph_.tensors[i].view_src != kNoTensor) {
      const auto root = static_cast<std::size_t>(graph_.tensors[i].view_src);
      if (!keep[root] && !(graph_.tensors[root].has_memory && graph_.tensors[root].op == Op::None)) {
        return internal_error("zoo graph: " + describe(static_cast<T>(i)) + " views " + describe(static_cast<T>(root)) +
                              ", which is neither in the graph nor existing memory");
      }
      keep[root] = 1;
    }
  }
  std::vector<T> new_id(n, kNoTensor);
  Graph out;
  for (std::size_t i = 0; i < n; ++i) {
    if (!keep[i]) continue;
    new_id[i] = static_cast<T>(out.tensors.size());
    out.tensors.push_back(std::move(graph_.tensors[i]));
  }
  for (Tensor& t : out.tensors) {
    for (T& s : t.src) {
      if (s != kNoTensor) s = new_id[static_cast<std::size_t>(s)];
    }
    if (t.view_src != kNoTensor) t.view_src = new_id[static_cast<std::size_t>(t.view_src)];
  }
  out.nodes.reserve(graph_.nodes.size());
  for (T id : graph_.nodes) out.nodes.push_back(new_id[static_cast<std::size_t>(id)]);
  out.leafs.reserve(graph_.leafs.size());
  for (T id : graph_.leafs) out.leafs.push_back(new_id[static_cast<std::size_t>(id)]);
  graph_ = Graph{};
  info_.clear();
  visited_.clear();
  return out;
}

}  // namespace galloc::zoo
