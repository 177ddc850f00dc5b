// Smoke test for a ggml build made by build.sh: builds a tiny graph
// (mul_mat -> add -> soft_max), allocates it with ggml-alloc's graph allocator,
// computes it on the CPU backend and checks the result against hand-computed values.
// Uses only API present in both whisper.rn 0.4.0-rc.10's and llama.rn 0.12.9's ggml.
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
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

int main(void) {
  struct ggml_init_params params = {
      /*.mem_size   =*/16 * ggml_tensor_overhead() + ggml_graph_overhead(),
      /*.mem_buffer =*/NULL,
      /*.no_alloc   =*/true,
  };
  struct ggml_context* ctx = ggml_init(params);
  if (!ctx) return fail("ggml_init");

  // ggml: ne[0] is the row length. mul_mat(W, X) = X * W^T, shape [M, N].
  struct ggml_tensor* W = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, K, M);
  struct ggml_tensor* X = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, K, N);
  struct ggml_tensor* B = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, M);
  ggml_set_name(W, "W");
  ggml_set_input(W);
  ggml_set_name(X, "X");
  ggml_set_input(X);
  ggml_set_name(B, "B");
  ggml_set_input(B);

  struct ggml_tensor* Y = ggml_mul_mat(ctx, W, X);  // [M, N]
  struct ggml_tensor* Z = ggml_add(ctx, Y, B);      // bias broadcast over N
  struct ggml_tensor* S = ggml_soft_max(ctx, Z);    // over M, per column
  ggml_set_name(S, "S");
  ggml_set_output(S);

  struct ggml_cgraph* gf = ggml_new_graph(ctx);
  ggml_build_forward_expand(gf, S);

  ggml_gallocr_t galloc = ggml_gallocr_new(ggml_backend_cpu_buffer_type());
  if (!galloc) return fail("ggml_gallocr_new");
  if (!ggml_gallocr_alloc_graph(galloc, gf)) return fail("ggml_gallocr_alloc_graph");
  if (!W->data || !X->data || !B->data || !Y->data || !Z->data || !S->data) {
    return fail("a graph tensor has no data after allocation");
  }
  const size_t buf_size = ggml_gallocr_get_buffer_size(galloc, 0);
  if (buf_size < ggml_nbytes(W) + ggml_nbytes(X) + ggml_nbytes(B) + ggml_nbytes(S)) {
    return fail("compute buffer smaller than inputs + output");
  }

  const float w[M][K] = {{1, 2, 3, 4}, {0, 1, 0, 1}, {-1, 0, 1, 0}};
  const float x[N][K] = {{1, 1, 1, 1}, {0.5f, -1, 2, 0}};
  const float b[M] = {0.1f, 0.2f, 0.3f};
  ggml_backend_tensor_set(W, w, 0, sizeof(w));
  ggml_backend_tensor_set(X, x, 0, sizeof(x));
  ggml_backend_tensor_set(B, b, 0, sizeof(b));

  ggml_backend_t backend = ggml_backend_cpu_init();
  if (!backend) return fail("ggml_backend_cpu_init");
  ggml_backend_cpu_set_n_threads(backend, 2);
  if (ggml_backend_graph_compute(backend, gf) != GGML_STATUS_SUCCESS) return fail("ggml_backend_graph_compute");

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
      const double expect = exp(z[n][m] - z[n][0]) / sum;
      const double err = fabs((double)s[n][m] - expect);
      if (err > max_err) max_err = err;
    }
  }
  // the value checked most directly: softmax of column 1, row 0 = 1/(1 + e^-5.4 + e^-2.8)
  const double s10 = 1.0 / (1.0 + exp(-5.4) + exp(-2.8));
  printf("S[1][0] = %.6f (expected %.6f), max |err| = %.2e\n", s[1][0], s10, max_err);
  if (fabs((double)s[1][0] - s10) > 1e-5 || max_err > 1e-5) return fail("wrong result");

  printf("ok: %d nodes, compute buffer size = %zu bytes\n", ggml_graph_n_nodes(gf), buf_size);

  ggml_backend_free(backend);
  ggml_gallocr_free(galloc);
  ggml_free(ctx);
  return 0;
}
