/* The C API used from C: every call checked, every error path returns a status and a message. */
#include "galloc/galloc.h"

#include <stdio.h>
#include <string.h>

static int failures = 0;
static int checks = 0;

#define CHECK(cond)                                                                                                  \
  do {                                                                                                               \
    ++checks;                                                                                                        \
    if (!(cond)) {                                                                                                   \
      ++failures;                                                                                                    \
      fprintf(stderr, "%s:%d: check failed: %s (last error: %s)\n", __FILE__, __LINE__, #cond, galloc_last_error()); \
    }                                                                                                                \
  } while (0)

static galloc_tensor_desc vector_desc(const char* name, int64_t n, const char* op) {
  galloc_tensor_desc d = galloc_tensor_desc_default();
  d.name = name;
  d.ne[0] = n;
  d.op = op;
  return d;
}

/* x (input) -> y = scale(x) -> z = add(y, x) (output): z cannot reuse x or y in place here
 * because x has two users; y can be reused by z. */
static void test_plan_and_alloc(void) {
  galloc_buffer_type* cpu = galloc_buffer_type_new_cpu(64, 0);
  CHECK(cpu != NULL);
  galloc_graph* g = galloc_graph_new();
  CHECK(g != NULL);

  int32_t x = -1, y = -1, z = -1;
  galloc_tensor_desc d = vector_desc("x", 1000, "NONE");
  d.flags = GALLOC_FLAG_INPUT;
  CHECK(galloc_graph_add_leaf(g, &d, &x) == GALLOC_OK);
  d = vector_desc("y", 1000, "SCALE");
  d.src[0] = x;
  CHECK(galloc_graph_add_node(g, &d, &y) == GALLOC_OK);
  d = vector_desc("z", 1000, "ADD");
  d.src[0] = y;
  d.src[1] = x;
  d.flags = GALLOC_FLAG_OUTPUT;
  CHECK(galloc_graph_add_node(g, &d, &z) == GALLOC_OK);

  int32_t n_tensors = 0, n_nodes = 0, n_leafs = 0;
  CHECK(galloc_graph_counts(g, &n_tensors, &n_nodes, &n_leafs) == GALLOC_OK);
  CHECK(n_tensors == 3 && n_nodes == 2 && n_leafs == 1);

  galloc_allocator* a = NULL;
  CHECK(galloc_allocator_new(&cpu, 1, "ggml", &a) == GALLOC_OK);
  size_t measured = 0;
  CHECK(galloc_allocator_measure(a, g, NULL, NULL, &measured) == GALLOC_OK);
  /* 4000 bytes each, aligned to 64: x and y live together, z takes y's memory. */
  CHECK(measured == 2 * 4032);
  CHECK(galloc_allocator_alloc(a, g) == GALLOC_OK);
  size_t size = 0;
  CHECK(galloc_allocator_buffer_size(a, 0, &size) == GALLOC_OK);
  CHECK(size == measured);

  void *px = NULL, *py = NULL, *pz = NULL;
  CHECK(galloc_graph_tensor_data(g, x, &px) == GALLOC_OK);
  CHECK(galloc_graph_tensor_data(g, y, &py) == GALLOC_OK);
  CHECK(galloc_graph_tensor_data(g, z, &pz) == GALLOC_OK);
  CHECK(px != NULL && py != NULL && pz != NULL);
  CHECK(py == pz);
  CHECK(px != py);
  /* The memory is real: write all of it. */
  memset(px, 1, 4000);
  memset(pz, 2, 4000);

  int32_t buffer = -2, chunk = -2;
  size_t offset = 1;
  CHECK(galloc_allocator_tensor_placement(a, z, &buffer, &chunk, &offset) == GALLOC_OK);
  CHECK(buffer == 0 && chunk == 0);

  galloc_allocator_free(a);
  galloc_graph_free(g);
  galloc_buffer_type_free(cpu);
}

static void test_errors(void) {
  galloc_buffer_type* null_type = galloc_buffer_type_new_null(8, 0, 0);
  CHECK(null_type != NULL);
  CHECK(galloc_buffer_type_new_cpu(3, 0) == NULL);
  CHECK(strstr(galloc_last_error(), "power of two") != NULL);

  galloc_allocator* a = NULL;
  CHECK(galloc_allocator_new(NULL, 1, NULL, &a) == GALLOC_ERROR_INVALID_ARGUMENT);
  CHECK(galloc_allocator_new(&null_type, 0, NULL, &a) == GALLOC_ERROR_INVALID_ARGUMENT);
  CHECK(galloc_allocator_new(&null_type, 1, "no-such-strategy", &a) == GALLOC_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(galloc_last_error(), "no-such-strategy") != NULL);
  CHECK(a == NULL);
  CHECK(galloc_allocator_new(&null_type, 1, NULL, &a) == GALLOC_OK);

  galloc_graph* g = galloc_graph_new();
  galloc_tensor_desc d = vector_desc("bad", 4, "NO_SUCH_OP");
  CHECK(galloc_graph_add_node(g, &d, NULL) == GALLOC_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(galloc_last_error(), "NO_SUCH_OP") != NULL);
  d = vector_desc("bad", 4, "ADD");
  d.type = "f31";
  CHECK(galloc_graph_add_node(g, &d, NULL) == GALLOC_ERROR_INVALID_ARGUMENT);

  /* A node whose source is not in the graph: reserve names it. */
  d = vector_desc("orphan", 4, "ADD");
  d.src[0] = 42;
  int32_t orphan = -1;
  CHECK(galloc_graph_add_node(g, &d, &orphan) == GALLOC_OK);
  CHECK(galloc_allocator_reserve(a, g, NULL, NULL) == GALLOC_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(galloc_last_error(), "orphan") != NULL);
  CHECK(strstr(galloc_last_error(), "42") != NULL);

  /* Null handles and out-of-range ids. */
  size_t size = 0;
  CHECK(galloc_allocator_reserve(NULL, g, NULL, NULL) == GALLOC_ERROR_INVALID_ARGUMENT);
  CHECK(galloc_allocator_alloc(a, NULL) == GALLOC_ERROR_INVALID_ARGUMENT);
  CHECK(galloc_allocator_buffer_size(a, 5, &size) == GALLOC_ERROR_INVALID_ARGUMENT);
  CHECK(galloc_allocator_buffer_size(a, -1, &size) == GALLOC_ERROR_INVALID_ARGUMENT);
  CHECK(galloc_allocator_tensor_placement(a, 0, NULL, NULL, NULL) == GALLOC_ERROR_FAILED_PRECONDITION);
  void* data = NULL;
  CHECK(galloc_graph_tensor_data(g, 99, &data) == GALLOC_ERROR_INVALID_ARGUMENT);
  CHECK(galloc_graph_counts(NULL, NULL, NULL, NULL) == GALLOC_ERROR_INVALID_ARGUMENT);
  CHECK(strcmp(galloc_status_name(GALLOC_ERROR_OUT_OF_MEMORY), "out of memory") == 0);

  galloc_allocator_free(a);
  galloc_graph_free(g);
  galloc_buffer_type_free(null_type);
  /* Freeing NULL is allowed, as with free(). */
  galloc_allocator_free(NULL);
  galloc_graph_free(NULL);
  galloc_buffer_type_free(NULL);
}

/* A buffer type that fails its first allocation: reserve fails, then works. */
static void test_failed_allocation_keeps_allocator_usable(void) {
  galloc_buffer_type* flaky = galloc_buffer_type_new_null(8, 0, 1);
  galloc_allocator* a = NULL;
  CHECK(galloc_allocator_new(&flaky, 1, NULL, &a) == GALLOC_OK);
  galloc_graph* g = galloc_graph_new();
  galloc_tensor_desc d = vector_desc("x", 16, "NONE");
  d.flags = GALLOC_FLAG_INPUT | GALLOC_FLAG_OUTPUT;
  CHECK(galloc_graph_add_leaf(g, &d, NULL) == GALLOC_OK);
  CHECK(galloc_allocator_reserve(a, g, NULL, NULL) == GALLOC_ERROR_OUT_OF_MEMORY);
  CHECK(strstr(galloc_last_error(), "injected") != NULL);
  size_t size = 1;
  CHECK(galloc_allocator_buffer_size(a, 0, &size) == GALLOC_OK && size == 0);
  CHECK(galloc_allocator_reserve(a, g, NULL, NULL) == GALLOC_OK);
  CHECK(galloc_allocator_buffer_size(a, 0, &size) == GALLOC_OK && size == 64);
  galloc_allocator_free(a);
  galloc_graph_free(g);
  galloc_buffer_type_free(flaky);
}

/* x (input, n floats) -> y = scale(x) -> z = add(y, x) (output); with `reads`, also
 * r = add(w, w) (output) of a weight w whose memory exists. */
static galloc_graph* small_graph(int64_t n, int32_t* out_z, int32_t* out_w) {
  galloc_graph* g = galloc_graph_new();
  int32_t x = -1, y = -1;
  galloc_tensor_desc d = vector_desc("x", n, "NONE");
  d.flags = GALLOC_FLAG_INPUT;
  CHECK(galloc_graph_add_leaf(g, &d, &x) == GALLOC_OK);
  d = vector_desc("y", n, "SCALE");
  d.src[0] = x;
  CHECK(galloc_graph_add_node(g, &d, &y) == GALLOC_OK);
  d = vector_desc("z", n, "ADD");
  d.src[0] = y;
  d.src[1] = x;
  d.flags = GALLOC_FLAG_OUTPUT;
  CHECK(galloc_graph_add_node(g, &d, out_z) == GALLOC_OK);
  if (out_w != NULL) {
    d = vector_desc("w", 1000, "NONE");
    d.has_memory = 1;
    CHECK(galloc_graph_add_leaf(g, &d, out_w) == GALLOC_OK);
    d = vector_desc("r", 1000, "ADD");
    d.src[0] = *out_w;
    d.src[1] = *out_w;
    d.flags = GALLOC_FLAG_OUTPUT;
    CHECK(galloc_graph_add_node(g, &d, NULL) == GALLOC_OK);
  }
  return g;
}

/* Two allocators share an arena: it holds the larger need, the second graph reads the first
 * one's output where it lies, untouched while the second computes. */
static void test_shared_arena(void) {
  galloc_buffer_type* cpu = galloc_buffer_type_new_cpu(64, 0);
  galloc_arena* arena = galloc_arena_new(cpu, "c");
  CHECK(arena != NULL);
  int32_t z1 = -1, z2 = -1, w = -1;
  galloc_graph* first = small_graph(1000, &z1, NULL);
  galloc_graph* second = small_graph(3000, &z2, &w);
  galloc_allocator *a = NULL, *b = NULL;
  CHECK(galloc_allocator_new(&cpu, 1, NULL, &a) == GALLOC_OK);
  CHECK(galloc_allocator_new(&cpu, 1, NULL, &b) == GALLOC_OK);
  CHECK(galloc_allocator_join(a, 0, arena) == GALLOC_OK);
  CHECK(galloc_allocator_join(b, 0, arena) == GALLOC_OK);
  CHECK(galloc_allocator_join(b, 0, arena) == GALLOC_ERROR_FAILED_PRECONDITION);
  CHECK(galloc_allocator_join(b, 0, NULL) == GALLOC_ERROR_INVALID_ARGUMENT);
  CHECK(galloc_allocator_reserve(a, first, NULL, NULL) == GALLOC_OK);
  CHECK(galloc_allocator_reserve(b, second, NULL, NULL) == GALLOC_OK);
  size_t need_a = 0, need_b = 0, arena_size = 0;
  CHECK(galloc_allocator_buffer_size(a, 0, &need_a) == GALLOC_OK);
  CHECK(galloc_allocator_buffer_size(b, 0, &need_b) == GALLOC_OK);
  CHECK(galloc_arena_size(arena, &arena_size) == GALLOC_OK);
  /* the larger need, plus room for w, which the second graph reads and which has no address
   * yet: it will be the first graph's output */
  CHECK(need_a > 0 && need_b > need_a && arena_size == need_b + 4032);

  CHECK(galloc_allocator_alloc(a, first) == GALLOC_OK);
  void* out = NULL;
  CHECK(galloc_graph_tensor_data(first, z1, &out) == GALLOC_OK);
  memset(out, 7, 4000);
  CHECK(galloc_graph_set_tensor_data(second, w, out) == GALLOC_OK);
  CHECK(galloc_graph_set_tensor_data(second, z2, out) == GALLOC_ERROR_INVALID_ARGUMENT);
  CHECK(galloc_allocator_alloc(b, second) == GALLOC_OK);
  CHECK(galloc_allocator_check(b) == GALLOC_OK);
  /* Compute the second graph: write every tensor it placed; the first one's output survives. */
  for (int32_t t = 0; t < 5; ++t) {
    void* data = NULL;
    if (t == w) continue; /* read, not written */
    CHECK(galloc_graph_tensor_data(second, t, &data) == GALLOC_OK);
    memset(data, 9, t < 3 ? 12000 : 4000);
  }
  /* w may have been moved out of the second graph's way: its data says where it is now */
  void* kept = NULL;
  CHECK(galloc_graph_tensor_data(second, w, &kept) == GALLOC_OK && kept != NULL);
  CHECK(((const unsigned char*)kept)[0] == 7 && ((const unsigned char*)kept)[3999] == 7);

  galloc_arena_free(arena); /* the members keep it */
  CHECK(galloc_allocator_alloc(a, first) == GALLOC_OK);
  CHECK(galloc_allocator_check(a) == GALLOC_OK);
  galloc_allocator_free(a);
  galloc_allocator_free(b);
  galloc_graph_free(first);
  galloc_graph_free(second);
  galloc_buffer_type_free(cpu);
}

int main(void) {
  test_plan_and_alloc();
  test_errors();
  test_failed_allocation_keeps_allocator_usable();
  test_shared_arena();
  printf("c_api: %d checks, %d failed\n", checks, failures);
  return failures == 0 ? 0 : 1;
}
