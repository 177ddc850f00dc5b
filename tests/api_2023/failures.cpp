// What a program sees when the 2023 API fails on galloc's drop-in (linked with libggml-galloc.a
// only: rc.8's own ggml-alloc.c aborts in each of these cases). The API has no way to report
// failure, so the drop-in logs the reason to stderr and leaves what it could not place with
// data == NULL; the program goes on, and the allocator stays usable.
#include <cstdio>
#include <string>
#include <vector>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml.h"
#include "test_support.hpp"

namespace {

using galloc::dropin_test::check;

struct Graph {
  ggml_context* ctx = nullptr;
  ggml_tensor* x = nullptr;  // the input, allocated with ggml_allocr_alloc
  ggml_tensor* y = nullptr;
  ggml_tensor* z = nullptr;
  ggml_cgraph* gf = nullptr;
};

// x (1024 floats) -> y = sqr(x) -> z = mul_mat(y, y): about 4 KiB per tensor
Graph build(ggml_allocr_t alloc, bool write) {
  Graph g;
  ggml_init_params params = {16 * ggml_tensor_overhead() + ggml_graph_overhead(), nullptr, true};
  g.ctx = ggml_init(params);
  check(g.ctx != nullptr, "ggml_init");
  g.x = ggml_new_tensor_2d(g.ctx, GGML_TYPE_F32, 32, 32);
  ggml_allocr_alloc(alloc, g.x);
  if (write && g.x->data != nullptr) {
    std::vector<float> v(1024, 0.5f);
    ggml_backend_tensor_set(g.x, v.data(), 0, v.size() * sizeof(float));
  }
  g.y = ggml_sqr(g.ctx, g.x);
  g.z = ggml_mul_mat(g.ctx, g.y, g.y);
  g.gf = ggml_new_graph(g.ctx);
  ggml_build_forward_expand(g.gf, g.z);
  return g;
}

}  // namespace

int main() {
  ggml_backend_t cpu = ggml_backend_cpu_init();
  check(cpu != nullptr, "ggml_backend_cpu_init");

  ggml_allocr_t measure = ggml_allocr_new_measure_from_backend(cpu);
  Graph m = build(measure, false);
  const size_t needed = ggml_allocr_alloc_graph(measure, m.gf);
  ggml_free(m.ctx);
  ggml_allocr_free(measure);
  check(needed >= 2 * 4096, "the measured size holds x (which y takes over in place) and z");

  // 1. A buffer too small for the graph: the input keeps its place and its bytes, the nodes
  //    stay unplaced, max_size stays, and the same allocator then works with a smaller graph.
  ggml_backend_buffer_t small = ggml_backend_alloc_buffer(cpu, 4096 + 64);
  ggml_allocr_t alloc = ggml_allocr_new_from_buffer(small);
  Graph g = build(alloc, true);
  check(g.x->data != nullptr, "x fits the small buffer");
  const size_t before = ggml_allocr_max_size(alloc);
  const size_t after = ggml_allocr_alloc_graph(alloc, g.gf);
  check(after == before, "a failed alloc_graph leaves max_size as it was");
  check(g.y->data == nullptr && g.z->data == nullptr, "the nodes stay unplaced");
  check(g.x->data != nullptr, "the input keeps a place");
  std::vector<float> back(1024);
  ggml_backend_tensor_get(g.x, back.data(), 0, back.size() * sizeof(float));
  check(back[0] == 0.5f && back[1023] == 0.5f, "the input keeps its bytes");
  ggml_free(g.ctx);

  // 2. ggml_allocr_alloc on a full buffer: the tensor stays unallocated.
  ggml_allocr_reset(alloc);
  ggml_init_params params = {4 * ggml_tensor_overhead(), nullptr, true};
  ggml_context* ctx = ggml_init(params);
  ggml_tensor* a = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 1024);
  ggml_tensor* b = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 1024);
  ggml_allocr_alloc(alloc, a);
  ggml_allocr_alloc(alloc, b);
  check(a->data != nullptr && b->data == nullptr, "the second tensor does not fit and stays unallocated");
  ggml_allocr_alloc(alloc, a);  // already allocated: refused, a keeps its place
  check(a->data != nullptr, "a tensor allocated twice keeps its first place");
  ggml_free(ctx);

  // 3. A parse order that names a node the graph does not have: nothing is placed.
  ggml_allocr_reset(alloc);
  ggml_backend_buffer_t big = ggml_backend_alloc_buffer(cpu, needed);
  ggml_allocr_t real = ggml_allocr_new_from_buffer(big);
  const int bad_order[] = {0, 5, -1};
  ggml_allocr_set_parse_seq(real, bad_order, 3);
  Graph p = build(real, true);
  ggml_allocr_alloc_graph(real, p.gf);
  check(p.y->data == nullptr && p.z->data == nullptr, "a parse order naming a missing node places nothing");
  ggml_free(p.ctx);

  // ... and with a valid order the same allocator places and computes the graph.
  const int order[] = {0, -1, 1, -1};
  ggml_allocr_set_parse_seq(real, order, 4);
  ggml_allocr_reset(real);
  Graph q = build(real, true);
  ggml_allocr_alloc_graph(real, q.gf);
  check(q.y->data != nullptr && q.z->data != nullptr, "a valid parse order places the graph");
  check(ggml_backend_graph_compute(cpu, q.gf), "ggml_backend_graph_compute");
  float z0 = 0;
  ggml_backend_tensor_get(q.z, &z0, 0, sizeof z0);
  check(z0 == 32 * 0.25f * 0.25f, "z = sqr(x) . sqr(x) over 32 elements of 0.25");
  ggml_free(q.ctx);

  // 4. NULL allocators: logged, nothing else.
  ggml_allocr_alloc(nullptr, nullptr);
  check(ggml_allocr_alloc_graph(nullptr, nullptr) == 0, "alloc_graph on NULL returns 0");
  check(ggml_allocr_max_size(nullptr) == 0 && !ggml_allocr_is_measure(nullptr),
        "NULL has no size and measures nothing");
  ggml_allocr_free(nullptr);

  ggml_allocr_free(real);
  ggml_backend_buffer_free(big);
  ggml_allocr_free(alloc);
  ggml_backend_buffer_free(small);
  ggml_backend_free(cpu);
  std::printf("ok: every failure was logged and the program went on\n");
  return 0;
}
