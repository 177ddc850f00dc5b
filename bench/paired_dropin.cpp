// The one-file drop-in under other names (paired_*), so that it links into one program beside
// stock ggml-alloc.c: ggml_paired_bench.cpp times both on the same graph by turns.
// Every function ggml-alloc.h declares is renamed here, in the drop-in's declarations and
// definitions alike; the ggml it calls (buffers, tensors, logging) is stock ggml's.
#define ggml_tallocr_new paired_tallocr_new
#define ggml_tallocr_alloc paired_tallocr_alloc
#define ggml_gallocr_new paired_gallocr_new
#define ggml_gallocr_new_n paired_gallocr_new_n
#define ggml_gallocr_free paired_gallocr_free
#define ggml_gallocr_reserve paired_gallocr_reserve
#define ggml_gallocr_reserve_n paired_gallocr_reserve_n
#define ggml_gallocr_reserve_n_size paired_gallocr_reserve_n_size
#define ggml_gallocr_alloc_graph paired_gallocr_alloc_graph
#define ggml_gallocr_get_buffer_size paired_gallocr_get_buffer_size
#define ggml_backend_alloc_ctx_tensors paired_backend_alloc_ctx_tensors
#define ggml_backend_alloc_ctx_tensors_from_buft paired_backend_alloc_ctx_tensors_from_buft
#define ggml_backend_alloc_ctx_tensors_from_buft_size paired_backend_alloc_ctx_tensors_from_buft_size
#define ggml_op_can_inplace paired_op_can_inplace
#define galloc_ggml_share_begin paired_share_begin
#define galloc_ggml_share_end paired_share_end

#include GALLOC_PAIRED_DROPIN  // the amalgamated ggml-alloc.cpp (amalgamate.sh)
