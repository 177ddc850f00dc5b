// GraphBuilder: builds a galloc::Graph the way ggml code builds a ggml_cgraph, so that the
// zoo's model files read like the ggml programs they follow. Each function is the ggml
// function of the same name: it computes the result's type, shape and strides as ggml does,
// sets the same sources, and makes the same kind of tensor (a new contiguous tensor, or a
// view whose view_src is the root of its source's view chain). expand() is
// ggml_build_forward_expand: depth first over src[0], src[1], ...; a tensor with op NONE
// that is not a parameter becomes a leaf, everything else a node, in post-order.
//
// Shape errors (a bug in a model file) do not abort: the first one is kept and finish()
// returns it as an internal error.
//
// With a BuilderMirror, every public function reports its call (see builder_mirror.hpp); a function
// that calls others (conv_2d, param) reports only itself.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "builder_mirror.hpp"
#include "galloc/graph.hpp"
#include "galloc/status.hpp"
#include "galloc/zoo.hpp"

namespace galloc::zoo {

using Shape = std::array<std::int64_t, kMaxDims>;
using Strides = std::array<Bytes, kMaxDims>;

// ZooOptions::scale applied to one dimension. At scale 1 every function returns its
// argument unchanged.
class Scaler {
 public:
  explicit Scaler(double scale) : scale_(scale) {}
  [[nodiscard]] bool full() const { return scale_ >= 1.0; }
  // Layers, heads, tokens, frames: round(value * scale), at least 1.
  [[nodiscard]] std::int64_t count(std::int64_t value) const;
  // A width that must stay a multiple of `multiple`: rounded to one, at least `multiple`.
  [[nodiscard]] std::int64_t width(std::int64_t value, std::int64_t multiple) const;

 private:
  double scale_;
};

// What the graph model does not keep about an op (ggml's op_params) but a backward pass needs
// (the unary kind: UnaryOp, in builder_mirror.hpp).
struct OpInfo {
  UnaryOp unary = UnaryOp::kNone;
  std::array<int, kMaxDims> axes{0, 1, 2, 3};  // PERMUTE / TRANSPOSE
};

class GraphBuilder {
 public:
  using T = TensorId;

  explicit GraphBuilder(BuilderMirror* mirror = nullptr) : mirror_(mirror) {}

  // ---- tensors without an op ----------------------------------------------------------
  // A weight (or KV cache, or optimizer state): memory already exists.
  T weight(std::string name, DataType type, std::initializer_list<std::int64_t> ne);
  // A graph input (ggml_set_input): allocated before any node.
  T input(std::string name, DataType type, std::initializer_list<std::int64_t> ne);
  // A trainable parameter (ggml_set_param): existing memory, kFlagParam, becomes a node.
  T param(std::string name, std::initializer_list<std::int64_t> ne);
  // ggml_new_tensor_Nd with nothing else: memory the graph allocator places (a fresh copy
  // destination, the "leaf pattern").
  T new_tensor(DataType type, std::initializer_list<std::int64_t> ne, std::string name = {});

  // ---- element-wise ---------------------------------------------------------------------
  T add(T a, T b);
  T add_inplace(T a, T b);
  T mul(T a, T b);
  T mul_inplace(T a, T b);
  T scale(T a);
  T scale_inplace(T a);
  T unary(T a, UnaryOp op);
  T unary_inplace(T a, UnaryOp op);
  T gelu(T a) { return unary(a, UnaryOp::kGelu); }
  T silu(T a) { return unary(a, UnaryOp::kSilu); }
  T relu(T a) { return unary(a, UnaryOp::kRelu); }
  T gelu_inplace(T a) { return unary_inplace(a, UnaryOp::kGelu); }
  T silu_inplace(T a) { return unary_inplace(a, UnaryOp::kSilu); }
  // ggml_clamp: always a view of its source in ggml.
  T clamp(T a);
  // ggml_swiglu_split / ggml_geglu_split: op GLU, act(a) * b.
  T glu_split(T a, T b, UnaryOp act);
  T repeat(T a, T like);
  T repeat_back(T a, T like);

  // ---- normalisation, attention ---------------------------------------------------------
  T norm(T a);
  T rms_norm(T a);
  T group_norm(T a, std::int64_t n_groups);
  T soft_max(T a);
  T soft_max_inplace(T a);
  T soft_max_ext(T a, T mask);  // mask may be kNoTensor
  T diag_mask_inf(T a);
  T diag_mask_inf_inplace(T a);
  T rope(T a, T positions, T freq_factors = kNoTensor);
  T flash_attn_ext(T q, T k, T v, T mask);  // mask may be kNoTensor

  // ---- matrix products, gathers ---------------------------------------------------------
  T mul_mat(T a, T b);
  T out_prod(T a, T b);
  T get_rows(T a, T rows);
  T set_rows(T dst, T src, T rows);
  T concat(T a, T b, int dim);
  T argmax(T a);
  T count_equal(T a, T b);

  // ---- copies ---------------------------------------------------------------------------
  T cont(T a);
  T cont_2d(T a, std::int64_t ne0, std::int64_t ne1);
  T cont_3d(T a, std::int64_t ne0, std::int64_t ne1, std::int64_t ne2);
  // ggml_cpy: a view of `dst` (op CPY, src[0] = a, src[1] = dst).
  T cpy(T a, T dst);
  // ggml_cast: a new tensor of `type`, op CPY. (ggml also sets src[1] to the result
  // itself; the graph model cannot hold a self-reference, so src[1] stays empty.)
  T cast(T a, DataType type);

  // ---- views ----------------------------------------------------------------------------
  T view_tensor(T a);  // op NONE and no sources, as ggml_view_tensor
  T view_1d(T a, std::int64_t ne0, Bytes offset);
  T view_2d(T a, std::int64_t ne0, std::int64_t ne1, Bytes nb1, Bytes offset);
  T view_3d(T a, std::int64_t ne0, std::int64_t ne1, std::int64_t ne2, Bytes nb1, Bytes nb2, Bytes offset);
  T view_4d(T a, std::int64_t ne0, std::int64_t ne1, std::int64_t ne2, std::int64_t ne3, Bytes nb1, Bytes nb2,
            Bytes nb3, Bytes offset);
  T reshape_1d(T a, std::int64_t ne0);
  T reshape_2d(T a, std::int64_t ne0, std::int64_t ne1);
  T reshape_3d(T a, std::int64_t ne0, std::int64_t ne1, std::int64_t ne2);
  T reshape_4d(T a, std::int64_t ne0, std::int64_t ne1, std::int64_t ne2, std::int64_t ne3);
  T reshape_like(T a, T like);  // ggml_reshape(a, like)
  T permute(T a, int axis0, int axis1, int axis2, int axis3);
  T transpose(T a);

  // ---- convolution, pooling, images -----------------------------------------------------
  T im2col(T kernel, T data, int s0, int s1, int p0, int p1, int d0, int d1, bool is_2d, DataType dst_type);
  // ggml_conv_1d: im2col (f16) + mul_mat + reshape_3d.
  T conv_1d(T kernel, T data, int s0, int p0, int d0);
  T conv_1d_ph(T kernel, T data, int s, int d);  // half padding
  // ggml_conv_2d: im2col + mul_mat + reshape_4d + cont(permute).
  T conv_2d(T kernel, T data, int s0, int s1, int p0, int p1, int d0 = 1, int d1 = 1);
  // ggml_conv_2d_direct (op CONV_2D) and ggml_conv_2d_dw_direct (op CONV_2D_DW).
  T conv_2d_direct(T kernel, T data, int s0, int s1, int p0, int p1, int d0 = 1, int d1 = 1);
  T conv_2d_dw_direct(T kernel, T data, int s0, int s1, int p0, int p1, int d0 = 1, int d1 = 1);
  T pool_2d(T a, PoolOp op, int k0, int k1, int s0, int s1, int p0, int p1);
  T upscale(T a, int factor);
  T timestep_embedding(T timesteps, std::int64_t dim);

  // ---- training -------------------------------------------------------------------------
  T cross_entropy_loss(T logits, T labels);
  T cross_entropy_loss_back(T grad, T logits, T labels);
  T silu_back(T grad, T x);
  T rms_norm_back(T grad, T x);
  T soft_max_ext_back(T grad, T y);
  T rope_back(T grad, T positions);
  T get_rows_back(T grad, T rows, T like);
  // ggml_opt_step_adamw: a view of the parameter (op OPT_STEP_ADAMW).
  T opt_step_adamw(T param, T grad, T m, T v, T adamw_params);

  // ---- graph ----------------------------------------------------------------------------
  // ggml_set_name / llama.cpp's cb(): "name" or "name-il"; returns t.
  T name(T t, std::string_view name, int layer = -1);
  void set_output(T t);
  void set_loss(T t);
  // ggml_build_forward_expand.
  void expand(T t);
  // The graph: only what expand() reached (plus the roots of views in it), renumbered.
  [[nodiscard]] Result<Graph> finish();

  // ---- inspection -----------------------------------------------------------------------
  [[nodiscard]] const Tensor& at(T t) const { return graph_[t]; }
  [[nodiscard]] std::int64_t ne(T t, int dim) const { return graph_[t].ne[static_cast<std::size_t>(dim)]; }
  [[nodiscard]] Bytes nb(T t, int dim) const { return graph_[t].nb[static_cast<std::size_t>(dim)]; }
  [[nodiscard]] std::int64_t nelements(T t) const;
  [[nodiscard]] UnaryOp unary_op(T t) const { return info_[static_cast<std::size_t>(t)].unary; }
  [[nodiscard]] std::array<int, kMaxDims> axes(T t) const { return info_[static_cast<std::size_t>(t)].axes; }
  [[nodiscard]] bool reached(T t) const { return visited_[static_cast<std::size_t>(t)] != 0; }
  [[nodiscard]] std::size_t tensor_count() const { return graph_.tensors.size(); }
  // The nodes expand() has listed so far, in execution order.
  [[nodiscard]] const std::vector<T>& nodes() const { return graph_.nodes; }
  // ggml_row_size: bytes of `n` elements of `type`.
  [[nodiscard]] static Bytes row_size(DataType type, std::int64_t n);

 private:
  // A public function's call: only the outermost one (depth 0 on entry) reaches the mirror.
  class Scope {
   public:
    explicit Scope(GraphBuilder& builder) : builder_(builder), outer_(builder.depth_++ == 0) {}
    ~Scope() { --builder_.depth_; }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    [[nodiscard]] bool outer() const { return outer_; }

   private:
    GraphBuilder& builder_;
    bool outer_;
  };
  // Reports `call` with `result` to the mirror (outermost calls, before any shape error).
  T emit(const Scope& scope, T result, BuilderCall call);
  static BuilderCall call_of(BuilderFn fn, std::initializer_list<T> tensors,
                             std::initializer_list<std::int64_t> ints = {});

  T push(Tensor tensor, OpInfo info = {});
  // A new contiguous tensor computed by `op`.
  T compute(std::string name, Op op, DataType type, const Shape& ne, std::initializer_list<T> sources,
            OpInfo info = {});
  // A view of `a` (Graph::new_view: view_src is the root, offsets add up; src[0] = a).
  T view_of(T a, std::string name, Op op, Bytes offset, const Shape& ne, const Strides& nb, OpInfo info = {});
  // ggml_view_tensor(a) with an op and sources: the in-place ops, CPY, SET_ROWS.
  T inplace_view(T a, Op op, std::initializer_list<T> sources, OpInfo info = {});
  T dup_op(T a, Op op, std::initializer_list<T> sources, OpInfo info = {});  // ggml_dup_tensor(a) + op
  T reshape_to(T a, const Shape& ne);
  void expand_graph(T root);
  T conv_im2col_2d(T kernel, T data, int s0, int s1, int p0, int p1, int d0, int d1);

  void check(bool ok, std::string_view op, const std::string& detail);
  [[nodiscard]] std::string describe(T t) const;
  [[nodiscard]] bool contiguous(T t) const;

  Graph graph_;                // all tensors; nodes and leafs in expand() order
  std::vector<OpInfo> info_;   // per tensor
  std::vector<char> visited_;  // per tensor: reached by expand()
  std::string error_;          // the first shape error
  BuilderMirror* mirror_;      // may be null
  int depth_ = 0;              // public functions on the call stack
};

// One zoo graph: its name, what it is, and how to build it at a scale (its GraphBuilder
// reporting to the mirror, which may be null).
struct Recipe {
  std::string name;
  std::string description;
  std::function<Result<Graph>(const Scaler&, BuilderMirror*)> build;
};

// One function per family (src/zoo/<family>.cpp), appending its graphs in a stable order.
void add_llama_recipes(std::vector<Recipe>& out);
void add_whisper_recipes(std::vector<Recipe>& out);
void add_unet_recipes(std::vector<Recipe>& out);
void add_gpt2_recipes(std::vector<Recipe>& out);
void add_cnn_recipes(std::vector<Recipe>& out);
void add_vit_recipes(std::vector<Recipe>& out);
void add_training_recipes(std::vector<Recipe>& out);

}  // namespace galloc::zoo
