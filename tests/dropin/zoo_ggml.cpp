// Every zoo graph built with ggml's own API (ggml_zoo_mirror.hpp), checked against the zoo's
// and computed. Linked twice, like dropin_graphs.cpp: against libggml-stock.a (stock
// ggml-alloc.c) and libggml-galloc.a (galloc's drop-in).
//
//   zoo_ggml [--filter SUBSTRING]   for each graph (whose name contains SUBSTRING): the ggml
//                        graph is the zoo's graph (node for node: op, type, ne, nb, sources,
//                        view source and offset, flags; leaf for leaf), then at a small scale,
//                        with random weights and inputs, computed by the CPU backend through
//                        ggml_gallocr. Prints `exact` (output hashes), `size` (compute buffer)
//                        and `layout` lines for compare.cmake.
//
// bench/ggml_alloc_bench.cpp plans the same graphs at real dimensions, for time.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "galloc/zoo.hpp"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"
#include "ggml_warnings_log.hpp"
#include "ggml_zoo_mirror.hpp"
#include "layout_hash.hpp"
#include "test_support.hpp"

namespace {

using namespace galloc::dropin_test;
namespace zoo = galloc::zoo;

ggml_backend_t g_cpu = nullptr;

void fill_random(ggml_tensor* t, Rng& rng, float scale) {
  const std::int64_t n = ggml_nelements(t);
  std::vector<float> f(static_cast<std::size_t>(n));
  for (float& x : f) x = rng.uniform(scale);
  if (t->type == GGML_TYPE_F32) {
    ggml_backend_tensor_set(t, f.data(), 0, ggml_nbytes(t));
  } else if (t->type == GGML_TYPE_F16) {
    std::vector<ggml_fp16_t> h(f.size());
    ggml_fp32_to_fp16_row(f.data(), h.data(), n);
    ggml_backend_tensor_set(t, h.data(), 0, ggml_nbytes(t));
  } else if (ggml_is_quantized(t->type)) {
    std::vector<unsigned char> q(ggml_nbytes(t));
    const std::int64_t per_row = t->ne[0];
    ggml_quantize_chunk(t->type, f.data(), q.data(), 0, n / per_row, per_row, nullptr);
    ggml_backend_tensor_set(t, q.data(), 0, q.size());
  } else {
    fail(std::string("no random data for ") + t->name + " of type " + ggml_type_name(t->type));
  }
}

// Integer inputs: indices below what they index (distinct where they are rows to write), or
// positions 0, 1, 2, ...; the AdamW hyper-parameters; everything else random.
void fill_input(const GgmlMirror& mirror, ggml_tensor* t, Rng& rng) {
  const InputUse use = mirror.use_of(t);
  const std::int64_t n = ggml_nelements(t);
  if (use.adamw) {
    const float beta1 = 0.9f, beta2 = 0.999f;
    const std::vector<float> p{1e-3f, beta1, beta2, 1e-8f, 0.0f, 1.0f / (1.0f - beta1), 1.0f / (1.0f - beta2)};
    check(ggml_nbytes(t) == p.size() * sizeof(float), "adamw parameters");
    ggml_backend_tensor_set(t, p.data(), 0, ggml_nbytes(t));
  } else if (t->type == GGML_TYPE_I32) {
    std::vector<std::int32_t> v(static_cast<std::size_t>(n));
    for (std::int64_t k = 0; k < n; ++k) {
      v[static_cast<std::size_t>(k)] = static_cast<std::int32_t>(use.bound > 0 ? rng.below(use.bound) : k);
    }
    ggml_backend_tensor_set(t, v.data(), 0, ggml_nbytes(t));
  } else if (t->type == GGML_TYPE_I64) {
    check(use.bound > 0, std::string("I64 input ") + t->name + " indexes nothing");
    std::vector<std::int64_t> v(static_cast<std::size_t>(n));
    const std::int64_t first = std::max<std::int64_t>(0, use.bound - n);  // the end of the cache
    for (std::int64_t k = 0; k < n; ++k) v[static_cast<std::size_t>(k)] = (first + k) % use.bound;
    ggml_backend_tensor_set(t, v.data(), 0, ggml_nbytes(t));
  } else {
    fill_random(t, rng, 1.0f);
  }
}

std::uint64_t hash_tensor(const ggml_tensor* t, std::uint64_t h, std::size_t* non_finite) {
  std::vector<unsigned char> bytes(ggml_nbytes(t));
  ggml_backend_tensor_get(t, bytes.data(), 0, bytes.size());
  if (t->type == GGML_TYPE_F32) {
    const auto* f = reinterpret_cast<const float*>(bytes.data());
    for (std::size_t k = 0; k < bytes.size() / sizeof(float); ++k) *non_finite += std::isfinite(f[k]) ? 0 : 1;
  }
  return fnv1a(bytes.data(), bytes.size(), h);
}

// The scale each graph is computed at: small enough for well under a second of CPU time.
double check_scale(const std::string& name) {
  const bool heavy = name.rfind("llama-", 0) == 0 && name.find("-tg1") == std::string::npos;
  if (name.rfind("unet", 0) == 0) return 0.2;  // latents 8x8 and 16x16
  if (heavy || name.rfind("whisper-large", 0) == 0) return 0.1;
  return 0.25;
}

int check_all(const std::string& filter) {
  int failures = 0;
  std::uint64_t seed = 1;
  for (const zoo::ZooEntry& entry : zoo::list()) {
    if (entry.name.find(filter) == std::string::npos) continue;
    const double scale = check_scale(entry.name);
    const std::string key = "zoo." + entry.name;
    Built full;
    const Outcome at_full = build_both(entry.name, 1.0, full);  // real dimensions: structure only
    std::string lacking = full.mirror->unsupported();
    full.mirror.reset();
    Built b;
    const Outcome at_scale = at_full == Outcome::kUnsupported ? at_full : build_both(entry.name, scale, b);
    if (at_scale == Outcome::kUnsupported) {  // (whisper.rn 0.4.0-rc.10's ggml)
      if (lacking.empty()) lacking = b.mirror->unsupported();
      std::printf("exact %s.skipped needs_%s\n", key.c_str(), lacking.c_str());
      continue;
    }
    const bool same = at_full == Outcome::kSame && at_scale == Outcome::kSame;
    std::printf("exact %s.same_graph %s\n", key.c_str(), same ? "true" : "false");
    if (at_full == Outcome::kError || at_scale == Outcome::kError) {
      ++failures;
      continue;
    }
#ifndef GALLOC_GGML_WHISPER_RN_0_4_0_RC_10
    if (!same) {  // a zoo graph that is not ggml's is a bug in the zoo
      ++failures;
      continue;
    }
#endif
    std::printf("exact %s.nodes %zu\n", key.c_str(), b.graph.nodes.size());
    GgmlMirror& m = *b.mirror;
    Rng rng(seed++);
    // weights: random, scaled so that activations stay near 1 through the layers
    ggml_backend_buffer_t weights = ggml_backend_alloc_ctx_tensors(m.weights_ctx(), g_cpu);
    check(weights != nullptr, key + ": weights buffer");
    for (ggml_tensor* t = ggml_get_first_tensor(m.weights_ctx()); t != nullptr;
         t = ggml_get_next_tensor(m.weights_ctx(), t)) {
      int last = 3;  // the output dimension: what is left is the fan-in
      while (last > 0 && t->ne[last] == 1) --last;
      const std::int64_t fan_in = last == 0 ? 1 : ggml_nelements(t) / t->ne[last];
      fill_random(t, rng, 1.0f / std::sqrt(static_cast<float>(fan_in)));
    }
    ggml_gallocr_t galloc = ggml_gallocr_new(ggml_backend_cpu_buffer_type());
    // a graph one allocator refuses is reported as a difference, and the other graphs still run
    const bool allocated = ggml_gallocr_alloc_graph(galloc, m.graph());
    std::printf("exact %s.alloc_graph %s\n", key.c_str(), allocated ? "true" : "false");
    if (!allocated) {
      ggml_gallocr_free(galloc);
      ggml_backend_buffer_free(weights);
      continue;
    }
    for (ggml_tensor* in : m.inputs()) {
      if (in->buffer != nullptr) fill_input(m, in, rng);  // (an input the graph does not reach has none)
    }
    const auto t0 = std::chrono::steady_clock::now();
    check(ggml_backend_graph_compute(g_cpu, m.graph()) == GGML_STATUS_SUCCESS, key + ": compute");
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::size_t non_finite = 0;
    int k = 0;
    for (const ggml_tensor* out : m.outputs()) {
      std::printf("exact %s.out%d.%s %s\n", key.c_str(), k++, out->name,
                  hex(hash_tensor(out, 0xcbf29ce484222325ull, &non_finite)).c_str());
    }
    // what the graph wrote into existing memory (KV caches, parameters after AdamW)
    std::uint64_t h = 0xcbf29ce484222325ull;
    std::size_t ignored = 0;
    for (ggml_tensor* t = ggml_get_first_tensor(m.weights_ctx()); t != nullptr;
         t = ggml_get_next_tensor(m.weights_ctx(), t)) {
      h = hash_tensor(t, h, &ignored);
    }
    std::printf("exact %s.weights_after %s\n", key.c_str(), hex(h).c_str());
    std::printf("exact %s.non_finite_outputs %zu\n", key.c_str(), non_finite);
    std::printf("size %s.compute_buffer %zu\n", key.c_str(), ggml_gallocr_get_buffer_size(galloc, 0));
    std::printf("layout %s.layout %s\n", key.c_str(), layout_hash(m.graph()).c_str());
    std::printf("info %s.compute scale=%g nodes=%zu %.1fms\n", key.c_str(), scale, b.graph.nodes.size(), ms);
    std::fflush(stdout);
    ggml_gallocr_free(galloc);
    ggml_backend_buffer_free(weights);
  }
  return failures;
}

}  // namespace

int main(int argc, char** argv) {
  log_ggml_warnings_only();
  std::string filter;
  for (int k = 1; k < argc; ++k) {
    const std::string arg = argv[k];
    if (arg == "--filter" && k + 1 < argc) {
      filter = argv[++k];
    } else {
      fail("usage: zoo_ggml [--filter SUBSTRING]");
    }
  }
  g_cpu = ggml_backend_cpu_init();
  check(g_cpu != nullptr, "cpu backend");
  ggml_backend_cpu_set_n_threads(g_cpu, 1);  // one thread: every op's reduction order is fixed
  const int failures = check_all(filter);
  ggml_backend_free(g_cpu);
  if (failures > 0) {
    std::fprintf(stderr, "zoo_ggml: %d graph(s) failed\n", failures);
    return 1;
  }
  std::printf("done\n");
  return 0;
}
