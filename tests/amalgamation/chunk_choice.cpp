// How the graph allocator splits a compute buffer into chunks, on the ABI it is built for:
// linked once with the package's stock ggml-alloc.c and once with galloc's drop-in, and
// compared by tests/dropin/compare.cmake (packages_test.sh runs it where ggml has chunks).
//   - random graphs on a buffer type of 4 KiB chunks, so that many allocations choose between
//     chunks whose tails must grow: ggml computes that choice in size_t, which wraps
//     differently on 32-bit ABIs, and GALLOC_STRATEGY=ggml must place every tensor as stock;
//   - a 2.25 GiB plan on the CPU buffer type (reserved, never touched): on 32-bit ABIs stock caps
//     a chunk at SIZE_MAX / 2 (2 GiB), and galloc must reserve what stock reserves.
// Prints compare.cmake's lines (exact, size, layout), then "done".
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "ggml-alloc.h"
#include "ggml-backend-impl.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"

namespace {

// A host buffer type that hands out CPU buffers, with a max size, remembering its live buffers
// in allocation order (the chunks of the one graph allocator that uses it).
struct ChunkedHostType {
  ggml_backend_buffer_type buft{};
  size_t max_size = 0;
  std::vector<ggml_backend_buffer_t> live;
};

ChunkedHostType* chunked_of(ggml_backend_buffer_type_t buft) { return static_cast<ChunkedHostType*>(buft->context); }
void (*g_cpu_free_buffer)(ggml_backend_buffer_t) = nullptr;

void chunked_free_buffer(ggml_backend_buffer_t buffer) {
  std::vector<ggml_backend_buffer_t>& live = chunked_of(buffer->buft)->live;
  for (size_t i = 0; i < live.size(); ++i) {
    if (live[i] == buffer) live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
  }
  g_cpu_free_buffer(buffer);
}

ggml_backend_buffer_t chunked_alloc(ggml_backend_buffer_type_t buft, size_t size) {
  ggml_backend_buffer_t buffer = ggml_backend_buft_alloc_buffer(ggml_backend_cpu_buffer_type(), size);
  if (buffer == nullptr) return nullptr;
  buffer->buft = buft;
  g_cpu_free_buffer = buffer->iface.free_buffer;
  buffer->iface.free_buffer = chunked_free_buffer;
  chunked_of(buft)->live.push_back(buffer);
  return buffer;
}

void init_chunked(ChunkedHostType& t, size_t max_size) {
  t.max_size = max_size;
  t.buft.iface.get_name = [](ggml_backend_buffer_type_t) { return "ChunkedHost"; };
  t.buft.iface.alloc_buffer = chunked_alloc;
  t.buft.iface.get_alignment = [](ggml_backend_buffer_type_t) {
    return ggml_backend_buft_get_alignment(ggml_backend_cpu_buffer_type());
  };
  t.buft.iface.get_max_size = [](ggml_backend_buffer_type_t buft) { return chunked_of(buft)->max_size; };
  t.buft.iface.is_host = [](ggml_backend_buffer_type_t) { return true; };
  t.buft.device = ggml_backend_cpu_buffer_type()->device;
  t.buft.context = &t;
}

// "2:1536,1536," : the live chunks' sizes
std::string chunk_sizes(const ChunkedHostType& t) {
  std::string s = std::to_string(t.live.size()) + ":";
  for (ggml_backend_buffer_t b : t.live) s += std::to_string(ggml_backend_buffer_get_size(b)) + ",";
  return s;
}

// Every node's chunk and offset, "c.offset" separated by spaces, hashed (FNV-1a).
std::string placements(ggml_cgraph* gf, const ChunkedHostType& t) {
  std::uint64_t h = 1469598103934665603ull;
  for (int i = 0; i < ggml_graph_n_nodes(gf); ++i) {
    const ggml_tensor* node = ggml_graph_node(gf, i);
    size_t chunk = t.live.size();
    for (size_t c = 0; c < t.live.size(); ++c) {
      if (node->buffer == t.live[c]) chunk = c;
    }
    const auto* base =
        static_cast<const char*>(node->buffer != nullptr ? ggml_backend_buffer_get_base(node->buffer) : nullptr);
    const std::string item = std::to_string(chunk) + "." +
                             std::to_string(base != nullptr ? static_cast<const char*>(node->data) - base : -1) + " ";
    for (char ch : item) h = (h ^ static_cast<unsigned char>(ch)) * 1099511628211ull;
  }
  char text[24];
  std::snprintf(text, sizeof text, "%016" PRIx64, h);
  return text;
}

struct Rng {
  std::uint64_t state;
  std::uint32_t next() {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<std::uint32_t>(state >> 33);
  }
  int below(int n) { return static_cast<int>(next() % static_cast<std::uint32_t>(n)); }
};

std::uint64_t hash_values(const ggml_tensor* t) {
  std::vector<float> v(static_cast<size_t>(ggml_nelements(t)));
  ggml_backend_tensor_get(t, v.data(), 0, ggml_nbytes(t));
  std::uint64_t h = 1469598103934665603ull;
  for (float f : v) {
    std::uint32_t bits = 0;
    static_assert(sizeof bits == sizeof f, "f32");
    __builtin_memcpy(&bits, &f, sizeof bits);
    h = (h ^ bits) * 1099511628211ull;
  }
  return h;
}

// A random graph of unary steps over f32 vectors of 64 to 512 elements: each node reads one
// or two earlier tensors, so tensors die at random points and the allocator keeps choosing
// among chunk tails. Its output sums every tensor no other node read.
void random_graph_case(ggml_backend_t cpu, int seed) {
  ChunkedHostType chunked;
  init_chunked(chunked, 4096);
  Rng rng{static_cast<std::uint64_t>(seed) * 7919u + 1};
  ggml_init_params params = {512 * ggml_tensor_overhead() + ggml_graph_overhead(), nullptr, true};
  ggml_context* ctx = ggml_init(params);
  ggml_tensor* in = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 64);
  ggml_set_input(in);
  std::vector<ggml_tensor*> all = {in};
  std::vector<int> reads = {0};
  for (int i = 0; i < 60; ++i) {
    const int a = static_cast<int>(all.size()) - 1 -
                  rng.below(static_cast<int>(all.size()) < 6 ? static_cast<int>(all.size()) : 6);
    ggml_tensor* x = all[static_cast<size_t>(a)];
    ++reads[static_cast<size_t>(a)];
    ggml_tensor* y = nullptr;
    const int64_t n = x->ne[0];
    switch (rng.below(4)) {
      case 0: y = n < 512 ? ggml_pad(ctx, x, 64 * (1 + rng.below(4)), 0, 0, 0) : ggml_scale(ctx, x, 0.5f); break;
      case 1: y = ggml_sqr(ctx, x); break;
      case 2: y = n > 64 ? ggml_view_1d(ctx, ggml_scale(ctx, x, 0.25f), n / 2, 0) : ggml_scale(ctx, x, 2.0f); break;
      default: y = ggml_add(ctx, x, ggml_scale(ctx, x, 0.125f)); break;
    }
    y = ggml_cont(ctx, y);
    all.push_back(y);
    reads.push_back(0);
  }
  ggml_tensor* out = nullptr;
  for (size_t i = 0; i < all.size(); ++i) {
    if (reads[i] != 0) continue;
    ggml_tensor* s = ggml_sum(ctx, all[i]);
    out = out == nullptr ? s : ggml_add(ctx, out, s);
  }
  ggml_set_output(out);
  ggml_cgraph* gf = ggml_new_graph(ctx);
  ggml_build_forward_expand(gf, out);

  ggml_backend_buffer_type_t bufts[1] = {&chunked.buft};
  ggml_gallocr_t galloc = ggml_gallocr_new_n(bufts, 1);
  const std::string key = "random" + std::to_string(seed);
  const bool ok = ggml_gallocr_alloc_graph(galloc, gf);
  std::printf("exact %s.alloc %s\n", key.c_str(), ok ? "true" : "false");
  if (ok) {
    std::vector<float> values(64);
    for (size_t i = 0; i < values.size(); ++i) values[i] = 0.01f * static_cast<float>(i % 17);
    ggml_backend_tensor_set(in, values.data(), 0, ggml_nbytes(in));
    ggml_backend_graph_compute(cpu, gf);
    std::printf("exact %s.out %016" PRIx64 "\n", key.c_str(), hash_values(out));
    std::printf("size %s.buffer %zu\n", key.c_str(), ggml_gallocr_get_buffer_size(galloc, 0));
    std::printf("layout %s.chunks %s\n", key.c_str(), chunk_sizes(chunked).c_str());
    std::printf("layout %s.placements %s\n", key.c_str(), placements(gf, chunked).c_str());
  }
  ggml_gallocr_free(galloc);
  ggml_free(ctx);
}

// Three inputs of 768 MiB - 4 KiB and two sums of them, which both planners put in place: 2.25 GiB,
// reserved on a buffer type of the CPU's max size (SIZE_MAX) and never computed, so no page is
// touched.
void large_plan_case() {
  ChunkedHostType chunked;
  init_chunked(chunked, SIZE_MAX);
  ggml_init_params params = {16 * ggml_tensor_overhead() + ggml_graph_overhead(), nullptr, true};
  ggml_context* ctx = ggml_init(params);
  const int64_t n = (768ll * 1024 * 1024 - 4096) / 4;
  ggml_tensor* a = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, n);
  ggml_tensor* b = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, n);
  ggml_tensor* c = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, n);
  ggml_set_input(a);
  ggml_set_input(b);
  ggml_set_input(c);
  ggml_tensor* out = ggml_add(ctx, ggml_add(ctx, a, b), c);
  ggml_set_output(out);
  ggml_cgraph* gf = ggml_new_graph(ctx);
  ggml_build_forward_expand(gf, out);
  ggml_backend_buffer_type_t bufts[1] = {&chunked.buft};
  ggml_gallocr_t galloc = ggml_gallocr_new_n(bufts, 1);
  const bool ok = ggml_gallocr_reserve(galloc, gf);
  std::printf("exact large_plan.reserve %s\n", ok ? "true" : "false");
  std::printf("size large_plan.buffer %zu\n", ggml_gallocr_get_buffer_size(galloc, 0));
  std::printf("layout large_plan.chunks %s\n", chunk_sizes(chunked).c_str());
  size_t largest = 0;
  for (ggml_backend_buffer_t buffer : chunked.live) {
    largest = ggml_backend_buffer_get_size(buffer) > largest ? ggml_backend_buffer_get_size(buffer) : largest;
  }
  std::printf("exact large_plan.chunks_within_ptrdiff_max %s\n", largest <= SIZE_MAX / 2 ? "true" : "false");
  ggml_gallocr_free(galloc);
  ggml_free(ctx);
}

}  // namespace

int main() {
  ggml_backend_t cpu = ggml_backend_cpu_init();
  // one thread: the graphs are tiny, and spinning threads on a loaded 2-core machine (under
  // qemu too) take longer than the work
  ggml_backend_cpu_set_n_threads(cpu, 1);
  for (int seed = 0; seed < 40; ++seed) random_graph_case(cpu, seed);
  large_plan_case();
  ggml_backend_free(cpu);
  std::printf("done\n");
  return 0;
}
