// The 2023 ggml allocator API (whisper.rn 0.4.0-rc.8: ggml_allocr_*, ggml_tallocr_*, the
// first ggml_gallocr) on real graphs computed by the CPU backend. This one source is linked
// twice: against libggml-stock.a (rc.8's own ggml-alloc.c) and against libggml-galloc.a
// (galloc's drop-in); tests/dropin/compare.cmake compares the reports:
//
//   exact KEY VALUE   must be the same in every run (output hashes, facts about the API)
//   size  KEY BYTES   measured compute buffers: never larger with GALLOC_STRATEGY=best (the
//                     `ggml` strategy is late-2024 ggml's allocator, not this one: printed only)
//   info  KEY VALUE   reported, not compared
//
// Besides the reports, every run checks itself and exits 1 on the first failure: each graph's
// outputs equal those of the same graph computed in a plain context (no allocator), every
// tensor lies inside its allocator's buffer and inside the measured size, nodes that may run
// at once (parse_seq groups) share no bytes, and tensors nobody reads keep their data.
//
// Sizes: a measure allocator made from a backend measures from the base of a one-byte
// buffer that malloc put anywhere, so rc.8's measured sizes include up to alignment - 1 bytes
// of noise before the first aligned address. `size` lines leave that noise out (see
// base_pad); the real allocations get the size exactly as measured.
//
// api_2023_graphs [section]: runs one section (random, measure, reuse, parse, tallocr, sched,
// gallocr_n, keep) or all of them.
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "ggml-alloc.h"
#include "ggml-backend-impl.h"  // ggml-backend.h through this system header: it trips -Wshadow
#include "ggml-impl.h"          // ggml_hash_set_new, for ggml_gallocr_alloc_graph_n
#include "ggml.h"
#include "test_support.hpp"  // tests/dropin: fail, check, the reported lines, fnv1a, Rng

namespace {

using namespace galloc::dropin_test;

constexpr int kThreads = 1;  // rc.8's workers spin: on a busy machine a second thread costs seconds
constexpr int kGraphSize = 1024;
constexpr std::size_t kCpuAlignment = 64;  // rc.8's CPU buffer type

ggml_backend_t g_cpu = nullptr;

// Bytes from a buffer's base to its first address aligned for tensors: the noise in a
// measured size (see the top of the file). A drop-in may have no buffer behind a measure
// allocator: no noise then.
std::size_t base_pad(ggml_backend_buffer_t buffer, std::size_t alignment = kCpuAlignment) {
  if (buffer == nullptr) return 0;
  const auto base = reinterpret_cast<std::uintptr_t>(ggml_backend_buffer_get_base(buffer));
  return (alignment - base % alignment) % alignment;
}
// A measured size without the noise (an allocator that placed nothing measured 0).
std::size_t without_pad(std::size_t measured, std::size_t pad) { return measured > pad ? measured - pad : 0; }

// ------------------------------------------------------------------ tensors

bool is_view_op(ggml_op op) {
  return op == GGML_OP_VIEW || op == GGML_OP_RESHAPE || op == GGML_OP_PERMUTE || op == GGML_OP_TRANSPOSE;
}

const ggml_tensor* storage_root(const ggml_tensor* t) {
  while (t->view_src != nullptr) t = t->view_src;
  return t;
}

std::uintptr_t begin_of(const ggml_tensor* t) { return reinterpret_cast<std::uintptr_t>(t->data); }
std::uintptr_t end_of(const ggml_tensor* t) { return begin_of(t) + ggml_nbytes(t); }
bool overlap(const ggml_tensor* a, const ggml_tensor* b) { return begin_of(a) < end_of(b) && begin_of(b) < end_of(a); }

// An F32 tensor's values in element order, read through its strides: a view with gaps must
// not pick up bytes of other tensors.
std::vector<float> values_of(const ggml_tensor* t) {
  check(t->type == GGML_TYPE_F32, std::string("values_of: not F32: ") + t->name);
  std::vector<float> out;
  out.reserve(static_cast<std::size_t>(ggml_nelements(t)));
  const char* base = static_cast<const char*>(t->data);
  for (std::int64_t i3 = 0; i3 < t->ne[3]; ++i3) {
    for (std::int64_t i2 = 0; i2 < t->ne[2]; ++i2) {
      for (std::int64_t i1 = 0; i1 < t->ne[1]; ++i1) {
        for (std::int64_t i0 = 0; i0 < t->ne[0]; ++i0) {
          float f;
          std::memcpy(&f, base + i0 * t->nb[0] + i1 * t->nb[1] + i2 * t->nb[2] + i3 * t->nb[3], sizeof f);
          out.push_back(f);
        }
      }
    }
  }
  return out;
}

// Through the backend when the tensor has a buffer, else straight into a context's memory.
void set_data(ggml_tensor* t, const void* src, std::size_t n) {
  check(n == ggml_nbytes(t), std::string("set_data: size of ") + t->name);
  if (t->buffer != nullptr) {
    ggml_backend_tensor_set(t, src, 0, n);
  } else {
    std::memcpy(t->data, src, n);
  }
}
void fill_uniform(ggml_tensor* t, Rng& rng, float scale) {
  std::vector<float> v(static_cast<std::size_t>(ggml_nelements(t)));
  for (float& x : v) x = rng.uniform(scale);
  set_data(t, v.data(), v.size() * sizeof(float));
}

ggml_context* new_ctx(std::size_t n_tensors, std::size_t data_bytes, bool with_graph) {
  ggml_init_params p{};
  p.mem_size = n_tensors * ggml_tensor_overhead() + data_bytes +
               (with_graph ? ggml_graph_overhead_custom(kGraphSize, false) : 0);
  p.no_alloc = data_bytes == 0;
  ggml_context* ctx = ggml_init(p);
  check(ctx != nullptr, "ggml_init");
  return ctx;
}

// Graph nodes that no node reads, in node order: what a graph computes for its caller.
std::vector<ggml_tensor*> outputs_of(ggml_cgraph* gf) {
  std::set<const ggml_tensor*> read;
  for (int i = 0; i < gf->n_nodes; ++i) {
    for (const ggml_tensor* s : gf->nodes[i]->src) {
      if (s != nullptr) read.insert(s);
    }
  }
  std::vector<ggml_tensor*> out;
  for (int i = 0; i < gf->n_nodes; ++i) {
    if (read.count(gf->nodes[i]) == 0) out.push_back(gf->nodes[i]);
  }
  return out;
}

using Results = std::vector<std::vector<float>>;

Results results_of(ggml_cgraph* gf) {
  Results r;
  for (const ggml_tensor* t : outputs_of(gf)) r.push_back(values_of(t));
  return r;
}

std::string hash_of(const Results& r) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (const auto& v : r) h = fnv1a(v.data(), v.size() * sizeof(float), h);
  return hex(h);
}

// Bit for bit: the CPU kernels do not depend on where tensors are, so any difference is
// memory that was overwritten while still needed.
void check_results(const Results& got, const Results& want, const std::string& what) {
  check(!want.empty(), what + ": the graph has no outputs");
  check(got.size() == want.size(), what + ": number of outputs differs from the reference");
  for (std::size_t i = 0; i < got.size(); ++i) {
    check(got[i].size() == want[i].size() &&
              std::memcmp(got[i].data(), want[i].data(), got[i].size() * sizeof(float)) == 0,
          what + ": output " + std::to_string(i) + " differs from the reference computed without an allocator");
  }
}

void compute(ggml_cgraph* gf, const std::string& what) {
  check(ggml_backend_graph_compute(g_cpu, gf), what + ": ggml_backend_graph_compute failed");
}

// Computes the graph's nodes in `order`, another topological order than the graph's own.
void compute_in_order(ggml_cgraph* gf, std::vector<ggml_tensor*> order, const std::string& what) {
  ggml_cgraph view = ggml_graph_view(gf, 0, 0);
  view.nodes = order.data();
  view.n_nodes = static_cast<int>(order.size());
  compute(&view, what);
}

// ------------------------------------------------------------------ random programs

// What a graph computes, independent of any context: each step makes one value (an F32
// matrix [ne0, ne1], or the I32 indices of a get_rows) from earlier ones. Built into ggml
// tensors as many times as needed (measure, real, reference), always to the same graph.
enum class Op {
  kInput,
  kIndex,  // I32 [p0] with values below p1
  kAdd,
  kSub,
  kMul,
  kAddBias,
  kScale,
  kGelu,
  kSilu,
  kRelu,
  kSqr,
  kSoftMax,
  kRmsNorm,
  kNorm,
  kMulMatW,  // weight [a.ne0, p0] times a
  kMulMat,   // a and b share ne0
  kCpy,      // into a fresh tensor (a leaf that is written before it is read)
  kTransposeCont,
  kReshape,       // [ne0 / 2, 2 ne1]
  kViewRows,      // rows [p0, p0 + p1): contiguous
  kViewColsCont,  // columns [p0, p0 + p1), made contiguous
  kConcat,        // along dim 2, reshaped to [ne0, 2 ne1]
  kGetRows,       // rows b (an kIndex) of a
  kWeightView,    // rows [p2, p2 + p3) of weight [p0, p1]: memory the allocator does not own
};

struct Step {
  Op op = Op::kInput;
  int a = -1, b = -1;
  std::int64_t p[4] = {0, 0, 0, 0};
  float f = 0.0f;
  std::int64_t ne0 = 0, ne1 = 0;  // the value's shape
};

struct Program {
  std::vector<Step> steps;
  std::size_t data_bytes = 4096;  // bound on the graph's tensor data, for a context with memory

  int push(Step s) {
    const Step* a = s.a >= 0 ? &steps[static_cast<std::size_t>(s.a)] : nullptr;
    switch (s.op) {
      case Op::kInput: s.ne0 = s.p[0], s.ne1 = s.p[1]; break;
      case Op::kIndex: s.ne0 = s.p[0], s.ne1 = 1; break;
      case Op::kMulMatW: s.ne0 = s.p[0], s.ne1 = a->ne1; break;
      case Op::kMulMat: s.ne0 = a->ne1, s.ne1 = steps[static_cast<std::size_t>(s.b)].ne1; break;
      case Op::kTransposeCont: s.ne0 = a->ne1, s.ne1 = a->ne0; break;
      case Op::kReshape: s.ne0 = a->ne0 / 2, s.ne1 = a->ne1 * 2; break;
      case Op::kViewRows: s.ne0 = a->ne0, s.ne1 = s.p[1]; break;
      case Op::kViewColsCont: s.ne0 = s.p[1], s.ne1 = a->ne1; break;
      case Op::kConcat: s.ne0 = a->ne0, s.ne1 = 2 * a->ne1; break;
      case Op::kGetRows: s.ne0 = a->ne0, s.ne1 = steps[static_cast<std::size_t>(s.b)].p[0]; break;
      case Op::kWeightView: s.ne0 = s.p[0], s.ne1 = s.p[3]; break;
      default: s.ne0 = a->ne0, s.ne1 = a->ne1; break;
    }
    // the value, a fresh CPY destination or concat's 3-D result, and alignment
    data_bytes += 2 * static_cast<std::size_t>(s.ne0 * s.ne1) * sizeof(float) + 256;
    steps.push_back(s);
    return static_cast<int>(steps.size()) - 1;
  }
  const Step& operator[](int i) const { return steps[static_cast<std::size_t>(i)]; }
  int size() const { return static_cast<int>(steps.size()); }
};

Step step(Op op, int a = -1, int b = -1) {
  Step s;
  s.op = op;
  s.a = a;
  s.b = b;
  return s;
}
Step input(std::int64_t ne0, std::int64_t ne1) {
  Step s = step(Op::kInput);
  s.p[0] = ne0;
  s.p[1] = ne1;
  return s;
}
Step mul_mat_w(int a, std::int64_t n_out) {
  Step s = step(Op::kMulMatW, a);
  s.p[0] = n_out;
  return s;
}

int node_cost(Op op) {
  switch (op) {
    case Op::kInput:
    case Op::kIndex: return 0;
    case Op::kTransposeCont:
    case Op::kViewColsCont:
    case Op::kConcat: return 2;
    default: return 1;
  }
}

// A random program with about `target` graph nodes (10..60 from the seed when 0), the op mix
// of tests/differential limited to what rc.8 has. Operands: values nobody read yet first, so
// most values are read and the graph has a few outputs; else recent ones, to build chains.
Program generate(std::uint64_t seed, int target = 0) {
  Rng rng(seed + 0x1e6ac7);
  Program p;
  static const std::int64_t kDims[] = {16, 32, 64};
  static const std::int64_t kOuts[] = {8, 16, 32, 64};
  const std::int64_t t = 1 + rng.below(8);
  if (target == 0) target = 10 + static_cast<int>(rng.below(51));
  std::vector<int> uses;
  auto push = [&](Step s) {
    if (s.a >= 0) ++uses[static_cast<std::size_t>(s.a)];
    if (s.b >= 0) ++uses[static_cast<std::size_t>(s.b)];
    uses.push_back(0);
    return p.push(s);
  };
  const int n_inputs = 1 + static_cast<int>(rng.below(3));
  for (int i = 0; i < n_inputs; ++i) {
    const std::int64_t ne0 = kDims[rng.below(3)];  // (one draw per statement: the same graphs from any compiler)
    push(input(ne0, rng.below(3) == 0 ? 2 * t : t));
  }
  int nodes = 0;
  // every input is read
  for (int i = 0; i < n_inputs; ++i) {
    static const Op kFirst[] = {Op::kMulMatW, Op::kScale, Op::kGelu, Op::kAddBias, Op::kRmsNorm};
    Step s = step(kFirst[rng.below(5)], i);
    s.f = 0.5f;
    s.p[0] = kOuts[rng.below(4)];
    push(s);
    ++nodes;
  }
  auto pick = [&]() {
    std::vector<int> unread, recent;
    for (int i = 0; i < p.size(); ++i) {
      if (p[i].op == Op::kIndex) continue;
      if (uses[static_cast<std::size_t>(i)] == 0) unread.push_back(i);
      if (i >= p.size() - 6) recent.push_back(i);
    }
    if (!unread.empty() && rng.below(3) != 0) return unread[static_cast<std::size_t>(rng.below(unread.size()))];
    return recent[static_cast<std::size_t>(rng.below(recent.size()))];
  };
  // values of a's shape, or (for broadcasts) one row of a's width
  auto partner = [&](int a, bool row) {
    std::vector<int> c;
    for (int i = 0; i < p.size(); ++i) {
      if (p[i].op == Op::kIndex || p[i].ne0 != p[a].ne0) continue;
      if (p[i].ne1 == p[a].ne1 || (row && p[i].ne1 == 1)) c.push_back(i);
    }
    return c.empty() ? a : c[static_cast<std::size_t>(rng.below(c.size()))];
  };
  struct Weighted {
    Op op;
    int weight;
  };
  static const Weighted kMix[] = {
      {Op::kAdd, 10},          {Op::kSub, 4},       {Op::kMul, 8},      {Op::kAddBias, 6},      {Op::kScale, 5},
      {Op::kGelu, 4},          {Op::kSilu, 4},      {Op::kRelu, 3},     {Op::kSqr, 3},          {Op::kSoftMax, 5},
      {Op::kRmsNorm, 5},       {Op::kNorm, 4},      {Op::kMulMatW, 10}, {Op::kMulMat, 4},       {Op::kCpy, 4},
      {Op::kTransposeCont, 4}, {Op::kReshape, 4},   {Op::kViewRows, 5}, {Op::kViewColsCont, 3}, {Op::kConcat, 3},
      {Op::kGetRows, 3},       {Op::kWeightView, 2}};
  int total = 0;
  for (const auto& w : kMix) total += w.weight;
  while (nodes < target) {
    int r = static_cast<int>(rng.below(total));
    Op op = kMix[0].op;
    for (const auto& w : kMix) {
      if (r < w.weight) {
        op = w.op;
        break;
      }
      r -= w.weight;
    }
    const int a = pick();
    const Step sa = p[a];  // (a copy: pushing an index below moves the steps)
    Step s = step(op, a);
    switch (op) {
      case Op::kAdd:
      case Op::kMul: s.b = partner(a, true); break;
      case Op::kSub: s.b = partner(a, false); break;
      case Op::kScale: s.f = rng.below(2) == 0 ? 0.5f : 1.5f; break;
      case Op::kMulMatW: s.p[0] = kOuts[rng.below(4)]; break;
      case Op::kMulMat: {
        std::vector<int> c;
        for (int i = 0; i < p.size(); ++i) {
          if (p[i].op != Op::kIndex && p[i].ne0 == sa.ne0) c.push_back(i);
        }
        s.b = c[static_cast<std::size_t>(rng.below(c.size()))];
        break;
      }
      case Op::kReshape:
        if (sa.ne0 % 2 != 0 || sa.ne1 * 2 > 64) continue;
        break;
      case Op::kViewRows:
        if (sa.ne1 < 2) continue;
        s.p[0] = rng.below(2) == 0 ? 0 : rng.below(sa.ne1);  // offset 0: an in-place candidate
        s.p[1] = 1 + rng.below(sa.ne1 - s.p[0]);
        break;
      case Op::kViewColsCont:
        if (sa.ne0 < 2) continue;
        s.p[0] = rng.below(sa.ne0);
        s.p[1] = 1 + rng.below(sa.ne0 - s.p[0]);
        break;
      case Op::kConcat:
        if (sa.ne1 * 2 > 64) continue;
        s.b = partner(a, false);
        break;
      case Op::kGetRows: {
        Step idx = step(Op::kIndex);
        idx.p[0] = 1 + rng.below(8);
        idx.p[1] = sa.ne1;
        s.b = push(idx);
        break;
      }
      case Op::kWeightView:
        s.a = -1;
        s.p[0] = kDims[rng.below(3)];
        s.p[1] = kOuts[rng.below(4)];
        s.p[2] = rng.below(s.p[1]);
        s.p[3] = 1 + rng.below(std::min<std::int64_t>(16, s.p[1] - s.p[2]));
        break;
      default: break;
    }
    push(s);
    nodes += node_cost(op);
  }
  return p;
}

// ------------------------------------------------------------------ weights

// The weights the programs read: a matrix per (n_in, n_out) and a bias per width, in a
// context with memory of its own (the CPU-only way of rc.8's days) or in a backend buffer.
struct Weights {
  ggml_context* ctx = nullptr;
  ggml_backend_buffer_t buffer = nullptr;
  std::map<std::pair<std::int64_t, std::int64_t>, ggml_tensor*> mats;
  std::map<std::int64_t, ggml_tensor*> biases;

  ggml_tensor* mat(std::int64_t n_in, std::int64_t n_out) const { return mats.at({n_in, n_out}); }
  // (for check_placement)
  std::function<bool(const ggml_tensor*)> owner() const {
    return [this](const ggml_tensor* t) { return owns(t); };
  }
  bool owns(const ggml_tensor* t) const {
    for (const auto& [k, m] : mats) {
      if (m == t) return true;
    }
    for (const auto& [k, b] : biases) {
      if (b == t) return true;
    }
    return false;
  }
};

Weights make_weights(const std::vector<const Program*>& programs, bool in_buffer, std::uint64_t seed) {
  std::set<std::pair<std::int64_t, std::int64_t>> mats;
  std::set<std::int64_t> biases;
  for (const Program* p : programs) {
    for (const Step& s : p->steps) {
      if (s.op == Op::kMulMatW) mats.insert({(*p)[s.a].ne0, s.p[0]});
      if (s.op == Op::kWeightView) mats.insert({s.p[0], s.p[1]});
      if (s.op == Op::kAddBias) biases.insert(s.ne0);
    }
  }
  std::size_t bytes = 0;
  for (const auto& [n_in, n_out] : mats) bytes += static_cast<std::size_t>(n_in * n_out) * sizeof(float) + 64;
  for (std::int64_t n : biases) bytes += static_cast<std::size_t>(n) * sizeof(float) + 64;
  Weights w;
  w.ctx = new_ctx(mats.size() + biases.size() + 1, in_buffer ? 0 : bytes, false);
  for (const auto& [n_in, n_out] : mats) w.mats[{n_in, n_out}] = ggml_new_tensor_2d(w.ctx, GGML_TYPE_F32, n_in, n_out);
  for (std::int64_t n : biases) w.biases[n] = ggml_new_tensor_1d(w.ctx, GGML_TYPE_F32, n);
  if (in_buffer && !(mats.empty() && biases.empty())) {  // (NULL for an empty context)
    w.buffer = ggml_backend_alloc_ctx_tensors(w.ctx, g_cpu);
    check(w.buffer != nullptr, "ggml_backend_alloc_ctx_tensors (weights)");
    ggml_backend_buffer_set_usage(w.buffer, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
  }
  Rng rng(seed + 77);
  for (auto& [key, m] : w.mats) fill_uniform(m, rng, 1.0f / std::sqrt(static_cast<float>(key.first)));
  for (auto& [key, b] : w.biases) fill_uniform(b, rng, 0.5f);
  return w;
}

void free_weights(Weights& w) {
  if (w.buffer != nullptr) ggml_backend_buffer_free(w.buffer);
  ggml_free(w.ctx);
  w = Weights{};
}

// ------------------------------------------------------------------ building

struct Built {
  ggml_context* ctx = nullptr;
  ggml_cgraph* gf = nullptr;
  std::vector<ggml_tensor*> values;  // per step
};

// Gives an input memory before the graph is allocated (ggml_allocr_alloc and friends), or
// nothing in a context with memory of its own.
using Place = std::function<void(ggml_tensor*)>;

void nowhere(ggml_tensor*) {}
Place allocr_in(ggml_allocr_t a) {
  return [a](ggml_tensor* t) { ggml_allocr_alloc(a, t); };
}
Place tallocr_in(ggml_tallocr_t a) {
  return [a](ggml_tensor* t) { ggml_tallocr_alloc(a, t); };
}

// Builds the program's graph. Inputs are placed and, unless measuring, written at once, as
// whisper.cpp does: from then on the allocator owns them.
Built build(const Program& p, const Weights& w, bool with_memory, const Place& place, bool write,
            std::uint64_t data_seed) {
  Built b;
  b.ctx = new_ctx(4 * static_cast<std::size_t>(p.size()) + 16, with_memory ? p.data_bytes : 0, true);
  ggml_context* c = b.ctx;
  b.gf = ggml_new_graph_custom(c, kGraphSize, false);
  std::vector<int> uses(static_cast<std::size_t>(p.size()), 0);
  for (const Step& s : p.steps) {
    if (s.a >= 0) ++uses[static_cast<std::size_t>(s.a)];
    if (s.b >= 0) ++uses[static_cast<std::size_t>(s.b)];
  }
  for (int i = 0; i < p.size(); ++i) {
    const Step& s = p[i];
    ggml_tensor* a = s.a >= 0 ? b.values[static_cast<std::size_t>(s.a)] : nullptr;
    ggml_tensor* bb = s.b >= 0 ? b.values[static_cast<std::size_t>(s.b)] : nullptr;
    ggml_tensor* t = nullptr;
    Rng rng(data_seed * 7919 + static_cast<std::uint64_t>(i));
    switch (s.op) {
      case Op::kInput:
        t = ggml_new_tensor_2d(c, GGML_TYPE_F32, s.ne0, s.ne1);
        place(t);
        if (write) fill_uniform(t, rng, 1.0f);
        break;
      case Op::kIndex: {
        t = ggml_new_tensor_1d(c, GGML_TYPE_I32, s.p[0]);
        place(t);
        std::vector<std::int32_t> rows(static_cast<std::size_t>(s.p[0]));
        for (auto& r : rows) r = static_cast<std::int32_t>(rng.below(s.p[1]));
        if (write) set_data(t, rows.data(), rows.size() * sizeof(std::int32_t));
        break;
      }
      case Op::kAdd: t = ggml_add(c, a, bb); break;
      case Op::kSub: t = ggml_sub(c, a, bb); break;
      case Op::kMul: t = ggml_mul(c, a, bb); break;
      case Op::kAddBias: t = ggml_add(c, a, w.biases.at(a->ne[0])); break;
      case Op::kScale: t = ggml_scale(c, a, s.f); break;
      case Op::kGelu: t = ggml_gelu(c, a); break;
      case Op::kSilu: t = ggml_silu(c, a); break;
      case Op::kRelu: t = ggml_relu(c, a); break;
      case Op::kSqr: t = ggml_sqr(c, a); break;
      case Op::kSoftMax: t = ggml_soft_max(c, a); break;
      case Op::kRmsNorm: t = ggml_rms_norm(c, a, 1e-5f); break;
      case Op::kNorm: t = ggml_norm(c, a, 1e-5f); break;
      case Op::kMulMatW: t = ggml_mul_mat(c, w.mat(a->ne[0], s.p[0]), a); break;
      case Op::kMulMat: t = ggml_mul_mat(c, a, bb); break;
      case Op::kCpy: t = ggml_cpy(c, a, ggml_new_tensor_2d(c, GGML_TYPE_F32, s.ne0, s.ne1)); break;
      case Op::kTransposeCont: t = ggml_cont(c, ggml_transpose(c, a)); break;
      case Op::kReshape: t = ggml_reshape_2d(c, a, s.ne0, s.ne1); break;
      case Op::kViewRows:
        t = ggml_view_2d(c, a, a->ne[0], s.p[1], a->nb[1], static_cast<std::size_t>(s.p[0]) * a->nb[1]);
        break;
      case Op::kViewColsCont:
        t = ggml_cont(c, ggml_view_2d(c, a, s.p[1], a->ne[1], a->nb[1], static_cast<std::size_t>(s.p[0]) * a->nb[0]));
        break;
      case Op::kConcat: t = ggml_reshape_2d(c, ggml_concat(c, a, bb), s.ne0, s.ne1); break;
      case Op::kGetRows: t = ggml_get_rows(c, a, bb); break;
      case Op::kWeightView: {
        ggml_tensor* m = w.mat(s.p[0], s.p[1]);
        t = ggml_view_2d(c, m, s.p[0], s.p[3], m->nb[1], static_cast<std::size_t>(s.p[2]) * m->nb[1]);
        break;
      }
    }
    check(t != nullptr && t->ne[0] == s.ne0 && t->ne[1] == s.ne1, "build: step " + std::to_string(i) + " shape");
    b.values.push_back(t);
  }
  for (int i = 0; i < p.size(); ++i) {
    if (uses[static_cast<std::size_t>(i)] == 0) ggml_build_forward_expand(b.gf, b.values[static_cast<std::size_t>(i)]);
  }
  return b;
}

// The reference: the same graph in a context with memory for every tensor (no allocator,
// nothing shared), computed by ggml_graph_compute.
Results reference(const Program& p, const Weights& w, std::uint64_t data_seed) {
  Built b = build(p, w, true, nowhere, true, data_seed);
  ggml_cplan plan = ggml_graph_plan(b.gf, kThreads);
  std::vector<std::uint8_t> work(plan.work_size + 1);
  plan.work_data = work.data();
  check(ggml_graph_compute(b.gf, &plan) == GGML_EXIT_SUCCESS, "reference ggml_graph_compute");
  Results r = results_of(b.gf);
  ggml_free(b.ctx);
  return r;
}

// ------------------------------------------------------------------ placement checks

struct Region {
  ggml_backend_buffer_t buffer;
  std::size_t limit;  // bytes from the first aligned address that tensors may use (measured)
};

// Every node and leaf has memory: inside one of the allocators' buffers, within the measured
// size from its first aligned address; or inside memory the allocators do not own (weights,
// `external`).
void check_placement(ggml_cgraph* gf, const std::vector<Region>& regions,
                     const std::function<bool(const ggml_tensor*)>& external, const std::string& what) {
  auto check_one = [&](const ggml_tensor* t) {
    const std::string name = what + ": " + ggml_op_name(t->op) + " tensor " + t->name;
    check(t->data != nullptr, name + " has no data after alloc_graph");
    const ggml_tensor* root = storage_root(t);
    if (external(root)) {
      check(begin_of(t) >= begin_of(root) && end_of(t) <= end_of(root), name + " leaves the tensor it views");
      return;
    }
    for (const Region& r : regions) {
      const auto base = reinterpret_cast<std::uintptr_t>(ggml_backend_buffer_get_base(r.buffer));
      if (begin_of(t) < base || end_of(t) > base + ggml_backend_buffer_get_size(r.buffer)) continue;
      const std::size_t end = end_of(t) - (base + base_pad(r.buffer));
      check(end <= r.limit, name + " ends beyond the measured size (at " + std::to_string(end) + " of " +
                                std::to_string(r.limit) + " bytes from the first aligned address)");
      return;
    }
    check(false, name + " is outside the allocator's buffer");
  };
  for (int i = 0; i < gf->n_leafs; ++i) check_one(gf->leafs[i]);
  for (int i = 0; i < gf->n_nodes; ++i) check_one(gf->nodes[i]);
}

// ------------------------------------------------------------------ parse orders

// Nodes grouped by depth (one deeper than the deepest source node): the nodes of a group do
// not read each other, so they could run at once. Within a group, the reverse of the graph's
// order; -1 after each group (but the last, unless `closed`).
std::vector<int> level_seq(ggml_cgraph* gf, bool closed) {
  std::map<const ggml_tensor*, int> depth;
  int max_depth = 0;
  for (int i = 0; i < gf->n_nodes; ++i) {
    int d = 0;
    for (const ggml_tensor* s : gf->nodes[i]->src) {
      auto it = s != nullptr ? depth.find(s) : depth.end();
      if (it != depth.end()) d = std::max(d, it->second + 1);
    }
    depth[gf->nodes[i]] = d;
    max_depth = std::max(max_depth, d);
  }
  std::vector<int> seq;
  for (int d = 0; d <= max_depth; ++d) {
    for (int i = gf->n_nodes - 1; i >= 0; --i) {
      if (depth[gf->nodes[i]] == d) seq.push_back(i);
    }
    if (d < max_depth || closed) seq.push_back(-1);
  }
  return seq;
}

std::vector<std::vector<ggml_tensor*>> groups_of(ggml_cgraph* gf, const std::vector<int>& seq) {
  std::vector<std::vector<ggml_tensor*>> groups(1);
  for (int i : seq) {
    if (i == -1) {
      groups.emplace_back();
    } else {
      groups.back().push_back(gf->nodes[i]);
    }
  }
  if (groups.back().empty()) groups.pop_back();
  return groups;
}

// Within a group, a node's output shares no bytes with anything else the group reads or
// writes, except a source it runs in place on: exactly the source's bytes (same start, same
// layout), and no other node of the group reads that source. (By addresses, not by
// view_src: a drop-in need not mark in-place nodes as rc.8 does.)
void check_groups(ggml_cgraph* gf, const std::vector<int>& seq, const std::string& what) {
  for (const auto& group : groups_of(gf, seq)) {
    auto readers = [&](const ggml_tensor* t) {
      int n = 0;
      for (const ggml_tensor* m : group) {
        if (!is_view_op(m->op) && std::find(std::begin(m->src), std::end(m->src), t) != std::end(m->src)) ++n;
      }
      return n;
    };
    for (const ggml_tensor* n : group) {
      if (is_view_op(n->op)) continue;  // writes nothing
      for (const ggml_tensor* m : group) {
        if (is_view_op(m->op)) continue;
        std::vector<const ggml_tensor*> touched;
        if (m != n) touched.push_back(m);
        for (const ggml_tensor* s : m->src) {
          if (s != nullptr && s != n) touched.push_back(s);
        }
        for (const ggml_tensor* t : touched) {
          if (!overlap(n, t)) continue;
          const bool in_place = m == n && n->data == t->data && n->type == t->type &&
                                std::equal(std::begin(n->ne), std::end(n->ne), std::begin(t->ne)) &&
                                std::equal(std::begin(n->nb), std::end(n->nb), std::begin(t->nb));
          check(in_place && readers(t) == 1, what + ": " + n->name + " (" + ggml_op_name(n->op) + ") overlaps " +
                                                 t->name + " (" + ggml_op_name(t->op) + ", " +
                                                 (m == n ? "its source" : std::string("used by ") + m->name) +
                                                 ") in one parse_seq group");
        }
      }
    }
  }
}

// A valid serialization of the groups: each group backwards (as if run at once).
std::vector<ggml_tensor*> order_of(ggml_cgraph* gf, const std::vector<int>& seq) {
  std::vector<ggml_tensor*> order;
  for (auto& group : groups_of(gf, seq)) order.insert(order.end(), group.rbegin(), group.rend());
  return order;
}

using SeqOf = std::function<std::vector<int>(const Built&)>;

// ------------------------------------------------------------------ the whisper.cpp sequence

struct RunResult {
  std::size_t measured = 0;  // without the noise
  Results results;
  int nodes = 0;
  int in_place = 0;  // nodes that took over a source's memory
};

// ggml_allocr_new_measure_from_backend, build, alloc_graph: the size; a backend buffer of
// exactly that size, ggml_allocr_new_from_buffer, build again, alloc_graph, compute (in the
// parse order when there is one). Checks placement, groups and results.
RunResult run_allocr(const Program& p, const Weights& w, const SeqOf& seq_of, std::uint64_t data_seed,
                     const Results& want, const std::string& what) {
  RunResult out;
  ggml_allocr_t measure = ggml_allocr_new_measure_from_backend(g_cpu);
  check(measure != nullptr && ggml_allocr_is_measure(measure), what + ": measure allocator");
  Built m = build(p, w, false, allocr_in(measure), false, data_seed);
  std::vector<int> seq;
  if (seq_of) {
    seq = seq_of(m);
    ggml_allocr_set_parse_seq(measure, seq.data(), static_cast<int>(seq.size()));
  }
  const std::size_t measured = ggml_allocr_alloc_graph(measure, m.gf);
  check(measured == ggml_allocr_max_size(measure), what + ": alloc_graph returned other than max_size");
  const std::size_t pad = base_pad(ggml_allocr_get_buffer(measure));
  out.measured = without_pad(measured, pad);
  ggml_allocr_free(measure);
  ggml_free(m.ctx);

  ggml_backend_buffer_t buffer = ggml_backend_alloc_buffer(g_cpu, measured);
  check(buffer != nullptr, what + ": ggml_backend_alloc_buffer");
  ggml_allocr_t alloc = ggml_allocr_new_from_buffer(buffer);
  check(!ggml_allocr_is_measure(alloc) && ggml_allocr_get_buffer(alloc) == buffer, what + ": real allocator");
  if (!seq.empty()) ggml_allocr_set_parse_seq(alloc, seq.data(), static_cast<int>(seq.size()));
  Built r = build(p, w, false, allocr_in(alloc), true, data_seed);
  const std::size_t real = ggml_allocr_alloc_graph(alloc, r.gf);
  check(without_pad(real, base_pad(buffer)) <= out.measured,
        what + ": the real allocation needs more than measured (" + std::to_string(real) + " bytes, pad " +
            std::to_string(base_pad(buffer)) + "; measured " + std::to_string(measured) + ", pad " +
            std::to_string(pad) + ")");
  check_placement(r.gf, {{buffer, out.measured}}, w.owner(), what);
  if (!seq.empty()) {
    check_groups(r.gf, seq, what);
    compute_in_order(r.gf, order_of(r.gf, seq), what);
  } else {
    compute(r.gf, what);
  }
  out.results = results_of(r.gf);
  check_results(out.results, want, what);
  out.nodes = r.gf->n_nodes;
  for (int i = 0; i < r.gf->n_nodes; ++i) {
    const ggml_tensor* n = r.gf->nodes[i];
    if (n->view_src != nullptr && !is_view_op(n->op) && n->op != GGML_OP_CPY) ++out.in_place;
  }
  ggml_allocr_free(alloc);
  ggml_backend_buffer_free(buffer);
  ggml_free(r.ctx);
  return out;
}

// ------------------------------------------------------------------ sections

// 60 random graphs through the whisper.cpp sequence; every third again with a parse order
// in dependency levels.
void random_case() {
  int total_nodes = 0, in_place = 0;
  for (std::uint64_t seed = 0; seed < 60; ++seed) {
    const Program p = generate(seed);
    Weights w = make_weights({&p}, seed % 2 == 1, seed);
    const std::string key = "random" + std::to_string(seed);
    const Results want = reference(p, w, seed);
    const RunResult r = run_allocr(p, w, nullptr, seed, want, key);
    exact(key + ".nodes", static_cast<std::uint64_t>(r.nodes));
    total_nodes += r.nodes;
    size_line(key + ".measure", r.measured);
    exact(key + ".out", hash_of(r.results));
    in_place += r.in_place;
    if (seed % 3 == 0) {
      const RunResult l = run_allocr(
          p, w, [](const Built& b) { return level_seq(b.gf, true); }, seed, want, key + ".levels");
      size_line(key + ".levels.measure", l.measured);
    }
    free_weights(w);
  }
  info("random.nodes", std::to_string(total_nodes) + " nodes in 60 graphs, " + std::to_string(in_place) + " in place");
}

// Measure mode with each constructor: is_measure, max_size, and a real allocator of the
// measured size that computes the graph right.
void measure_case() {
  const Program p = generate(1001, 40);
  Weights w = make_weights({&p}, true, 1001);
  const Results want = reference(p, w, 1);
  const auto owned = w.owner();

  // from the backend: ggml_allocr_new_measure_from_backend, then ggml_allocr_new_from_backend
  // (a buffer the allocator owns)
  {
    ggml_allocr_t measure = ggml_allocr_new_measure_from_backend(g_cpu);
    Built m = build(p, w, false, allocr_in(measure), false, 1);
    const std::size_t measured = ggml_allocr_alloc_graph(measure, m.gf);
    check(measured == ggml_allocr_max_size(measure), "measure: alloc_graph returned other than max_size");
    const std::size_t pad = base_pad(ggml_allocr_get_buffer(measure));
    const std::size_t size = without_pad(measured, pad);
    size_line("measure.backend", size);
    info("measure.backend.returned", std::to_string(measured) + " bytes, " + std::to_string(pad) + " of them noise");
    const bool is_measure = ggml_allocr_is_measure(measure);
    ggml_allocr_free(measure);
    ggml_free(m.ctx);

    ggml_allocr_t alloc = ggml_allocr_new_from_backend(g_cpu, measured);
    check(alloc != nullptr, "ggml_allocr_new_from_backend");
    ggml_backend_buffer_t buffer = ggml_allocr_get_buffer(alloc);
    check(buffer != nullptr && ggml_backend_buffer_get_size(buffer) >= measured, "measure: owned buffer size");
    exact("measure.is_measure",
          std::string(is_measure ? "true" : "false") + "," + (ggml_allocr_is_measure(alloc) ? "true" : "false"));
    Built r = build(p, w, false, allocr_in(alloc), true, 1);
    ggml_allocr_alloc_graph(alloc, r.gf);
    check_placement(r.gf, {{buffer, size}}, owned, "measure.backend");
    compute(r.gf, "measure.backend");
    const Results got = results_of(r.gf);
    check_results(got, want, "measure.backend");
    exact("measure.backend.out", hash_of(got));
    ggml_allocr_free(alloc);  // frees the buffer too
    ggml_free(r.ctx);
  }

  // CPU only: ggml_allocr_new_measure(alignment), then ggml_allocr_new over memory of the
  // caller's (aligned, so the measured size fits)
  for (std::size_t alignment : {32, 64}) {
    const std::string key = "measure.cpu" + std::to_string(alignment);
    ggml_allocr_t measure = ggml_allocr_new_measure(alignment);
    check(ggml_allocr_is_measure(measure), key + ": is_measure");
    Built m = build(p, w, false, allocr_in(measure), false, 1);
    const std::size_t measured = ggml_allocr_alloc_graph(measure, m.gf);
    check(measured == ggml_allocr_max_size(measure), key + ": alloc_graph returned other than max_size");
    const std::size_t size = without_pad(measured, base_pad(ggml_allocr_get_buffer(measure), alignment));
    size_line(key, size);
    ggml_allocr_free(measure);
    ggml_free(m.ctx);

    const std::size_t rounded = (measured + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment;
    void* memory = std::aligned_alloc(kCpuAlignment, rounded);
    check(memory != nullptr, key + ": aligned_alloc");
    ggml_allocr_t alloc = ggml_allocr_new(memory, measured, alignment);
    check(!ggml_allocr_is_measure(alloc), key + ": is_measure on a real allocator");
    Built r = build(p, w, false, allocr_in(alloc), true, 1);
    ggml_allocr_alloc_graph(alloc, r.gf);
    ggml_backend_buffer_t buffer = ggml_allocr_get_buffer(alloc);
    check(buffer != nullptr && ggml_backend_buffer_get_base(buffer) == memory, key + ": buffer over the memory");
    check_placement(r.gf, {{buffer, size}}, owned, key);
    compute(r.gf, key);
    const Results got = results_of(r.gf);
    check_results(got, want, key);
    exact(key + ".out", hash_of(got));
    ggml_allocr_free(alloc);
    ggml_free(r.ctx);
    std::free(memory);
  }
  free_weights(w);
}

// One real allocator for three graphs in a row and the first again (reset before each), as
// whisper.cpp's decoder allocator serves every decode step. Measured on one measure
// allocator, reset between the graphs.
void reuse_case() {
  const Program ps[3] = {generate(2001, 30), generate(2002, 50), generate(2003, 20)};
  Weights w = make_weights({&ps[0], &ps[1], &ps[2]}, false, 2000);

  ggml_allocr_t measure = ggml_allocr_new_measure_from_backend(g_cpu);
  const std::size_t pad = base_pad(ggml_allocr_get_buffer(measure));
  std::size_t measured = 0;
  for (int i = 0; i < 3; ++i) {
    ggml_allocr_reset(measure);
    Built m = build(ps[i], w, false, allocr_in(measure), false, 0);
    measured = ggml_allocr_alloc_graph(measure, m.gf);
    // rc.8's max_size survives a reset: a running maximum over the graphs
    size_line("reuse.measure.after" + std::to_string(i), without_pad(measured, pad));
    ggml_free(m.ctx);
  }
  ggml_allocr_free(measure);

  ggml_backend_buffer_t buffer = ggml_backend_alloc_buffer(g_cpu, measured);
  ggml_allocr_t alloc = ggml_allocr_new_from_buffer(buffer);
  const int order[] = {0, 1, 2, 0};
  std::string first_layout;
  for (int k = 0; k < 4; ++k) {
    const Program& p = ps[order[k]];
    const std::string key = "reuse.run" + std::to_string(k);
    const std::uint64_t data_seed = 10 + static_cast<std::uint64_t>(k);
    ggml_allocr_reset(alloc);
    Built r = build(p, w, false, allocr_in(alloc), true, data_seed);
    ggml_allocr_alloc_graph(alloc, r.gf);
    check_placement(r.gf, {{buffer, without_pad(measured, pad)}}, w.owner(), key);
    compute(r.gf, key);
    const Results got = results_of(r.gf);
    check_results(got, reference(p, w, data_seed), key);
    exact(key + ".out", hash_of(got));
    // the same graph again: placed as the first time
    std::string layout;
    for (int i = 0; i < r.gf->n_nodes; ++i) {
      layout += std::to_string(static_cast<char*>(r.gf->nodes[i]->data) -
                               static_cast<char*>(ggml_backend_buffer_get_base(buffer))) +
                ",";
    }
    if (k == 0) first_layout = layout;
    if (k == 3) exact("reuse.same_graph_same_places", layout == first_layout ? "true" : "false");
    ggml_free(r.ctx);
  }
  ggml_allocr_free(alloc);
  ggml_backend_buffer_free(buffer);
  free_weights(w);
}

// ggml_allocr_set_parse_seq on two independent branches that join: the graph's order (branch
// a, then branch b), one node at a time interleaved b-first, dependency levels with and
// without a closing barrier, and the parse order cleared again.
void parse_case() {
  Program p;
  const int x = p.push(input(32, 8));
  const int y = p.push(input(32, 8));
  std::vector<int> branch_a, branch_b;
  branch_a.push_back(p.push(mul_mat_w(x, 64)));
  branch_a.push_back(p.push(step(Op::kGelu, branch_a.back())));
  branch_a.push_back(p.push(mul_mat_w(branch_a.back(), 64)));
  branch_a.push_back(p.push(step(Op::kNorm, branch_a.back())));  // not in place
  branch_a.push_back(p.push(mul_mat_w(branch_a.back(), 32)));
  branch_b.push_back(p.push(mul_mat_w(y, 64)));
  branch_b.push_back(p.push(step(Op::kSilu, branch_b.back())));
  branch_b.push_back(p.push(mul_mat_w(branch_b.back(), 32)));
  branch_b.push_back(p.push(step(Op::kSoftMax, branch_b.back())));
  const int join = p.push(step(Op::kAdd, branch_a.back(), branch_b.back()));
  p.push(mul_mat_w(join, 16));
  Weights w = make_weights({&p}, true, 3000);
  const Results want = reference(p, w, 3);

  auto index_of = [](const Built& b, int value) {
    for (int i = 0; i < b.gf->n_nodes; ++i) {
      if (b.gf->nodes[i] == b.values[static_cast<std::size_t>(value)]) return i;
    }
    fail("parse: a value is not a node");
  };
  auto interleaved = [&](const Built& b) {
    std::vector<int> seq;
    for (std::size_t i = 0; i < std::max(branch_a.size(), branch_b.size()); ++i) {
      for (const auto* branch : {&branch_b, &branch_a}) {
        if (i < branch->size()) seq.insert(seq.end(), {index_of(b, (*branch)[i]), -1});
      }
    }
    for (int i = index_of(b, join); i < b.gf->n_nodes; ++i) seq.insert(seq.end(), {i, -1});
    return seq;
  };
  const std::pair<const char*, SeqOf> orders[] = {
      {"none", nullptr},
      {"interleaved", interleaved},
      {"levels", [](const Built& b) { return level_seq(b.gf, true); }},
      {"levels_open", [](const Built& b) { return level_seq(b.gf, false); }},
  };
  std::size_t none = 0;
  for (const auto& [name, seq_of] : orders) {
    const std::string key = std::string("parse.") + name;
    const RunResult r = run_allocr(p, w, seq_of, 3, want, key);
    size_line(key + ".measure", r.measured);
    exact(key + ".out", hash_of(r.results));
    if (seq_of == nullptr) none = r.measured;
  }

  // a parse order set and then cleared (n = 0): the graph's order again
  ggml_allocr_t measure = ggml_allocr_new_measure_from_backend(g_cpu);
  Built m = build(p, w, false, allocr_in(measure), false, 3);
  const std::vector<int> seq = level_seq(m.gf, true);
  ggml_allocr_set_parse_seq(measure, seq.data(), static_cast<int>(seq.size()));
  ggml_allocr_set_parse_seq(measure, nullptr, 0);
  const std::size_t cleared =
      without_pad(ggml_allocr_alloc_graph(measure, m.gf), base_pad(ggml_allocr_get_buffer(measure)));
  exact("parse.cleared_is_none", cleared == none ? "true" : "false");
  ggml_allocr_free(measure);
  ggml_free(m.ctx);
  free_weights(w);
}

// ggml_tallocr_* and ggml_gallocr_alloc_graph(galloc, talloc, graph) directly, with every
// tallocr constructor, one gallocr throughout, a parse order on the gallocr, and a reset.
void tallocr_case() {
  const Program p = generate(4001, 45);
  Weights w = make_weights({&p}, false, 4001);
  const Results want = reference(p, w, 4);
  const auto owned = w.owner();
  ggml_gallocr_t galloc = ggml_gallocr_new();
  check(galloc != nullptr, "ggml_gallocr_new");

  // measure: by alignment, from the backend, and from the buffer type in dependency levels
  // (ggml_gallocr_set_parse_seq); measured sizes as returned, and without the noise
  auto measure_with = [&](ggml_tallocr_t t, bool levels, const std::string& key) {
    check(t != nullptr && ggml_tallocr_is_measure(t), key + ": is_measure");
    Built m = build(p, w, false, tallocr_in(t), false, 4);
    std::vector<int> seq;
    if (levels) {
      seq = level_seq(m.gf, true);
      ggml_gallocr_set_parse_seq(galloc, seq.data(), static_cast<int>(seq.size()));
    }
    const std::size_t got = ggml_gallocr_alloc_graph(galloc, t, m.gf);
    if (levels) ggml_gallocr_set_parse_seq(galloc, nullptr, 0);
    check(got == ggml_tallocr_max_size(t), key + ": alloc_graph returned other than max_size");
    const std::size_t size = without_pad(got, base_pad(ggml_tallocr_get_buffer(t)));
    size_line(key, size);
    ggml_tallocr_free(t);
    ggml_free(m.ctx);
    return std::make_pair(got, size);
  };
  measure_with(ggml_tallocr_new_measure(kCpuAlignment), false, "tallocr.measure");
  // (plain variables: lambdas below use them, and clang 14 captures no structured bindings)
  std::size_t measured, size, measured_levels, size_levels;
  std::tie(measured, size) =
      measure_with(ggml_tallocr_new_measure_from_backend(g_cpu), false, "tallocr.measure_from_backend");
  std::tie(measured_levels, size_levels) = measure_with(
      ggml_tallocr_new_measure_from_buft(ggml_backend_cpu_buffer_type()), true, "tallocr.measure_from_buft.levels");

  // real allocators of the measured size; in dependency levels for one
  auto run = [&](ggml_tallocr_t t, const std::string& key, bool levels, std::uint64_t data_seed,
                 const Results& expect) {
    check(t != nullptr && !ggml_tallocr_is_measure(t), key + ": real tallocr");
    Built r = build(p, w, false, tallocr_in(t), true, data_seed);
    std::vector<int> seq;
    if (levels) {
      seq = level_seq(r.gf, true);
      ggml_gallocr_set_parse_seq(galloc, seq.data(), static_cast<int>(seq.size()));
    }
    ggml_gallocr_alloc_graph(galloc, t, r.gf);
    check_placement(r.gf, {{ggml_tallocr_get_buffer(t), levels ? size_levels : size}}, owned, key);
    if (levels) {
      check_groups(r.gf, seq, key);
      compute_in_order(r.gf, order_of(r.gf, seq), key);
      ggml_gallocr_set_parse_seq(galloc, nullptr, 0);
    } else {
      compute(r.gf, key);
    }
    const Results got = results_of(r.gf);
    check_results(got, expect, key);
    exact(key + ".out", hash_of(got));
    ggml_free(r.ctx);
  };
  {
    ggml_tallocr_t t = ggml_tallocr_new_from_backend(g_cpu, measured);
    run(t, "tallocr.from_backend", false, 4, want);
    ggml_tallocr_free(t);
  }
  {
    ggml_tallocr_t t = ggml_tallocr_new_from_buft(ggml_backend_cpu_buffer_type(), measured_levels);
    run(t, "tallocr.from_buft.levels", true, 4, want);
    ggml_tallocr_free(t);
  }
  {
    const std::size_t rounded = (measured + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment;
    void* memory = std::aligned_alloc(kCpuAlignment, rounded);
    ggml_tallocr_t t = ggml_tallocr_new(memory, measured, kCpuAlignment);
    run(t, "tallocr.memory", false, 4, want);
    ggml_tallocr_free(t);
    std::free(memory);
  }
  {
    // a buffer the tallocr does not own, used twice with a reset between
    ggml_backend_buffer_t buffer = ggml_backend_alloc_buffer(g_cpu, measured);
    ggml_tallocr_t t = ggml_tallocr_new_from_buffer(buffer);
    check(ggml_tallocr_get_buffer(t) == buffer, "ggml_tallocr_new_from_buffer: get_buffer");
    run(t, "tallocr.from_buffer", false, 4, want);
    ggml_tallocr_reset(t);
    run(t, "tallocr.from_buffer.reset", false, 5, reference(p, w, 5));
    ggml_tallocr_free(t);
    check(ggml_backend_buffer_get_base(buffer) != nullptr, "tallocr: a buffer it does not own");
    ggml_backend_buffer_free(buffer);
  }
  ggml_gallocr_free(galloc);
  free_weights(w);
}

// ggml_gallocr_alloc_graph_n through rc.8's scheduler (one CPU backend): inputs from the
// scheduler's tallocr, ggml_backend_sched_init_measure, then graphs computed by
// ggml_backend_sched_graph_compute after a reset.
void sched_case() {
  const Program p = generate(5001, 50);
  Weights w = make_weights({&p}, true, 5001);
  ggml_backend_t backends[1] = {g_cpu};
  ggml_backend_sched_t sched = ggml_backend_sched_new(backends, nullptr, 1, kGraphSize);
  check(sched != nullptr, "ggml_backend_sched_new");
  auto sched_in = [&](ggml_tensor* t) { ggml_tallocr_alloc(ggml_backend_sched_get_tallocr(sched, g_cpu), t); };
  ggml_tallocr_t measure = ggml_backend_sched_get_tallocr(sched, g_cpu);
  check(ggml_tallocr_is_measure(measure), "sched: measure tallocr");
  const std::size_t pad = base_pad(ggml_tallocr_get_buffer(measure));
  {
    Built m = build(p, w, false, sched_in, false, 0);
    ggml_backend_sched_init_measure(sched, m.gf);
    ggml_free(m.ctx);
  }
  check(!ggml_tallocr_is_measure(ggml_backend_sched_get_tallocr(sched, g_cpu)), "sched: real tallocr");
  ggml_backend_buffer_t buffer = ggml_backend_sched_get_buffer(sched, g_cpu);
  check(buffer != nullptr, "sched: buffer");
  // the CPU buffer type adds its alignment to every buffer: the same in both builds
  size_line("sched.buffer", without_pad(ggml_backend_buffer_get_size(buffer), pad));
  for (int run = 0; run < 3; ++run) {
    const std::string key = "sched.run" + std::to_string(run);
    const std::uint64_t data_seed = 50 + static_cast<std::uint64_t>(run);
    ggml_backend_sched_reset(sched);
    Built r = build(p, w, false, sched_in, true, data_seed);
    ggml_backend_sched_graph_compute(sched, r.gf);
    check_placement(r.gf, {{buffer, ggml_backend_buffer_get_size(buffer)}}, w.owner(), key);
    const Results got = results_of(r.gf);
    check_results(got, reference(p, w, data_seed), key);
    exact(key + ".out", hash_of(got));
    exact(key + ".splits", static_cast<std::uint64_t>(ggml_backend_sched_get_n_splits(sched)));
    ggml_free(r.ctx);
  }
  ggml_backend_sched_free(sched);
  free_weights(w);
}

// ggml_gallocr_alloc_graph_n directly, with two tallocrs: node i from tallocr i % 2, inputs
// from the first (they are allocated there beforehand), other leafs alternating.
void gallocr_n_case() {
  const Program p = generate(6001, 50);
  Weights w = make_weights({&p}, true, 6001);
  const Results want = reference(p, w, 6);
  ggml_gallocr_t galloc = ggml_gallocr_new();
  std::map<const ggml_tensor*, ggml_tallocr_t> assigned;
  auto alloc_graph_n = [&](ggml_cgraph* gf, ggml_tallocr_t t0, ggml_tallocr_t t1) {
    ggml_hash_set set = ggml_hash_set_new(2 * static_cast<std::size_t>(gf->n_nodes + gf->n_leafs));
    std::vector<ggml_tallocr_t> table(set.size, nullptr);
    assigned.clear();
    for (int i = 0; i < gf->n_leafs; ++i) {
      ggml_tensor* t = gf->leafs[i];
      assigned[t] = (t->buffer == ggml_tallocr_get_buffer(t0) || i % 2 == 0) ? t0 : t1;
      table[ggml_hash_find_or_insert(set, t)] = assigned[t];
    }
    for (int i = 0; i < gf->n_nodes; ++i) {
      assigned[gf->nodes[i]] = i % 2 == 0 ? t0 : t1;
      table[ggml_hash_find_or_insert(set, gf->nodes[i])] = assigned[gf->nodes[i]];
    }
    ggml_gallocr_alloc_graph_n(galloc, gf, set, table.data());
    std::free(set.keys);
  };

  ggml_tallocr_t m0 = ggml_tallocr_new_measure_from_backend(g_cpu);
  ggml_tallocr_t m1 = ggml_tallocr_new_measure_from_backend(g_cpu);
  Built m = build(p, w, false, tallocr_in(m0), false, 6);
  alloc_graph_n(m.gf, m0, m1);
  const std::size_t measured0 = ggml_tallocr_max_size(m0), measured1 = ggml_tallocr_max_size(m1);
  const std::size_t size0 = without_pad(measured0, base_pad(ggml_tallocr_get_buffer(m0)));
  const std::size_t size1 = without_pad(measured1, base_pad(ggml_tallocr_get_buffer(m1)));
  size_line("gallocr_n.measure0", size0);
  size_line("gallocr_n.measure1", size1);
  ggml_tallocr_free(m0);
  ggml_tallocr_free(m1);
  ggml_free(m.ctx);

  ggml_tallocr_t r0 = ggml_tallocr_new_from_backend(g_cpu, measured0);
  ggml_tallocr_t r1 = ggml_tallocr_new_from_backend(g_cpu, measured1);
  Built r = build(p, w, false, tallocr_in(r0), true, 6);
  alloc_graph_n(r.gf, r0, r1);
  ggml_backend_buffer_t b0 = ggml_tallocr_get_buffer(r0), b1 = ggml_tallocr_get_buffer(r1);
  const auto owned = w.owner();
  check_placement(r.gf, {{b0, size0}, {b1, size1}}, owned, "gallocr_n");
  // what owns memory (not a view) has it from its own tallocr
  for (const auto& [t, talloc] : assigned) {
    if (t->view_src != nullptr || owned(t)) continue;
    const auto base = reinterpret_cast<std::uintptr_t>(ggml_backend_buffer_get_base(ggml_tallocr_get_buffer(talloc)));
    check(begin_of(t) >= base && end_of(t) <= base + ggml_backend_buffer_get_size(ggml_tallocr_get_buffer(talloc)),
          std::string("gallocr_n: ") + ggml_op_name(t->op) + " tensor " + t->name + " is not in its tallocr's buffer");
  }
  compute(r.gf, "gallocr_n");
  const Results got = results_of(r.gf);
  check_results(got, want, "gallocr_n");
  exact("gallocr_n.out", hash_of(got));
  ggml_free(r.ctx);
  ggml_tallocr_free(r0);
  ggml_tallocr_free(r1);
  ggml_gallocr_free(galloc);
  free_weights(w);
}

// Tensors allocated with ggml_allocr_alloc that the graph never reads (a cache, a result
// kept for later) keep their bytes through alloc_graph and compute: one before the graph's
// inputs, one after.
void keep_case() {
  const Program p = generate(7001, 50);
  Weights w = make_weights({&p}, true, 7001);
  const Results want = reference(p, w, 7);
  ggml_context* kc = new_ctx(2, 0, false);
  ggml_tensor* kept[2] = {ggml_new_tensor_2d(kc, GGML_TYPE_F32, 64, 16), ggml_new_tensor_1d(kc, GGML_TYPE_F32, 300)};
  ggml_set_name(kept[0], "kept_before");
  ggml_set_name(kept[1], "kept_after");
  std::vector<float> pattern[2];
  for (int k = 0; k < 2; ++k) {
    pattern[k].resize(static_cast<std::size_t>(ggml_nelements(kept[k])));
    for (std::size_t i = 0; i < pattern[k].size(); ++i) pattern[k][i] = static_cast<float>(i % 97) - 48.0f;
  }
  // one round: kept[0], the graph's inputs, kept[1], alloc_graph
  auto round = [&](ggml_allocr_t a, bool write) {
    for (ggml_tensor* t : kept) {
      t->data = nullptr;
      t->buffer = nullptr;
    }
    ggml_allocr_alloc(a, kept[0]);
    if (write) set_data(kept[0], pattern[0].data(), pattern[0].size() * sizeof(float));
    Built b = build(p, w, false, allocr_in(a), write, 7);
    ggml_allocr_alloc(a, kept[1]);
    if (write) set_data(kept[1], pattern[1].data(), pattern[1].size() * sizeof(float));
    const std::size_t size = ggml_allocr_alloc_graph(a, b.gf);
    return std::make_pair(b, size);
  };

  ggml_allocr_t measure = ggml_allocr_new_measure_from_backend(g_cpu);
  const auto [m, measured] = round(measure, false);
  const std::size_t size = without_pad(measured, base_pad(ggml_allocr_get_buffer(measure)));
  size_line("keep.measure", size);
  ggml_allocr_free(measure);
  ggml_free(m.ctx);

  ggml_backend_buffer_t buffer = ggml_backend_alloc_buffer(g_cpu, measured);
  ggml_allocr_t alloc = ggml_allocr_new_from_buffer(buffer);
  const Built r = round(alloc, true).first;
  const auto owned = w.owner();
  check_placement(r.gf, {{buffer, size}}, owned, "keep");
  auto check_kept = [&](const char* when) {
    for (int k = 0; k < 2; ++k) {
      for (int i = 0; i < r.gf->n_nodes + r.gf->n_leafs; ++i) {
        const ggml_tensor* t = i < r.gf->n_nodes ? r.gf->nodes[i] : r.gf->leafs[i - r.gf->n_nodes];
        check(owned(storage_root(t)) || !overlap(t, kept[k]),
              std::string("keep: ") + t->name + " overlaps " + kept[k]->name + " " + when);
      }
      check(values_of(kept[k]) == pattern[k], std::string("keep: ") + kept[k]->name + " changed " + when);
    }
  };
  check_kept("after alloc_graph");
  compute(r.gf, "keep");
  check_kept("after compute");
  const Results got = results_of(r.gf);
  check_results(got, want, "keep");
  exact("keep.out", hash_of(got));
  ggml_allocr_free(alloc);
  ggml_backend_buffer_free(buffer);
  ggml_free(r.ctx);
  ggml_free(kc);
  free_weights(w);
}

}  // namespace

int main(int argc, char** argv) {
  const auto start = std::chrono::steady_clock::now();
  g_cpu = ggml_backend_cpu_init();
  check(g_cpu != nullptr, "ggml_backend_cpu_init");
  ggml_backend_cpu_set_n_threads(g_cpu, kThreads);
  const std::string only = argc > 1 ? argv[1] : "";
  bool ran = false;
  auto run = [&](const char* name, void (*f)()) {
    if (only.empty() || only == name) {
      f();
      ran = true;
    }
    std::fflush(stdout);
  };
  run("random", random_case);
  run("measure", measure_case);
  run("reuse", reuse_case);
  run("parse", parse_case);
  run("tallocr", tallocr_case);
  run("sched", sched_case);
  run("gallocr_n", gallocr_n_case);
  run("keep", keep_case);
  check(ran, "no section named " + only);
  ggml_backend_free(g_cpu);
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.2f s",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  info("time", seconds);
  std::printf("done\n");
  return 0;
}
