// The graph model: tensors in ggml's shape, nodes and leafs in execution order.
//
//   galloc::Graph g;
//   TensorId a = g.add_leaf(g.new_tensor("a", DataType::F32, {64, 64}));
//   TensorId b = g.add_node(g.new_op("b", Op::Scale, DataType::F32, {64, 64}, {a}));
//   g.tensors[b].flags |= kFlagOutput;
#pragma once

#include <array>
#include <bitset>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "galloc/status.hpp"
#include "galloc/types.hpp"

namespace galloc {

inline constexpr int kMaxDims = 4;      // GGML_MAX_DIMS
inline constexpr int kMaxSources = 10;  // GGML_MAX_SRC

// ggml's tensor types, with ggml's numeric values (so graphs captured from ggml convert 1:1).
// clang-format off
enum class DataType : std::int32_t {
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9,
  Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15,
  IQ2_XXS = 16, IQ2_XS = 17, IQ3_XXS = 18, IQ1_S = 19, IQ4_NL = 20, IQ3_S = 21, IQ2_S = 22,
  IQ4_XS = 23, I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28, IQ1_M = 29, BF16 = 30,
  TQ1_0 = 34, TQ2_0 = 35, MXFP4 = 39, NVFP4 = 40, Q1_0 = 41, Q2_0 = 42,
};
// clang-format on

struct DataTypeTraits {
  std::string_view name;    // ggml's type name: "f32", "q4_K"
  std::int64_t block_size;  // elements per block
  Bytes type_size;          // bytes per block
};

// Traits of a known type, or nullopt for a value ggml does not define.
[[nodiscard]] std::optional<DataTypeTraits> data_type_traits(DataType type);
[[nodiscard]] std::optional<DataType> data_type_from_name(std::string_view name);
[[nodiscard]] std::string_view data_type_name(DataType type);

// ggml's ops (upstream ggml as carried by llama.rn 0.12.9), named as ggml_op_name() names them.
// clang-format off
#define GALLOC_OP_LIST(X)                                                                     \
  X(None, "NONE") X(Dup, "DUP") X(Add, "ADD") X(AddId, "ADD_ID") X(Add1, "ADD1") X(Acc, "ACC") \
  X(Sub, "SUB") X(Mul, "MUL") X(Div, "DIV") X(Sqr, "SQR") X(Sqrt, "SQRT") X(Log, "LOG")       \
  X(Sin, "SIN") X(Cos, "COS") X(Sum, "SUM") X(SumRows, "SUM_ROWS") X(Cumsum, "CUMSUM")        \
  X(Mean, "MEAN") X(Argmax, "ARGMAX") X(CountEqual, "COUNT_EQUAL") X(Repeat, "REPEAT")        \
  X(RepeatBack, "REPEAT_BACK") X(Concat, "CONCAT") X(SiluBack, "SILU_BACK") X(Norm, "NORM")   \
  X(RmsNorm, "RMS_NORM") X(RmsNormBack, "RMS_NORM_BACK") X(GroupNorm, "GROUP_NORM")          \
  X(L2Norm, "L2_NORM") X(MulMat, "MUL_MAT") X(MulMatId, "MUL_MAT_ID") X(OutProd, "OUT_PROD")  \
  X(Scale, "SCALE") X(Set, "SET") X(Cpy, "CPY") X(Cont, "CONT") X(Reshape, "RESHAPE")         \
  X(View, "VIEW") X(Permute, "PERMUTE") X(Transpose, "TRANSPOSE") X(GetRows, "GET_ROWS")      \
  X(GetRowsBack, "GET_ROWS_BACK") X(SetRows, "SET_ROWS") X(Diag, "DIAG")                      \
  X(DiagMaskInf, "DIAG_MASK_INF") X(DiagMaskZero, "DIAG_MASK_ZERO") X(SoftMax, "SOFT_MAX")    \
  X(SoftMaxBack, "SOFT_MAX_BACK") X(Rope, "ROPE") X(RopeBack, "ROPE_BACK") X(Clamp, "CLAMP")  \
  X(ConvTranspose1d, "CONV_TRANSPOSE_1D") X(Im2col, "IM2COL") X(Im2colBack, "IM2COL_BACK")    \
  X(Im2col3d, "IM2COL_3D") X(Col2im1d, "COL2IM_1D") X(Conv2d, "CONV_2D") X(Conv3d, "CONV_3D") \
  X(Conv2dDw, "CONV_2D_DW") X(ConvTranspose2d, "CONV_TRANSPOSE_2D") X(Pool1d, "POOL_1D")      \
  X(Pool2d, "POOL_2D") X(Pool2dBack, "POOL_2D_BACK") X(Upscale, "UPSCALE") X(Pad, "PAD")      \
  X(PadReflect1d, "PAD_REFLECT_1D") X(Roll, "ROLL") X(Arange, "ARANGE")                       \
  X(TimestepEmbedding, "TIMESTEP_EMBEDDING") X(Argsort, "ARGSORT") X(TopK, "TOP_K")           \
  X(LeakyRelu, "LEAKY_RELU") X(Tri, "TRI") X(Fill, "FILL") X(FlashAttnExt, "FLASH_ATTN_EXT")  \
  X(FlashAttnBack, "FLASH_ATTN_BACK") X(SsmConv, "SSM_CONV") X(SsmScan, "SSM_SCAN")           \
  X(WinPart, "WIN_PART") X(WinUnpart, "WIN_UNPART") X(GetRelPos, "GET_REL_POS")               \
  X(AddRelPos, "ADD_REL_POS") X(RwkvWkv6, "RWKV_WKV6") X(GatedLinearAttn, "GATED_LINEAR_ATTN") \
  X(RwkvWkv7, "RWKV_WKV7") X(SolveTri, "SOLVE_TRI") X(GatedDeltaNet, "GATED_DELTA_NET")       \
  X(LightningIndexer, "LIGHTNING_INDEXER") X(Dsv4HcComb, "DSV4_HC_COMB")                      \
  X(Dsv4HcPre, "DSV4_HC_PRE") X(Dsv4HcPost, "DSV4_HC_POST") X(Unary, "UNARY")                 \
  X(MapCustom1, "MAP_CUSTOM1") X(MapCustom2, "MAP_CUSTOM2") X(MapCustom3, "MAP_CUSTOM3")      \
  X(Custom, "CUSTOM") X(CrossEntropyLoss, "CROSS_ENTROPY_LOSS")                               \
  X(CrossEntropyLossBack, "CROSS_ENTROPY_LOSS_BACK") X(OptStepAdamw, "OPT_STEP_ADAMW")        \
  X(OptStepSgd, "OPT_STEP_SGD") X(Glu, "GLU")
// clang-format on

enum class Op : std::int32_t {
#define GALLOC_OP_ENUM(name, str) name,
  GALLOC_OP_LIST(GALLOC_OP_ENUM)
#undef GALLOC_OP_ENUM
      Count
};

[[nodiscard]] std::string_view op_name(Op op);
[[nodiscard]] std::optional<Op> op_from_name(std::string_view name);

// A set of ops, one bit per Op.
using OpSet = std::bitset<static_cast<std::size_t>(Op::Count)>;

// ggml_op_can_inplace of llama.rn 0.12.9's ggml: the ops whose output may take over a dying
// parent's memory. Other ggml versions differ (Graph::inplace_ops).
[[nodiscard]] bool op_can_inplace(Op op);
[[nodiscard]] OpSet default_inplace_ops();

// Tensor flags, with ggml's bit values.
enum TensorFlag : std::uint32_t {
  kFlagInput = 1,   // allocated before any node, never overlapping other inputs
  kFlagOutput = 2,  // never freed, never overwritten
  kFlagParam = 4,
  kFlagLoss = 8,
};

struct Tensor {
  std::string name;
  DataType type = DataType::F32;
  std::array<std::int64_t, kMaxDims> ne{1, 1, 1, 1};  // elements per dimension
  std::array<Bytes, kMaxDims> nb{0, 0, 0, 0};         // stride in bytes per dimension
  Op op = Op::None;
  std::array<TensorId, kMaxSources> src{kNoTensor, kNoTensor, kNoTensor, kNoTensor, kNoTensor,
                                        kNoTensor, kNoTensor, kNoTensor, kNoTensor, kNoTensor};
  TensorId view_src = kNoTensor;  // the tensor whose memory this one views
  Bytes view_offs = 0;            // byte offset of the view inside view_src
  std::uint32_t flags = 0;        // TensorFlag bits
  bool has_memory = false;        // memory already exists (weights, KV cache): never planned

  // Filled in by GraphAllocator::alloc: where the tensor's bytes are.
  void* data = nullptr;

  [[nodiscard]] bool is_view() const { return view_src != kNoTensor; }
  [[nodiscard]] bool is_input() const { return (flags & kFlagInput) != 0; }
  [[nodiscard]] bool is_output() const { return (flags & kFlagOutput) != 0; }
};

namespace detail {
// Block size and bytes per block by ggml's type value (block_size 0: a value ggml does not
// define). Defined in graph.cpp, declared here so that tensor_nbytes inlines: every reserve
// and every alloc asks it for every tensor.
struct TypeSize {
  std::int64_t block_size;
  Bytes type_size;
};
inline constexpr std::size_t kTypeSlots = 64;
extern const std::array<TypeSize, kTypeSlots> kTypeSizes;
}  // namespace detail

// Bytes spanned by a tensor's elements (ggml_nbytes); 0 when a dimension is empty.
[[nodiscard]] inline Bytes tensor_nbytes(const Tensor& tensor) {
  const auto index = static_cast<std::uint32_t>(tensor.type);
  if (index >= detail::kTypeSlots) return 0;
  const detail::TypeSize& type = detail::kTypeSizes[index];
  if (type.block_size == 0 || tensor.ne[0] <= 0 || tensor.ne[1] <= 0 || tensor.ne[2] <= 0 || tensor.ne[3] <= 0) {
    return 0;
  }
  const Bytes rest = static_cast<Bytes>(tensor.ne[1] - 1) * tensor.nb[1] +
                     static_cast<Bytes>(tensor.ne[2] - 1) * tensor.nb[2] +
                     static_cast<Bytes>(tensor.ne[3] - 1) * tensor.nb[3];
  if (type.block_size == 1) return type.type_size + static_cast<Bytes>(tensor.ne[0] - 1) * tensor.nb[0] + rest;
  return static_cast<Bytes>(tensor.ne[0]) * tensor.nb[0] / static_cast<Bytes>(type.block_size) + rest;
}
// Same type, shape and strides (ggml_are_same_layout).
[[nodiscard]] inline bool same_layout(const Tensor& a, const Tensor& b) {
  return a.type == b.type && a.ne == b.ne && a.nb == b.nb;
}
// Contiguous strides for a type and shape (ggml_new_tensor's nb).
[[nodiscard]] std::array<Bytes, kMaxDims> contiguous_strides(DataType type,
                                                             const std::array<std::int64_t, kMaxDims>& ne);

struct Graph {
  std::vector<Tensor> tensors;
  std::vector<TensorId> nodes;  // in execution order
  std::vector<TensorId> leafs;  // tensors with no op that the graph reads
  // The ops whose result may reuse a dying source's memory, as the ggml that built the graph
  // decides it (its ggml_op_can_inplace): older ggml reuses fewer ops, newer ones CLAMP too.
  OpSet inplace_ops = default_inplace_ops();
  // Nodes that may run at the same time, as the 2023 ggml_allocr_set_parse_seq groups them
  // between -1 barriers: per node, a group number, the same for consecutive nodes of one group.
  // What a group reads is freed only after its last node, so no node of the group overwrites
  // what another one still reads, and a node takes a source over in place only when no other
  // node of its group reads it. Empty: every node runs alone, in order.
  std::vector<std::int32_t> node_groups;
  // Whether a node may take over a source in another buffer id (it then lives in that buffer,
  // as in ggml from late 2024). The 2023 ggml_gallocr_alloc_graph_n reuses only sources in the
  // node's own buffer.
  bool inplace_across_buffers = true;
  // Whether a node may take over, through a view at offset 0, the view's source when nothing
  // else reads either (a reshape between two element-wise ops). The 2023 ggml_allocr does;
  // ggml from late 2024 does not.
  bool inplace_through_views = false;

  // A contiguous tensor with no op; not yet part of nodes or leafs.
  [[nodiscard]] Tensor new_tensor(std::string name, DataType type, std::initializer_list<std::int64_t> ne) const;
  // A contiguous tensor computed by `op` from `sources`.
  [[nodiscard]] Tensor new_op(std::string name, Op op, DataType type, std::initializer_list<std::int64_t> ne,
                              std::initializer_list<TensorId> sources) const;
  // A view of `source` (its view_src is the root of source's view chain, as in ggml).
  [[nodiscard]] Tensor new_view(std::string name, Op op, TensorId source, Bytes offset,
                                std::initializer_list<std::int64_t> ne) const;

  TensorId add(Tensor tensor);       // adds to tensors only
  TensorId add_node(Tensor tensor);  // adds and appends to nodes
  TensorId add_leaf(Tensor tensor);  // adds and appends to leafs

  [[nodiscard]] Tensor& operator[](TensorId id) { return tensors[static_cast<std::size_t>(id)]; }
  [[nodiscard]] const Tensor& operator[](TensorId id) const { return tensors[static_cast<std::size_t>(id)]; }
  [[nodiscard]] bool contains(TensorId id) const { return id >= 0 && static_cast<std::size_t>(id) < tensors.size(); }
  [[nodiscard]] std::optional<TensorId> find(std::string_view name) const;
};

// "tensor 3 (x3)": how errors name a tensor.
[[nodiscard]] std::string describe_tensor(const Graph& graph, TensorId id);

// Checks everything the planner relies on: ids in range, sources and view sources exist,
// views lie inside their source, no node is listed twice, nodes are in a valid execution
// order (no source computed later, no cycle), sizes do not overflow.
[[nodiscard]] Status validate_graph(const Graph& graph);

}  // namespace galloc
