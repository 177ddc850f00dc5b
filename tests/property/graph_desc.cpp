#include "property/graph_desc.hpp"

#include <algorithm>
#include <ostream>
#include <set>
#include <sstream>

namespace galloc::property {

namespace {

constexpr std::array<DataType, 4> kTypes{DataType::F32, DataType::F16, DataType::I8, DataType::I32};
constexpr std::array<std::array<std::int64_t, kMaxDims>, 12> kShapes{{{16, 1, 1, 1},
                                                                      {16, 4, 1, 1},
                                                                      {7, 3, 1, 1},
                                                                      {33, 1, 1, 1},
                                                                      {8, 8, 2, 1},
                                                                      {5, 1, 1, 1},
                                                                      {64, 2, 1, 1},
                                                                      {3, 3, 3, 1},
                                                                      {100, 1, 1, 1},
                                                                      {1, 1, 1, 1},
                                                                      {0, 4, 1, 1},
                                                                      {257, 1, 1, 1}}};
constexpr std::array<Bytes, 10> kAlignments{1, 2, 4, 8, 16, 32, 64, 128, 256, 4096};
constexpr std::array<Bytes, 8> kMaxSizes{kUnlimited, kUnlimited, 16, 64, 100, 256, 1000, 4096};

constexpr std::array<Op, 10> kElementwiseOps{Op::Add,     Op::Mul, Op::Scale, Op::SoftMax, Op::Unary,
                                             Op::RmsNorm, Op::Sqr, Op::Fill,  Op::Rope,    Op::DiagMaskInf};
constexpr std::array<Op, 10> kOtherOps{Op::MulMat,  Op::Cont, Op::Concat, Op::Mean,    Op::Pad,
                                       Op::GetRows, Op::Norm, Op::Dup,    Op::Argsort, Op::SumRows};
constexpr std::array<Op, 4> kViewOps{Op::View, Op::Reshape, Op::Permute, Op::Transpose};
constexpr std::array<Op, 4> kWriteOps{Op::Cpy, Op::SetRows, Op::Set, Op::Acc};

template <typename T, std::size_t N>
const T& pick(const std::array<T, N>& table, unsigned index) {
  return table[index % N];
}

Bytes element_size(DataType type) { return data_type_traits(type)->type_size; }

class Builder {
 public:
  Builder(BuiltCase& out, const BuildOptions& options) : c_(out), g_(out.graph), options_(options) {}

  void run(const GraphDesc& d) {
    if (d.types.empty()) {
      c_.types.push_back({});
    } else {
      for (const TypeDesc& t : d.types) {
        c_.types.push_back(
            {pick(kAlignments, t.alignment), pick(kMaxSizes, t.max_size), static_cast<Bytes>(t.padding % 41)});
      }
    }
    const std::size_t n_ids = d.id_types.empty() ? 1 : std::min<std::size_t>(d.id_types.size(), 4);
    for (std::size_t i = 0; i < n_ids; ++i) {
      c_.id_types.push_back(d.id_types.empty() ? 0 : static_cast<int>(d.id_types[i] % c_.types.size()));
    }
    n_ids_ = static_cast<int>(n_ids);

    for (std::size_t i = 0; i < d.leafs.size(); ++i) add_leaf(d.leafs[i], i);
    for (std::size_t i = 0; i < d.nodes.size(); ++i) add_node(d.nodes[i], i);
    if (n_ids_ == 1) {
      c_.node_buffer_ids.clear();
      c_.leaf_buffer_ids.clear();
    }
  }

 private:
  BufferId buffer_id(std::uint8_t b) const { return static_cast<BufferId>(b % n_ids_); }

  Tensor fresh(std::string name, std::uint8_t type, std::uint8_t shape) const {
    Tensor t;
    t.name = std::move(name);
    t.type = pick(kTypes, type);
    t.ne = pick(kShapes, shape);
    t.nb = contiguous_strides(t.type, t.ne);
    return t;
  }

  void add_leaf(const LeafDesc& l, std::size_t i) {
    Tensor t = fresh("leaf" + std::to_string(i), l.type, l.shape);
    if (l.output) t.flags |= kFlagOutput;
    switch (static_cast<LeafKind>(static_cast<unsigned>(l.kind) % 4)) {
      case LeafKind::kInput: t.flags |= kFlagInput; break;
      case LeafKind::kWeights: t.has_memory = true; break;
      case LeafKind::kPlain: break;
      case LeafKind::kOutside:
        t.name = "outside" + std::to_string(i);
        readable_.push_back(g_.add(std::move(t)));
        outside_.insert(readable_.back());
        return;
    }
    readable_.push_back(g_.add_leaf(std::move(t)));
    c_.leaf_buffer_ids.push_back(buffer_id(l.buffer));
  }

  TensorId resolve(std::uint8_t back) const {
    const std::size_t n = readable_.size();
    return readable_[n - 1 - back % n];
  }

  // A view of `source` with the given shape and offset inside the source; view_src is the root.
  Tensor view_of(TensorId source, Op op, std::string name) const {
    const Tensor& s = g_[source];
    Tensor t;
    t.name = std::move(name);
    t.type = s.type;
    t.ne = s.ne;
    t.nb = s.nb;
    t.op = op;
    t.src[0] = source;
    t.view_src = s.is_view() ? s.view_src : source;
    t.view_offs = s.is_view() ? s.view_offs : 0;
    t.has_memory = g_[t.view_src].has_memory;
    return t;
  }

  void add_node(const NodeDesc& n, std::size_t i) {
    if (readable_.empty()) {
      Tensor input = fresh("input", 0, 0);
      input.flags |= kFlagInput;
      readable_.push_back(g_.add_leaf(std::move(input)));
      c_.leaf_buffer_ids.push_back(0);
    }
    const int n_src = 1 + n.n_src % 3;
    const auto kind = static_cast<NodeKind>(static_cast<unsigned>(n.kind) % 5);
    Tensor t;
    bool readable = true;
    switch (kind) {
      case NodeKind::kElementwise:
      case NodeKind::kOther: {
        const Op op = kind == NodeKind::kElementwise ? pick(kElementwiseOps, n.op) : pick(kOtherOps, n.op);
        t.name = "n" + std::to_string(i);
        t.op = op;
        for (int s = 0; s < n_src; ++s)
          t.src[static_cast<std::size_t>(s)] = resolve(n.src[static_cast<std::size_t>(s)]);
        if (n.layout % 4 < 3) {
          const Tensor& like = g_[t.src[static_cast<std::size_t>(n.layout % 4 % n_src)]];
          t.type = like.type;
          t.ne = like.ne;
          t.nb = like.nb;
        } else {
          Tensor f = fresh("", n.type, n.shape);
          t.type = f.type;
          t.ne = f.ne;
          t.nb = f.nb;
        }
        break;
      }
      case NodeKind::kView: {
        const TensorId source = resolve(n.src[0]);
        const Op op = pick(kViewOps, n.op);
        t = view_of(source, op, "v" + std::to_string(i));
        if (op == Op::Permute || op == Op::Transpose) {
          std::swap(t.ne[0], t.ne[1]);
          std::swap(t.nb[0], t.nb[1]);
        } else if (op == Op::View) {
          // A 1-D window inside the source's bytes.
          const Bytes element = element_size(t.type);
          const Bytes room = tensor_nbytes(g_[source]);
          const Bytes max_elements = std::min<Bytes>(room / element, 64);
          if (max_elements == 0) {
            t.ne = {0, 1, 1, 1};
          } else {
            const Bytes len = 1 + n.window_len % max_elements;
            const Bytes slack = (room - len * element) / element;
            t.ne = {static_cast<std::int64_t>(len), 1, 1, 1};
            t.view_offs += (n.window_offs % (slack + 1)) * element;
          }
          t.nb = contiguous_strides(t.type, t.ne);
        }
        break;
      }
      case NodeKind::kWriteView: {
        // As ggml builds them: the result is a view of the whole destination.
        //   cpy(a, b):              view of b, src = {a, b}
        //   set_rows(a, b, c):      view of a, src = {b, c}
        //   set/acc_inplace(a, b):  view of a, src = {a, b}
        const Op op = pick(kWriteOps, n.op);
        const TensorId dest = resolve(n.src[0]);
        const TensorId value = resolve(n.src[1]);
        t = view_of(dest, op, "w" + std::to_string(i));
        if (op == Op::Cpy || (op == Op::SetRows && !materialized(dest))) {
          // set_rows does not name its destination as a source: into a tensor that nothing
          // has allocated yet (neither node nor leaf nor a source so far) upstream ggml
          // would abort, so that becomes a cpy.
          t.op = Op::Cpy;
          t.src[0] = value;
          t.src[1] = dest;
        } else if (op == Op::SetRows && materialized(dest)) {
          t.src[0] = value;
          t.src[1] = resolve(n.src[2]);
        } else {
          t.src[0] = dest;
          t.src[1] = value;
        }
        break;
      }
      case NodeKind::kDependency: {
        t = view_of(resolve(n.src[0]), Op::None, "dep" + std::to_string(i));
        for (int s = 1; s < n_src; ++s)
          t.src[static_cast<std::size_t>(s)] = resolve(n.src[static_cast<std::size_t>(s)]);
        readable = false;  // it carries dependencies only: nothing reads it
        break;
      }
    }
    for (TensorId src : t.src) {
      if (src != kNoTensor) materialized_.insert(src);
    }
    if (n.output) t.flags |= kFlagOutput;
    if (n.input && options_.allow_input_nodes && !t.is_view()) t.flags |= kFlagInput;
    const TensorId id = g_.add_node(std::move(t));
    c_.node_buffer_ids.push_back(buffer_id(n.buffer));
    if (readable) readable_.push_back(id);
  }

  // Whether the planner allocates `id`'s root by the time a node writes it: leafs, nodes and
  // weights always; a tensor outside both lists once a node has named it as a source.
  bool materialized(TensorId id) const {
    const TensorId root = g_[id].is_view() ? g_[id].view_src : id;
    return !outside_.contains(root) || materialized_.contains(root);
  }

  BuiltCase& c_;
  Graph& g_;
  std::set<TensorId> outside_;
  std::set<TensorId> materialized_;
  BuildOptions options_;
  int n_ids_ = 1;
  std::vector<TensorId> readable_;
};

std::string bytes_literal(Bytes b) { return b == kUnlimited ? "kUnlimited" : std::to_string(b); }

std::string op_literal(Op op) {
  // Enumerator names: the op's ggml name in CamelCase is not recoverable, so use the name.
  return "op(\"" + std::string(op_name(op)) + "\")";
}

}  // namespace

void BuiltCase::make_types() {
  owned.clear();
  per_id.clear();
  for (std::size_t i = 0; i < types.size(); ++i) {
    auto type = std::make_unique<NullBufferType>(types[i].alignment, types[i].max_size, "type" + std::to_string(i));
    type->set_alloc_padding(types[i].padding);
    owned.push_back(std::move(type));
  }
  for (int t : id_types) per_id.push_back(owned[static_cast<std::size_t>(t)].get());
}

BuiltCase build_case(const GraphDesc& desc, const BuildOptions& options) {
  BuiltCase c;
  Builder(c, options).run(desc);
  c.make_types();
  return c;
}

std::string case_to_cpp(const BuiltCase& c) {
  std::ostringstream os;
  os << "  Case c;\n";
  os << "  c.types = {";
  for (std::size_t i = 0; i < c.types.size(); ++i) {
    os << (i ? ", " : "") << "{" << c.types[i].alignment << ", " << bytes_literal(c.types[i].max_size) << ", "
       << c.types[i].padding << "}";
  }
  os << "};\n  c.id_types = {";
  for (std::size_t i = 0; i < c.id_types.size(); ++i) os << (i ? ", " : "") << c.id_types[i];
  os << "};\n";
  std::vector<int> list(c.graph.tensors.size(), 0);  // 0 tensor, 1 leaf, 2 node
  std::vector<BufferId> buffer(c.graph.tensors.size(), 0);
  for (std::size_t i = 0; i < c.graph.leafs.size(); ++i) {
    list[static_cast<std::size_t>(c.graph.leafs[i])] = 1;
    if (!c.leaf_buffer_ids.empty()) buffer[static_cast<std::size_t>(c.graph.leafs[i])] = c.leaf_buffer_ids[i];
  }
  for (std::size_t i = 0; i < c.graph.nodes.size(); ++i) {
    list[static_cast<std::size_t>(c.graph.nodes[i])] = 2;
    if (!c.node_buffer_ids.empty()) buffer[static_cast<std::size_t>(c.graph.nodes[i])] = c.node_buffer_ids[i];
  }
  // Nodes and leafs are listed in tensor order by construction.
  for (std::size_t id = 0; id < c.graph.tensors.size(); ++id) {
    const Tensor& t = c.graph.tensors[id];
    static const char* kList[] = {"kTensor", "kLeaf", "kNode"};
    os << "  c.add(" << kList[list[id]] << ", " << buffer[id] << ", \"" << t.name << "\", \"" << data_type_name(t.type)
       << "\", {" << t.ne[0] << ", " << t.ne[1] << ", " << t.ne[2] << ", " << t.ne[3] << "}, {" << t.nb[0] << ", "
       << t.nb[1] << ", " << t.nb[2] << ", " << t.nb[3] << "}, " << op_literal(t.op) << ", {";
    bool first = true;
    int last = -1;
    for (int s = 0; s < kMaxSources; ++s) {
      if (t.src[static_cast<std::size_t>(s)] != kNoTensor) last = s;
    }
    for (int s = 0; s <= last; ++s) {
      os << (first ? "" : ", ") << t.src[static_cast<std::size_t>(s)];
      first = false;
    }
    os << "}, " << t.view_src << ", " << t.view_offs << ", " << t.flags << ", " << (t.has_memory ? "true" : "false")
       << ");  // " << id << "\n";
  }
  return os.str();
}

void showValue(const GraphDesc& desc, std::ostream& os) {
  const BuiltCase c = build_case(desc);
  os << "\n" << case_to_cpp(c);
}

}  // namespace galloc::property
