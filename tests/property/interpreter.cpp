#include "property/interpreter.hpp"

#include <algorithm>
#include <optional>
#include <vector>

namespace galloc::property {

namespace {

std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

std::byte low_byte(std::uint64_t h) { return static_cast<std::byte>(h >> 56); }

bool is_alias_view(const Tensor& t) {
  return t.is_view() && (t.op == Op::View || t.op == Op::Reshape || t.op == Op::Permute || t.op == Op::Transpose);
}
bool is_dependency_view(const Tensor& t) { return t.is_view() && t.op == Op::None; }

TensorId root_of(const Graph& g, TensorId id) { return g[id].is_view() ? g[id].view_src : id; }

// Bytes of one tensor in one run: data and "defined" bits, `size` long.
struct Window {
  std::byte* data = nullptr;
  std::uint8_t* defined = nullptr;
  Bytes size = 0;
};

// Where every root tensor's bytes are in one run.
class Memory {
 public:
  virtual ~Memory() = default;
  // The window of `id` (a view: inside its root), or an error message.
  [[nodiscard]] std::optional<Window> window(const Graph& g, TensorId id, std::string& error) {
    const TensorId root = root_of(g, id);
    const auto r = static_cast<std::size_t>(root);
    if (!roots_[r]) {
      error = "tensor " + std::to_string(root) + " (" + g[root].name +
              ") is read or written but has no memory in the " + name() + " run";
      return std::nullopt;
    }
    const Window base = *roots_[r];
    const Tensor& t = g[id];
    const Bytes offs = t.is_view() ? t.view_offs : 0;
    const Bytes n = tensor_nbytes(t);
    if (offs > base.size || n > base.size - offs) {
      error =
          "tensor " + std::to_string(id) + " (" + t.name + ") reaches past its root's memory in the " + name() + " run";
      return std::nullopt;
    }
    if (n == 0) return Window{};
    return Window{base.data + offs, base.defined + offs, n};
  }
  [[nodiscard]] virtual std::string name() const = 0;

 protected:
  std::vector<std::optional<Window>> roots_;  // per tensor id; views: nullopt
};

// Every root tensor its own memory.
class NoReuseMemory final : public Memory {
 public:
  explicit NoReuseMemory(const Graph& g) {
    roots_.resize(g.tensors.size());
    bytes_.resize(g.tensors.size());
    defined_.resize(g.tensors.size());
    for (std::size_t t = 0; t < g.tensors.size(); ++t) {
      if (g.tensors[t].is_view()) continue;
      const Bytes n = tensor_nbytes(g.tensors[t]);
      bytes_[t].assign(n + 1, std::byte{0xAA});
      defined_[t].assign(n + 1, 0);
      roots_[t] = Window{bytes_[t].data(), defined_[t].data(), n};
    }
  }
  [[nodiscard]] std::string name() const override { return "no-reuse"; }

 private:
  std::vector<std::vector<std::byte>> bytes_;
  std::vector<std::vector<std::uint8_t>> defined_;
};

// One vector per chunk of the plan; weights (has_memory) keep memory of their own.
class PlannedMemory final : public Memory {
 public:
  // With `in_place`, chunk c of allocator a is the memory at (*in_place)[a][c] instead of a
  // vector of its own, and a weight with data set is at its data.
  PlannedMemory(const Graph& g, const Plan& plan, std::string& error, const ChunkBases* in_place = nullptr)
      : plan_(plan) {
    roots_.resize(g.tensors.size());
    own_.resize(g.tensors.size());
    own_defined_.resize(g.tensors.size());
    // Chunks per allocator, from the first buffer id of each allocator.
    for (const BufferPlan& buffer : plan.buffers) {
      const auto a = static_cast<std::size_t>(buffer.allocator);
      if (a >= chunks_.size()) {
        chunks_.resize(a + 1);
        chunk_defined_.resize(a + 1);
      }
      if (buffer.shared || !chunks_[a].empty()) continue;
      for (Bytes size : buffer.chunk_sizes) {
        chunks_[a].emplace_back(size + 1, std::byte{0x55});
        chunk_defined_[a].emplace_back(size + 1, 0);
      }
    }
    if (plan.tensors.size() != g.tensors.size()) {
      error = "the plan has " + std::to_string(plan.tensors.size()) + " tensors, the graph " +
              std::to_string(g.tensors.size());
      return;
    }
    for (std::size_t t = 0; t < g.tensors.size(); ++t) {
      const Tensor& tensor = g.tensors[t];
      if (tensor.is_view()) continue;
      const Bytes n = tensor_nbytes(tensor);
      if (tensor.has_memory) {
        own_[t].assign(n + 1, std::byte{0x33});
        own_defined_[t].assign(n + 1, 0);
        auto* data =
            in_place != nullptr && tensor.data != nullptr ? static_cast<std::byte*>(tensor.data) : own_[t].data();
        roots_[t] = Window{data, own_defined_[t].data(), n};
        continue;
      }
      const TensorPlacement& p = plan.tensors[t];
      if (!p.planned()) continue;
      if (static_cast<std::size_t>(p.buffer) >= plan.buffers.size()) {
        error =
            "tensor " + std::to_string(t) + " is in buffer " + std::to_string(p.buffer) + ", which is not in the plan";
        return;
      }
      const auto a = static_cast<std::size_t>(plan.buffers[static_cast<std::size_t>(p.buffer)].allocator);
      if (p.chunk < 0 || static_cast<std::size_t>(p.chunk) >= chunks_[a].size()) {
        error = "tensor " + std::to_string(t) + " (" + tensor.name + ") is in chunk " + std::to_string(p.chunk) +
                " of buffer " + std::to_string(p.buffer) + ", which has " + std::to_string(chunks_[a].size());
        return;
      }
      auto& chunk = chunks_[a][static_cast<std::size_t>(p.chunk)];
      const Bytes chunk_size = chunk.size() - 1;
      if (n > p.size || p.offset > chunk_size || p.size > chunk_size - p.offset) {
        error = "tensor " + std::to_string(t) + " (" + tensor.name + ", " + std::to_string(n) + " bytes, slot of " +
                std::to_string(p.size) + ") at offset " + std::to_string(p.offset) + " does not fit chunk " +
                std::to_string(p.chunk) + " of buffer " + std::to_string(p.buffer) + " (" + std::to_string(chunk_size) +
                " bytes)";
        return;
      }
      std::byte* base = chunk.data();
      if (in_place != nullptr) {
        if (a >= in_place->size() || static_cast<std::size_t>(p.chunk) >= (*in_place)[a].size()) {
          error = "no memory is given for chunk " + std::to_string(p.chunk) + " of allocator " + std::to_string(a);
          return;
        }
        base = (*in_place)[a][static_cast<std::size_t>(p.chunk)];
      }
      roots_[t] = Window{base + p.offset, chunk_defined_[a][static_cast<std::size_t>(p.chunk)].data() + p.offset, n};
    }
  }
  [[nodiscard]] std::string name() const override { return "planned"; }

  // The planned tensors whose slots cover byte `offset` of `root`'s chunk: who else was there.
  [[nodiscard]] std::string neighbours(const Graph& g, TensorId root, Bytes offset) const {
    const TensorPlacement& p = plan_.tensors[static_cast<std::size_t>(root)];
    if (!p.planned()) return "";
    const AllocatorId a = plan_.buffers[static_cast<std::size_t>(p.buffer)].allocator;
    const Bytes address = p.offset + offset;
    std::string text;
    for (std::size_t t = 0; t < plan_.tensors.size(); ++t) {
      const TensorPlacement& q = plan_.tensors[t];
      if (!q.planned() || static_cast<TensorId>(t) == root) continue;
      if (plan_.buffers[static_cast<std::size_t>(q.buffer)].allocator != a || q.chunk != p.chunk) continue;
      if (address < q.offset || address >= q.offset + q.size) continue;
      text += (text.empty() ? "" : ", ") + describe_tensor(g, static_cast<TensorId>(t)) + " [" +
              std::to_string(q.offset) + ", " + std::to_string(q.offset + q.size) + ")";
    }
    return text;
  }

 private:
  const Plan& plan_;
  std::vector<std::vector<std::vector<std::byte>>> chunks_;
  std::vector<std::vector<std::vector<std::uint8_t>>> chunk_defined_;
  std::vector<std::vector<std::byte>> own_;
  std::vector<std::vector<std::uint8_t>> own_defined_;
};

class Interpreter {
 public:
  Interpreter(const Graph& g, const Plan& plan, std::uint64_t seed, const ChunkBases* in_place = nullptr)
      : g_(g), plan_(plan), seed_(mix(seed)), reference_(g), planned_(g, plan, report_.failure, in_place) {
    if (!report_.failure.empty()) report_.ok = false;
  }

  ExecutionReport run() {
    if (!report_.ok) return report_;
    std::vector<char> listed(g_.tensors.size(), 0);
    for (TensorId id : g_.leafs) listed[static_cast<std::size_t>(id)] = 1;
    for (TensorId id : g_.nodes) listed[static_cast<std::size_t>(id)] = 1;
    filled_.assign(g_.tensors.size(), 0);

    // What exists before the first node: weights, then the leafs (the application sets them).
    for (std::size_t t = 0; t < g_.tensors.size(); ++t) {
      const Tensor& tensor = g_.tensors[t];
      if (tensor.has_memory && !tensor.is_view() && !fill(static_cast<TensorId>(t))) return report_;
    }
    const std::vector<char> overwritten = overwritten_first();
    for (TensorId leaf : g_.leafs) {
      const Tensor& tensor = g_[leaf];
      if (tensor.is_view() || tensor.has_memory || overwritten[static_cast<std::size_t>(leaf)]) continue;
      if (!fill(leaf)) return report_;
    }

    for (std::size_t i = 0; i < g_.nodes.size(); ++i) {
      const TensorId id = g_.nodes[i];
      const Tensor& t = g_[id];
      // Tensors that are neither node nor leaf get their bytes when first named.
      auto first_use = [&](TensorId other) {
        if (other == kNoTensor) return true;
        const TensorId root = root_of(g_, other);
        const Tensor& r = g_[root];
        if (listed[static_cast<std::size_t>(root)] || r.has_memory || filled_[static_cast<std::size_t>(root)])
          return true;
        return fill(root);
      };
      for (TensorId src : t.src) {
        if (!first_use(src)) return report_;
      }
      if (t.is_view() && !first_use(t.view_src)) return report_;
      if (is_dependency_view(t)) continue;

      const std::string where =
          "node " + std::to_string(i) + " " + describe_tensor(g_, id) + " (" + std::string(op_name(t.op)) + ")";
      for (int s = 0; s < kMaxSources; ++s) {
        const TensorId src = t.src[static_cast<std::size_t>(s)];
        if (src == kNoTensor || is_dependency_view(g_[src])) continue;
        if (t.is_view() && t.op == Op::Cpy && s == 1) continue;  // cpy's destination: written, not read
        if (!compare(src, where + " reads source " + std::to_string(s) + ", and")) return report_;
      }
      if (!is_alias_view(t)) {
        if (!compute(i, id, reference_) || !compute(i, id, planned_)) return report_;
      }
      if (!compare(id, "after " + where + " ran,")) return report_;
      report_.nodes_executed += 1;
    }

    for (std::size_t t = 0; t < g_.tensors.size(); ++t) {
      const Tensor& tensor = g_.tensors[t];
      if (!tensor.is_output() || is_dependency_view(tensor) || !listed[t]) continue;
      // As upstream ggml, the output flag protects the tensor that owns the memory: a view
      // flagged output whose root is not lets the root be freed once the view's own readers
      // are done (ggml_gallocr_free_node checks the root's flag). Such a view is compared
      // when it is computed, not at the end.
      if (tensor.is_view() && !g_[tensor.view_src].is_output() && !g_[tensor.view_src].has_memory) continue;
      if (!compare(static_cast<TensorId>(t), "at the end, output")) return report_;
    }
    return report_;
  }

 private:
  bool fail(std::string message) {
    report_.ok = false;
    report_.failure = std::move(message);
    return false;
  }

  std::optional<Window> window(Memory& memory, TensorId id) {
    std::string error;
    auto w = memory.window(g_, id, error);
    if (!w) fail(error);
    return w;
  }

  // Per tensor: its first use in node order is a CPY view that overwrites all of it (so the
  // application has no reason to set it, and it holds nothing before that node).
  [[nodiscard]] std::vector<char> overwritten_first() const {
    std::vector<char> seen(g_.tensors.size(), 0);
    std::vector<char> result(g_.tensors.size(), 0);
    for (TensorId id : g_.nodes) {
      const Tensor& t = g_[id];
      if (t.is_view() && !seen[static_cast<std::size_t>(t.view_src)]) {
        const Tensor& root = g_[t.view_src];
        seen[static_cast<std::size_t>(t.view_src)] = 1;
        result[static_cast<std::size_t>(t.view_src)] =
            t.op == Op::Cpy && t.view_offs == 0 && tensor_nbytes(t) == tensor_nbytes(root) &&
            t.nb == contiguous_strides(t.type, t.ne) && root.nb == contiguous_strides(root.type, root.ne);
      }
      for (TensorId src : t.src) {
        if (src != kNoTensor) seen[static_cast<std::size_t>(src)] = 1;
      }
    }
    return result;
  }

  bool fill(TensorId root) {
    filled_[static_cast<std::size_t>(root)] = 1;
    for (Memory* memory : {static_cast<Memory*>(&reference_), static_cast<Memory*>(&planned_)}) {
      auto w = window(*memory, root);
      if (!w) return false;
      for (Bytes i = 0; i < w->size; ++i) {
        w->data[i] = low_byte(mix(seed_ ^ (static_cast<std::uint64_t>(root) << 32) ^ i));
        w->defined[i] = 1;
      }
    }
    return true;
  }

  bool compare(TensorId id, const std::string& context) {
    auto ref = window(reference_, id);
    if (!ref) return false;
    auto got = window(planned_, id);
    if (!got) return false;
    for (Bytes i = 0; i < ref->size; ++i) {
      if (!ref->defined[i]) continue;
      report_.bytes_compared += 1;
      if (got->defined[i] && got->data[i] == ref->data[i]) continue;
      const TensorId root = root_of(g_, id);
      const Tensor& t = g_[id];
      const Bytes in_root = (t.is_view() ? t.view_offs : 0) + i;
      const TensorPlacement& p = plan_.tensors[static_cast<std::size_t>(root)];
      std::string message = context + " " + describe_tensor(g_, id) + " differs at byte " + std::to_string(i) + " of " +
                            std::to_string(ref->size) + ": planned " +
                            (got->defined[i] ? std::to_string(static_cast<int>(got->data[i])) : "undefined") +
                            ", no reuse " + std::to_string(static_cast<int>(ref->data[i]));
      if (root != id) message += "; it views " + describe_tensor(g_, root) + " at byte " + std::to_string(in_root);
      if (p.planned()) {
        message += "; planned at buffer " + std::to_string(p.buffer) + " chunk " + std::to_string(p.chunk) +
                   " offset " + std::to_string(p.offset) + " (" + std::to_string(p.size) + " bytes)";
        const std::string others = planned_.neighbours(g_, root, in_root);
        if (!others.empty()) message += "; that byte is also the slot of " + others;
      }
      return fail(message);
    }
    return true;
  }

  // One node in one run.
  bool compute(std::size_t index, TensorId id, Memory& memory) {
    const Tensor& t = g_[id];
    auto out = window(memory, id);
    if (!out) return false;
    std::vector<Window> srcs;
    for (TensorId src : t.src) {
      if (src == kNoTensor || is_dependency_view(g_[src])) continue;
      auto w = window(memory, src);
      if (!w) return false;
      srcs.push_back(*w);
    }
    const std::uint64_t salt = mix(seed_ ^ (0x1000003ull * (index + 1)) ^ static_cast<std::uint64_t>(t.op));
    const Bytes n = out->size;

    if (!t.is_view()) {
      if (op_can_inplace(t.op)) {
        // Element by element, reading as it goes: in-place safe.
        for (Bytes i = 0; i < n; ++i) {
          std::uint64_t h = mix(salt ^ i);
          std::uint8_t defined = 1;
          for (std::size_t k = 0; k < srcs.size(); ++k) {
            if (srcs[k].size == 0) continue;
            const Bytes j = i % srcs[k].size;
            h = mix(h ^ ((static_cast<std::uint64_t>(srcs[k].data[j]) + 1) << (9 * k)));
            defined &= srcs[k].defined[j];
          }
          out->data[i] = low_byte(h);
          out->defined[i] = defined;
        }
        return true;
      }
      // Whole sources first, then the output.
      std::uint64_t h = salt;
      std::uint8_t defined = 1;
      for (std::size_t k = 0; k < srcs.size(); ++k) {
        h = mix(h ^ (k + 1) ^ (srcs[k].size << 8));
        for (Bytes j = 0; j < srcs[k].size; ++j) {
          h = mix(h ^ static_cast<std::uint64_t>(srcs[k].data[j]));
          defined &= srcs[k].defined[j];
        }
      }
      for (Bytes i = 0; i < n; ++i) {
        out->data[i] = low_byte(mix(h ^ i));
        out->defined[i] = defined;
      }
      return true;
    }

    // A view that writes into its window: computed aside, then stored.
    std::vector<std::byte> data(out->data, out->data + n);
    std::vector<std::uint8_t> defined(out->defined, out->defined + n);
    auto source = [&](std::size_t k) { return k < srcs.size() ? srcs[k] : Window{}; };
    if (t.op == Op::Cpy) {
      const Window v = source(0);
      for (Bytes i = 0; i < n; ++i) {
        const Bytes j = v.size ? i % v.size : 0;
        data[i] = low_byte(mix(salt ^ i ^ (v.size ? static_cast<std::uint64_t>(v.data[j]) << 16 : 0)));
        defined[i] = v.size ? v.defined[j] : 1;
      }
    } else if (t.op == Op::Set || t.op == Op::Acc) {
      const Window b = source(1);
      const Bytes len = std::min(n, b.size);
      const Bytes start = n > len ? salt % (n - len + 1) : 0;
      for (Bytes j = 0; j < len; ++j) {
        if (t.op == Op::Set) {
          data[start + j] = b.data[j];
          defined[start + j] = b.defined[j];
        } else {
          data[start + j] = low_byte(
              mix(salt ^ (static_cast<std::uint64_t>(data[start + j]) << 8) ^ static_cast<std::uint64_t>(b.data[j])));
          defined[start + j] = defined[start + j] & b.defined[j];
        }
      }
    } else if (t.op == Op::SetRows) {
      const Window values = source(0);
      const Window rows = source(1);
      const auto traits = data_type_traits(t.type);
      const Bytes row = std::max<Bytes>(1, traits ? static_cast<Bytes>(std::max<std::int64_t>(t.ne[0], 1)) *
                                                        traits->type_size / static_cast<Bytes>(traits->block_size)
                                                  : 1);
      for (Bytes r = 0; r * row < n && rows.size > 0; ++r) {
        const Bytes pick = r % rows.size;
        if ((static_cast<unsigned>(rows.data[pick]) & 1u) == 0 && rows.defined[pick]) continue;
        for (Bytes j = r * row; j < std::min(n, (r + 1) * row); ++j) {
          const Bytes v = values.size ? j % values.size : 0;
          data[j] = values.size ? values.data[v] : std::byte{0};
          defined[j] = static_cast<std::uint8_t>(rows.defined[pick] & (values.size ? values.defined[v] : 1));
        }
      }
    } else {
      for (Bytes i = 0; i < n; ++i) {
        std::uint64_t h = mix(salt ^ i);
        std::uint8_t d = 1;
        for (std::size_t k = 0; k < srcs.size(); ++k) {
          if (srcs[k].size == 0) continue;
          const Bytes j = i % srcs[k].size;
          h = mix(h ^ ((static_cast<std::uint64_t>(srcs[k].data[j]) + 1) << (9 * k)));
          d &= srcs[k].defined[j];
        }
        data[i] = low_byte(h);
        defined[i] = d;
      }
    }
    std::copy(data.begin(), data.end(), out->data);
    std::copy(defined.begin(), defined.end(), out->defined);
    return true;
  }

  const Graph& g_;
  const Plan& plan_;
  std::uint64_t seed_;
  ExecutionReport report_;
  NoReuseMemory reference_;
  PlannedMemory planned_;
  std::vector<char> filled_;
};

}  // namespace

ExecutionReport execute_and_compare(const Graph& graph, Span<const BufferType* const> buffer_types, const Plan& plan,
                                    std::uint64_t seed) {
  (void)buffer_types;
  return Interpreter(graph, plan, seed).run();
}

ExecutionReport execute_in_place(const Graph& graph, const Plan& plan, const ChunkBases& chunk_bases,
                                 std::uint64_t seed) {
  return Interpreter(graph, plan, seed, &chunk_bases).run();
}

}  // namespace galloc::property
