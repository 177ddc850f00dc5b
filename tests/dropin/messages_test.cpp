// The drop-in's messages name the tensors they are about. Its reserve converts a graph
// without the tensors' names (only messages and GALLOC_DUMP read them) and, when the graph is
// refused, reserves it once more with them. Here a graph with two nodes out of order, reserved
// after a valid graph with other names on the same allocator: ggml_gallocr_reserve returns
// false, and ggml's log names the refused graph's tensors, none of the earlier graph's.
// Links against libggml-galloc.a; prints "ok" and exits 0, or says what failed and exits 1.
#include <cstdio>
#include <string>
#include <utility>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml-impl.h"  // ggml_cgraph's node list, to put two nodes out of order
#include "ggml.h"

namespace {

std::string g_log;

int failures = 0;

void check(bool ok, const std::string& what) {
  if (!ok) {
    std::printf("FAIL: %s\n", what.c_str());
    ++failures;
  }
}

ggml_context* new_context() {
  ggml_init_params params = {16 * ggml_tensor_overhead() + ggml_graph_overhead(), nullptr, /*no_alloc=*/true};
  return ggml_init(params);
}

// x -> first = x + x -> second = first * x, with the names given.
ggml_cgraph* build(ggml_context* ctx, const char* input, const char* first, const char* second) {
  ggml_tensor* x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 256);
  ggml_set_name(x, input);
  ggml_set_input(x);
  ggml_tensor* a = ggml_add(ctx, x, x);
  ggml_set_name(a, first);
  ggml_tensor* b = ggml_mul(ctx, a, x);
  ggml_set_name(b, second);
  ggml_set_output(b);
  ggml_cgraph* gf = ggml_new_graph(ctx);
  ggml_build_forward_expand(gf, b);
  return gf;
}

}  // namespace

int main() {
  ggml_log_set([](ggml_log_level, const char* text, void*) { g_log += text; }, nullptr);
  ggml_gallocr_t galloc = ggml_gallocr_new(ggml_backend_cpu_buffer_type());

  ggml_context* valid_ctx = new_context();
  check(ggml_gallocr_reserve(galloc, build(valid_ctx, "valid_x", "valid_sum", "valid_product")),
        "reserve of the valid graph");

  ggml_context* refused_ctx = new_context();
  ggml_cgraph* refused = build(refused_ctx, "refused_x", "refused_sum", "refused_product");
  check(refused->n_nodes == 2, "the refused graph has two nodes");
  std::swap(refused->nodes[0], refused->nodes[1]);  // the product before the sum it reads
  g_log.clear();
  check(!ggml_gallocr_reserve(galloc, refused), "reserve of a graph with its nodes out of order fails");
  check(g_log.find("refused_product") != std::string::npos && g_log.find("refused_sum") != std::string::npos,
        "the message names both nodes: " + g_log);
  check(g_log.find("valid_") == std::string::npos, "the message names no tensor of the earlier graph: " + g_log);

  // The allocator still works: a valid graph, allocated.
  ggml_context* again_ctx = new_context();
  check(ggml_gallocr_alloc_graph(galloc, build(again_ctx, "valid_x", "valid_sum", "valid_product")),
        "alloc_graph after the refused reserve");

  ggml_gallocr_free(galloc);
  ggml_free(again_ctx);
  ggml_free(refused_ctx);
  ggml_free(valid_ctx);
  if (failures > 0) return 1;
  std::printf("ok\n");
  return 0;
}
