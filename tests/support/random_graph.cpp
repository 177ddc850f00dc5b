#include "support/random_graph.hpp"

#include <algorithm>
#include <random>

namespace galloc::testing {

RandomCase::Types RandomCase::make_buffer_types() const {
  Types result;
  for (std::size_t i = 0; i < types.size(); ++i) {
    auto type = std::make_unique<NullBufferType>(types[i].alignment, types[i].max_size, "type" + std::to_string(i));
    type->set_alloc_padding(types[i].alloc_padding);
    result.owned.push_back(std::move(type));
  }
  for (int t : buffer_type_of_id) result.per_id.push_back(result.owned[static_cast<std::size_t>(t)].get());
  return result;
}

namespace {

class Generator {
 public:
  Generator(std::uint64_t seed, const RandomGraphOptions& options) : rng_(seed), options_(options) {}

  RandomCase run(std::uint64_t seed) {
    RandomCase c;
    c.seed = seed;
    make_buffer_types(c);
    Graph& g = c.graph;

    const int n_leafs = uniform(0, options_.max_leafs);
    for (int i = 0; i < n_leafs; ++i) {
      Tensor t = fresh_tensor(g, "leaf" + std::to_string(i));
      const int kind = uniform(0, 9);
      if (kind < 4)
        t.flags |= kFlagInput;  // inputs
      else if (kind < 7)
        t.has_memory = true;  // weights
      // else: a plain leaf, allocated at step 0
      if (chance(0.05)) t.flags |= kFlagOutput;
      g.add_leaf(std::move(t));
    }
    const int n_nodes = uniform(1, options_.max_nodes);
    for (int i = 0; i < n_nodes; ++i) add_node(g, i);

    const int n_ids = static_cast<int>(c.buffer_type_of_id.size());
    if (n_ids > 1) {
      for (std::size_t i = 0; i < g.nodes.size(); ++i) c.node_buffer_ids.push_back(uniform(0, n_ids - 1));
      for (std::size_t i = 0; i < g.leafs.size(); ++i) c.leaf_buffer_ids.push_back(uniform(0, n_ids - 1));
    }
    return c;
  }

 private:
  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }
  template <typename T>
  const T& pick(const std::vector<T>& v) {
    return v[static_cast<std::size_t>(uniform(0, static_cast<int>(v.size()) - 1))];
  }

  void make_buffer_types(RandomCase& c) {
    const int n_types = uniform(1, std::max(1, options_.max_buffer_ids));
    static const std::vector<Bytes> alignments{1, 4, 8, 16, 32, 64, 128};
    for (int i = 0; i < n_types; ++i) {
      BufferTypeSpec spec;
      spec.alignment = pick(alignments);
      if (options_.allow_small_max_size && chance(0.4)) {
        spec.max_size = static_cast<Bytes>(uniform(64, 4096));
      }
      if (chance(0.2)) spec.alloc_padding = static_cast<Bytes>(uniform(1, 40));
      c.types.push_back(spec);
    }
    const int n_ids = uniform(1, std::max(1, options_.max_buffer_ids));
    for (int i = 0; i < n_ids; ++i) c.buffer_type_of_id.push_back(i < n_types ? i : uniform(0, n_types - 1));
    // Shuffle so that shared types appear at any position.
    std::shuffle(c.buffer_type_of_id.begin(), c.buffer_type_of_id.end(), rng_);
  }

  std::array<std::int64_t, kMaxDims> random_shape() {
    // A small pool of shapes, so that "same layout" (and so in-place reuse) happens often.
    static const std::vector<std::array<std::int64_t, kMaxDims>> pool{
        {16, 1, 1, 1}, {16, 4, 1, 1}, {7, 3, 1, 1}, {33, 1, 1, 1},  {8, 8, 2, 1},
        {5, 1, 1, 1},  {64, 2, 1, 1}, {3, 3, 3, 1}, {100, 1, 1, 1}, {1, 1, 1, 1}};
    return pick(pool);
  }

  DataType random_type() {
    static const std::vector<DataType> types{DataType::F32, DataType::F32, DataType::F32,
                                             DataType::F16, DataType::I8,  DataType::I32};
    return pick(types);
  }

  Tensor fresh_tensor(const Graph& g, std::string name) {
    Tensor t;
    t.name = std::move(name);
    t.type = random_type();
    t.ne = random_shape();
    t.nb = contiguous_strides(t.type, t.ne);
    (void)g;
    return t;
  }

  // A tensor the new node may read: recent ones more often, to build chains.
  TensorId random_source(const Graph& g) {
    const int n = static_cast<int>(g.tensors.size());
    if (chance(0.6)) return static_cast<TensorId>(std::max(0, n - 1 - uniform(0, 2)));
    return static_cast<TensorId>(uniform(0, n - 1));
  }

  void add_node(Graph& g, int index) {
    const std::string name = "node" + std::to_string(index);
    // A source that is neither node nor leaf (ggml allocates it when a node first reads it).
    // Upstream sizes its hash set for 1.25 x (nodes + leafs) and aborts when more tensors
    // show up, so keep these to a fifth of the graph.
    if (g.tensors.empty()) {
      Tensor first = fresh_tensor(g, "input");
      first.flags |= kFlagInput;
      g.add_leaf(std::move(first));
    }
    const std::size_t listed = g.nodes.size() + g.leafs.size();
    if (chance(0.05) && (outside_ + 1) * 5 <= listed) {
      ++outside_;
      Tensor outside = fresh_tensor(g, "outside" + std::to_string(index));
      if (chance(0.3)) outside.has_memory = true;
      g.add(std::move(outside));
    }
    const int kind = uniform(0, 9);
    if (kind < 3) {
      add_view(g, name);
      return;
    }
    static const std::vector<Op> inplace{Op::Add,     Op::Mul, Op::Scale, Op::SoftMax, Op::Unary,
                                         Op::RmsNorm, Op::Sqr, Op::Fill,  Op::Rope,    Op::DiagMaskInf};
    static const std::vector<Op> other{Op::MulMat,  Op::Cont, Op::Concat, Op::Mean, Op::Pad,
                                       Op::GetRows, Op::Norm, Op::Cpy,    Op::Dup,  Op::Argsort};
    const bool can_inplace = kind < 7;
    Tensor t;
    t.name = name;
    t.op = can_inplace ? pick(inplace) : pick(other);
    const int n_src = uniform(1, 3);
    for (int s = 0; s < n_src; ++s) t.src[static_cast<std::size_t>(s)] = random_source(g);
    const Tensor& first = g[t.src[0]];
    if (can_inplace && chance(0.8)) {
      // Same layout as the first source: the in-place candidate.
      t.type = first.type;
      t.ne = first.ne;
      t.nb = first.nb;
    } else {
      t.type = random_type();
      t.ne = random_shape();
      t.nb = contiguous_strides(t.type, t.ne);
    }
    if (chance(0.12)) t.flags |= kFlagOutput;
    if (chance(0.04)) t.flags |= kFlagInput;
    g.add_node(std::move(t));
  }

  // A view (VIEW, RESHAPE, PERMUTE, TRANSPOSE, or a NONE-op dependency view) of an earlier
  // tensor, itself possibly a view: view_src is always the root, offsets add up.
  void add_view(Graph& g, const std::string& name) {
    const TensorId source = random_source(g);
    const Tensor& s = g[source];
    const TensorId root = s.is_view() ? s.view_src : source;
    const Tensor& r = g[root];
    const Bytes root_bytes = tensor_nbytes(r);
    Tensor t;
    t.name = name;
    t.type = s.type;
    t.src[0] = source;
    t.view_src = root;
    t.has_memory = r.has_memory;
    static const std::vector<Op> view_ops{Op::View, Op::Reshape, Op::Permute, Op::Transpose, Op::None};
    t.op = pick(view_ops);
    const Bytes base = s.is_view() ? s.view_offs : 0;
    if (t.op == Op::Reshape || t.op == Op::Permute || t.op == Op::Transpose) {
      // Same bytes, other shape or strides.
      t.ne = s.ne;
      t.nb = s.nb;
      if (t.op != Op::Reshape) {
        std::swap(t.ne[0], t.ne[1]);
        std::swap(t.nb[0], t.nb[1]);
      }
      t.view_offs = base;
    } else {
      // A 1-D window inside the source.
      const auto traits = data_type_traits(t.type);
      const Bytes element = traits ? traits->type_size : 1;
      const Bytes available = root_bytes > base ? root_bytes - base : 0;
      const auto max_elements = static_cast<int>(std::min<Bytes>(available / element, 64));
      if (max_elements < 1) {
        t.ne = {0, 1, 1, 1};
        t.nb = contiguous_strides(t.type, t.ne);
        t.view_offs = base;
      } else {
        const int n = uniform(1, max_elements);
        const Bytes slack = available - static_cast<Bytes>(n) * element;
        const Bytes shift =
            slack == 0 || chance(0.4) ? 0 : static_cast<Bytes>(uniform(0, static_cast<int>(slack / element))) * element;
        t.ne = {n, 1, 1, 1};
        t.nb = contiguous_strides(t.type, t.ne);
        t.view_offs = base + shift;
      }
    }
    // Keep the view inside its root even when the source had odd strides.
    if (t.view_offs + tensor_nbytes(t) > root_bytes) {
      t.ne = {0, 1, 1, 1};
      t.nb = contiguous_strides(t.type, t.ne);
      t.view_offs = std::min(t.view_offs, root_bytes);
    }
    if (chance(0.05)) t.flags |= kFlagOutput;
    g.add_node(std::move(t));
  }

  std::mt19937_64 rng_;
  RandomGraphOptions options_;
  std::size_t outside_ = 0;
};

}  // namespace

RandomCase random_case(std::uint64_t seed, const RandomGraphOptions& options) {
  return Generator(seed, options).run(seed);
}

}  // namespace galloc::testing
