/* galloc's C API: opaque handles, status codes, no exceptions.
 *
 *   galloc_buffer_type * cpu = galloc_buffer_type_new_cpu(64, 0);
 *   galloc_graph * g = galloc_graph_new();
 *   galloc_tensor_desc d = galloc_tensor_desc_default();
 *   d.ne[0] = 1024; d.flags = GALLOC_FLAG_INPUT;
 *   int32_t x; galloc_graph_add_leaf(g, &d, &x);
 *   d = galloc_tensor_desc_default(); d.ne[0] = 1024; d.op = "SCALE"; d.src[0] = x;
 *   d.flags = GALLOC_FLAG_OUTPUT;
 *   int32_t y; galloc_graph_add_node(g, &d, &y);
 *   galloc_allocator * a = NULL;
 *   if (galloc_allocator_new(&cpu, 1, "ggml", &a) != GALLOC_OK) puts(galloc_last_error());
 *   galloc_allocator_alloc(a, g);   // reserves on first use, then places every tensor
 *   void * data; galloc_graph_tensor_data(g, y, &data);
 *   galloc_allocator_free(a); galloc_graph_free(g); galloc_buffer_type_free(cpu);
 */
#ifndef GALLOC_GALLOC_H
#define GALLOC_GALLOC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum galloc_status {
  GALLOC_OK = 0,
  GALLOC_ERROR_INVALID_ARGUMENT = 1,
  GALLOC_ERROR_OUT_OF_MEMORY = 2,
  GALLOC_ERROR_INFEASIBLE = 3,
  GALLOC_ERROR_FAILED_PRECONDITION = 4,
  GALLOC_ERROR_DEADLINE_EXCEEDED = 5,
  GALLOC_ERROR_INTERNAL = 6,
  /* Not statuses: they give the enum the range of int in C++ too, so any int a C caller
     passes (say to galloc_status_name) is a valid value there (as Vulkan's *_MAX_ENUM do). */
  GALLOC_STATUS_MIN_ENUM_ = -2147483647 - 1,
  GALLOC_STATUS_MAX_ENUM_ = 2147483647
} galloc_status;

enum { GALLOC_MAX_DIMS = 4, GALLOC_MAX_SRC = 10 };
enum { GALLOC_FLAG_INPUT = 1, GALLOC_FLAG_OUTPUT = 2, GALLOC_FLAG_PARAM = 4, GALLOC_FLAG_LOSS = 8 };

typedef struct galloc_graph galloc_graph;
typedef struct galloc_buffer_type galloc_buffer_type;
typedef struct galloc_allocator galloc_allocator;
typedef struct galloc_arena galloc_arena;

/* One tensor. nb all zero means contiguous; src and view_src use -1 for none. */
typedef struct galloc_tensor_desc {
  const char* name; /* may be NULL */
  const char* type; /* ggml's type name: "f32", "f16", "q4_K", ... */
  int64_t ne[GALLOC_MAX_DIMS];
  size_t nb[GALLOC_MAX_DIMS];
  const char* op; /* ggml's op name: "NONE", "ADD", "MUL_MAT", ... */
  int32_t src[GALLOC_MAX_SRC];
  int32_t view_src;
  size_t view_offs;
  uint32_t flags; /* GALLOC_FLAG_* */
  int has_memory; /* nonzero: memory exists already (weights, KV cache) */
} galloc_tensor_desc;

/* Message of the last failed call on this thread ("" if none). */
const char* galloc_last_error(void);
const char* galloc_status_name(galloc_status status);

/* A desc for a 1-element f32 tensor with no op, no sources and no flags. */
galloc_tensor_desc galloc_tensor_desc_default(void);

galloc_graph* galloc_graph_new(void);
void galloc_graph_free(galloc_graph* graph);
/* Adds a tensor that is neither node nor leaf (a view source outside the graph, say). */
galloc_status galloc_graph_add_tensor(galloc_graph* graph, const galloc_tensor_desc* desc, int32_t* out_id);
galloc_status galloc_graph_add_node(galloc_graph* graph, const galloc_tensor_desc* desc, int32_t* out_id);
galloc_status galloc_graph_add_leaf(galloc_graph* graph, const galloc_tensor_desc* desc, int32_t* out_id);
galloc_status galloc_graph_counts(const galloc_graph* graph, int32_t* n_tensors, int32_t* n_nodes, int32_t* n_leafs);
/* Where galloc_allocator_alloc put a tensor (NULL before); for a tensor whose memory exists,
   where it is now (a shared arena may have moved it out of the allocator's way). */
galloc_status galloc_graph_tensor_data(const galloc_graph* graph, int32_t tensor, void** out_data);

/* Sets the data of a tensor whose memory exists (has_memory): where it lies, so that an
   allocator in a shared arena keeps it in place when it is another member's output. */
galloc_status galloc_graph_set_tensor_data(galloc_graph* graph, int32_t tensor, void* data);

/* Host memory. max_size 0 means unlimited. */
galloc_buffer_type* galloc_buffer_type_new_cpu(size_t alignment, size_t max_size);
/* Allocates nothing (planning only); fail_nth > 0 makes its n-th allocation fail. */
galloc_buffer_type* galloc_buffer_type_new_null(size_t alignment, size_t max_size, size_t fail_nth);
void galloc_buffer_type_free(galloc_buffer_type* type);

/* types[i] describes buffer id i; repeated pointers share one buffer. strategy NULL: default. */
galloc_status galloc_allocator_new(galloc_buffer_type* const* types, int32_t n_types, const char* strategy,
                                   galloc_allocator** out_allocator);
void galloc_allocator_free(galloc_allocator* allocator);
/* node_buffer_ids / leaf_buffer_ids: one per node / leaf, or NULL for buffer 0. */
galloc_status galloc_allocator_reserve(galloc_allocator* allocator, const galloc_graph* graph,
                                       const int32_t* node_buffer_ids, const int32_t* leaf_buffer_ids);
/* Writes n_types sizes without allocating anything. */
galloc_status galloc_allocator_measure(const galloc_allocator* allocator, const galloc_graph* graph,
                                       const int32_t* node_buffer_ids, const int32_t* leaf_buffer_ids, size_t* sizes);
galloc_status galloc_allocator_alloc(galloc_allocator* allocator, galloc_graph* graph);
galloc_status galloc_allocator_buffer_size(const galloc_allocator* allocator, int32_t buffer_id, size_t* out_size);
/* The reserved placement of one tensor; buffer -1 if it is not planned (view, has_memory). */
galloc_status galloc_allocator_tensor_placement(const galloc_allocator* allocator, int32_t tensor, int32_t* out_buffer,
                                                int32_t* out_chunk, size_t* out_offset);

/* A compute buffer shared by allocators whose graphs never compute at the same time (the
   contract is in galloc/shared_arena.hpp): it holds the largest member's need, not the sum.
   The buffer type must outlive the arena. Members keep the arena alive, so it may be freed
   before them. name may be NULL. */
galloc_arena* galloc_arena_new(const galloc_buffer_type* type, const char* name);
void galloc_arena_free(galloc_arena* arena);
/* Bytes of the arena's buffers now. */
galloc_status galloc_arena_size(const galloc_arena* arena, size_t* out_size);
/* Nonzero: each alloc poisons (0xFF) the memory it takes over from other members. */
galloc_status galloc_arena_set_checked(galloc_arena* arena, int checked);
/* The allocator takes buffer_id's buffers from the arena; before its first reserve. */
galloc_status galloc_allocator_join(galloc_allocator* allocator, int32_t buffer_id, galloc_arena* arena);
/* GALLOC_OK while the tensors of the allocator's last alloc are still its own in every arena
   it joined; GALLOC_ERROR_FAILED_PRECONDITION once another member has allocated over them. */
galloc_status galloc_allocator_check(const galloc_allocator* allocator);

#ifdef __cplusplus
}
#endif

#endif /* GALLOC_GALLOC_H */
