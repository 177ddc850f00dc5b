// Smoke test for a build of the 2023 ggml (whisper.rn 0.4.0-rc.8), whose ggml-alloc.h has the
// measure allocator (ggml_allocr_*): build.sh runs it instead of smoke_test.c there. The graph
// of smoke_test.c (mul_mat -> add -> soft_max) is measured, then allocated for real in a
// buffer of the measured size with its inputs allocated first (as whisper.cpp does), computed
// on the CPU backend and checked against values worked out by hand.
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>

#define K 4  // inner dimension
#define M 3  // output features (soft_max runs over these)
#define N 2  // batch

static int fail(const char* msg) {
  fprintf(stderr, "smoke_test: FAILED: %s\n", msg);
  return 1;
}

static const float w[M][K] = {{1, 2, 3, 4}, {0, 1, 0, 1}, {-1, 0, 1, 0}};
static const float x[N][K] = {{1, 1, 1, 1}, {0.5f, -1, 2, 0}};
static const float b[M] = {0.1f, 0.2f, 0.3f};

// Builds the graph in a fresh context; its inputs come from `alloc` and get their values
// unless it only measures.
static struct ggml_cgraph* build(struct ggml_context** ctx, ggml_allocr_t alloc, struct ggml_tensor** out) {
  struct ggml_init_params params = {
      /*.mem_size   =*/16 * ggml_tensor_overhead() + ggml_graph_overhead(),
      /*.mem_buffer =*/NULL,
      /*.no_alloc   =*/true,
  };
  *ctx = ggml_init(params);
  if (!*ctx) return NULL;
  struct ggml_tensor* W = ggml_new_tensor_2d(*ctx, GGML_TYPE_F32, K, M);
  struct ggml_tensor* X = ggml_new_tensor_2d(*ctx, GGML_TYPE_F32, K, N);
  struct ggml_tensor* B = ggml_new_tensor_1d(*ctx, GGML_TYPE_F32, M);
  ggml_allocr_alloc(alloc, W);
  ggml_allocr_alloc(alloc, X);
  ggml_allocr_alloc(alloc, B);
  if (!ggml_allocr_is_measure(alloc)) {
    ggml_backend_tensor_set(W, w, 0, sizeof(w));
    ggml_backend_tensor_set(X, x, 0, sizeof(x));
    ggml_backend_tensor_set(B, b, 0, sizeof(b));
  }
  struct ggml_tensor* Y = ggml_mul_mat(*ctx, W, X);  // [M, N]
  struct ggml_tensor* Z = ggml_add(*ctx, Y, B);      // bias broadcast over N
  *out = ggml_soft_max(*ctx, Z);                     // over M, per column
  struct ggml_cgraph* gf = ggml_new_graph(*ctx);
  ggml_build_forward_expand(gf, *out);
  return gf;
}

int main(void) {
  ggml_backend_t backend = ggml_backend_cpu_init();
  if (!backend) return fail("ggml_backend_cpu_init");

  struct ggml_context* ctx = NULL;
  struct ggml_tensor* S = NULL;
  ggml_allocr_t measure = ggml_allocr_new_measure_from_backend(backend);
  if (!measure || !ggml_allocr_is_measure(measure)) return fail("ggml_allocr_new_measure_from_backend");
  struct ggml_cgraph* gf = build(&ctx, measure, &S);
  if (!gf) return fail("ggml_init");
  const size_t measured = ggml_allocr_alloc_graph(measure, gf);
  ggml_allocr_free(measure);
  ggml_free(ctx);
  if (measured < (M * K + N * K + M + M * N) * sizeof(float)) return fail("measured size below inputs + output");

  ggml_backend_buffer_t buffer = ggml_backend_alloc_buffer(backend, measured);
  ggml_allocr_t alloc = ggml_allocr_new_from_buffer(buffer);
  if (!alloc || ggml_allocr_is_measure(alloc)) return fail("ggml_allocr_new_from_buffer");
  ggml_allocr_reset(alloc);
  gf = build(&ctx, alloc, &S);
  if (!gf) return fail("ggml_init");
  ggml_allocr_alloc_graph(alloc, gf);
  for (int i = 0; i < gf->n_nodes; i++) {
    if (!gf->nodes[i]->data) return fail("a graph tensor has no data after allocation");
  }
  ggml_backend_cpu_set_n_threads(backend, 2);
  if (!ggml_backend_graph_compute(backend, gf)) return fail("ggml_backend_graph_compute");

  float s[N][M];
  ggml_backend_tensor_get(S, s, 0, sizeof(s));
  // by hand: logits z = X*W^T + b
  //   n=0: [1+2+3+4, 0+1+0+1, -1+0+1+0] + b = [10.1,  2.2, 0.3]
  //   n=1: [0.5-2+6, -1,      -0.5+2  ] + b = [ 4.6, -0.8, 1.8]
  const double z[N][M] = {{10.1, 2.2, 0.3}, {4.6, -0.8, 1.8}};
  double max_err = 0.0;
  for (int n = 0; n < N; n++) {
    double sum = 0.0;
    for (int m = 0; m < M; m++) sum += exp(z[n][m] - z[n][0]);
    for (int m = 0; m < M; m++) {
      const double err = fabs((double)s[n][m] - exp(z[n][m] - z[n][0]) / sum);
      if (err > max_err) max_err = err;
    }
  }
  const double s10 = 1.0 / (1.0 + exp(-5.4) + exp(-2.8));
  printf("S[1][0] = %.6f (expected %.6f), max |err| = %.2e\n", s[1][0], s10, max_err);
  // this ggml's soft_max takes exp from an F16 table: about 4e-5 off
  if (fabs((double)s[1][0] - s10) > 2e-4 || max_err > 2e-4) return fail("wrong result");

  printf("ok: %d nodes, measured compute buffer = %zu bytes\n", gf->n_nodes, measured);
  ggml_allocr_free(alloc);
  ggml_backend_buffer_free(buffer);
  ggml_backend_free(backend);
  ggml_free(ctx);
  return 0;
}
