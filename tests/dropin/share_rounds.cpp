// The usual ggml loop on allocators that may share one compute buffer: each graph is reserved
// once and then allocated and computed round after round, as ggml's examples do. Two to four
// graphs in the shape of whisper.cpp's state: graph k reads graph k-1's output through
// ggml_view_tensor (graphs 1 and 2), and the fourth reads nothing from the others. Every case
// runs three rounds in the order 0, 1, ..., n-1, through
//   - ggml_gallocr directly, or ggml_backend_sched (one per graph), and
//   - graphs built once and allocated again every round, or rebuilt every round in the same
//     context memory (as whisper.cpp does).
//
// Compute buffers come from a buffer type that wraps the CPU one and counts what is allocated
// and freed, so the compute memory held at the peak is measured, not taken from the allocators.
//
// Output: compare.cmake lines. `exact` lines hash each graph's output in each round and count
// the compute buffers allocated after round 0 (none: the first round sized everything);
// `size` lines give each case's compute memory at its peak.
//
// With "share" as the argument every case opens a share group around its allocators
// (galloc-ggml.h), and the program checks what sharing must hold: at its peak, the compute
// memory is no more than the largest graph's need plus the output it reads, and for the
// four-graph chain no more than 0.35 of the unshared sum.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "ggml-alloc.h"
#include "ggml-backend-impl.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"
#include "test_support.hpp"

extern "C" {
// galloc-ggml.h's, defined by the drop-in only: weak, so that the stock build links.
__attribute__((weak)) bool galloc_ggml_share_begin(const char* name);
__attribute__((weak)) bool galloc_ggml_share_end(void);
}

namespace {

using namespace galloc::dropin_test;

constexpr int kEmbd = 256;
constexpr int kTokens = 96;
constexpr int kRounds = 3;

// ---------------------------------------------------------------- the counting buffer type

struct Counter {
  std::unordered_map<ggml_backend_buffer_t, std::size_t> live;
  std::size_t held = 0;
  std::size_t peak = 0;
  int allocations = 0;
  void (*cpu_free)(ggml_backend_buffer_t) = nullptr;  // the CPU buffers' own free
};
Counter counter;

void counted_free(ggml_backend_buffer_t buffer) {
  auto it = counter.live.find(buffer);
  check(it != counter.live.end(), "a compute buffer freed twice or never counted");
  counter.held -= it->second;
  counter.live.erase(it);
  counter.cpu_free(buffer);
}

const char* counted_name(ggml_backend_buffer_type_t) { return "Counted"; }

ggml_backend_buffer_t counted_alloc(ggml_backend_buffer_type_t, std::size_t size) {
  ggml_backend_buffer_t buffer = ggml_backend_buft_alloc_buffer(ggml_backend_cpu_buffer_type(), size);
  if (buffer == nullptr) return nullptr;
  counter.cpu_free = buffer->iface.free_buffer;
  buffer->iface.free_buffer = counted_free;  // the buffer is the CPU's otherwise
  const std::size_t bytes = ggml_backend_buffer_get_size(buffer);
  counter.live[buffer] = bytes;
  counter.held += bytes;
  counter.peak = std::max(counter.peak, counter.held);
  ++counter.allocations;
  return buffer;
}

std::size_t counted_alignment(ggml_backend_buffer_type_t) {
  return ggml_backend_buft_get_alignment(ggml_backend_cpu_buffer_type());
}

bool counted_is_host(ggml_backend_buffer_type_t) { return true; }

ggml_backend_buffer_type counted_type() {
  ggml_backend_buffer_type type{};
  type.iface.get_name = counted_name;
  type.iface.alloc_buffer = counted_alloc;
  type.iface.get_alignment = counted_alignment;
  type.iface.is_host = counted_is_host;
  type.device = ggml_backend_cpu_buffer_type()->device;
  return type;
}

// ---------------------------------------------------------------- the graphs

std::string output_hash(const ggml_tensor* t) {
  std::vector<float> v(static_cast<std::size_t>(ggml_nelements(t)));
  ggml_backend_tensor_get(t, v.data(), 0, ggml_nbytes(t));
  for (float f : v) check(std::isfinite(f), std::string("non-finite value in ") + t->name);
  return hex(fnv1a(v.data(), v.size() * sizeof(float)));
}

void fill(ggml_tensor* t, Rng& rng, float scale) {
  std::vector<float> v(static_cast<std::size_t>(ggml_nelements(t)));
  for (float& f : v) f = rng.uniform(scale);
  ggml_backend_tensor_set(t, v.data(), 0, ggml_nbytes(t));
}

// One graph with its weight: out = rms_norm(w * gelu(w * x)) + x, where x is the input, or
// (reading the previous graph) the previous output plus the input.
struct Member {
  ggml_context* weights_ctx = nullptr;
  ggml_backend_buffer_t weights = nullptr;
  ggml_tensor* w = nullptr;
  std::vector<char> meta;  // the graph's context memory, reused when rebuilt (as whisper.cpp)
  ggml_context* ctx = nullptr;
  ggml_cgraph* gf = nullptr;
  ggml_tensor* in = nullptr;
  ggml_tensor* out = nullptr;
  ggml_gallocr_t galloc = nullptr;
  ggml_backend_sched_t sched = nullptr;

  Member(ggml_backend_t cpu, Rng& rng) : meta(64 * ggml_tensor_overhead() + ggml_graph_overhead()) {
    ggml_init_params params{16 * ggml_tensor_overhead(), nullptr, /*no_alloc=*/true};
    weights_ctx = ggml_init(params);
    w = ggml_new_tensor_2d(weights_ctx, GGML_TYPE_F32, kEmbd, kEmbd);
    weights = ggml_backend_alloc_ctx_tensors(weights_ctx, cpu);
    check(weights != nullptr, "the weights' buffer");
    fill(w, rng, 0.1f);
  }
  ~Member() {
    if (sched != nullptr) ggml_backend_sched_free(sched);
    if (galloc != nullptr) ggml_gallocr_free(galloc);
    if (ctx != nullptr) ggml_free(ctx);
    ggml_backend_buffer_free(weights);
    ggml_free(weights_ctx);
  }
  Member(const Member&) = delete;
  Member& operator=(const Member&) = delete;

  void build(const Member* previous, int index) {
    if (ctx != nullptr) ggml_free(ctx);
    ggml_init_params params{meta.size(), meta.data(), /*no_alloc=*/true};
    ctx = ggml_init(params);
    in = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, kEmbd, kTokens);
    ggml_set_input(in);
    ggml_set_name(in, ("in" + std::to_string(index)).c_str());
    ggml_tensor* x = in;
    if (previous != nullptr) x = ggml_add(ctx, ggml_view_tensor(ctx, previous->out), in);
    ggml_tensor* h = ggml_gelu(ctx, ggml_mul_mat(ctx, w, x));
    out = ggml_add(ctx, ggml_rms_norm(ctx, ggml_mul_mat(ctx, w, h), 1e-5f), x);
    ggml_set_name(out, ("out" + std::to_string(index)).c_str());
    ggml_set_output(out);
    gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, out);
  }
};

enum class Api { kGallocr, kSched };

// One case: n graphs, three rounds. Returns nothing; prints its lines and checks what sharing
// must hold.
void run_case(ggml_backend_t cpu, ggml_backend_buffer_type_t counted, Api api, int n, bool rebuild, bool share) {
  const std::string key = std::string(api == Api::kGallocr ? "gallocr" : "sched") + ".n" + std::to_string(n) +
                          (rebuild ? ".rebuilt" : ".reused");
  // graph k reads graph k-1's output for k = 1, 2; the fourth reads nothing
  auto previous_of = [n](int k) { return k >= 1 && k <= 2 && k < n ? k - 1 : -1; };
  Rng rng(static_cast<std::uint64_t>(n) * 31 + (rebuild ? 7 : 0) + (api == Api::kSched ? 3 : 0));
  std::vector<std::unique_ptr<Member>> members;
  for (int k = 0; k < n; ++k) members.push_back(std::make_unique<Member>(cpu, rng));

  const std::size_t held_before = counter.held;
  counter.peak = counter.held;
  if (share) check(galloc_ggml_share_begin != nullptr && galloc_ggml_share_begin(key.c_str()), "share_begin");
  for (auto& m : members) {
    if (api == Api::kGallocr) {
      m->galloc = ggml_gallocr_new(counted);
      check(m->galloc != nullptr, key + ": ggml_gallocr_new");
    } else {
      ggml_backend_t backends[1] = {cpu};
      ggml_backend_buffer_type_t bufts[1] = {counted};
#ifndef GALLOC_GGML_WHISPER_RN_0_4_0_RC_10
      m->sched = ggml_backend_sched_new(backends, bufts, 1, 1024, false, false);
#else
      m->sched = ggml_backend_sched_new(backends, bufts, 1, 1024, false);
#endif
      check(m->sched != nullptr, key + ": ggml_backend_sched_new");
    }
  }
  if (share) check(galloc_ggml_share_end(), "share_end");

  // Sized once at start, as whisper.cpp and llama.cpp do.
  std::size_t largest_with_read = 0;
  std::size_t own_needs = 0;
  for (int k = 0; k < n; ++k) {
    Member& m = *members[static_cast<std::size_t>(k)];
    const int p = previous_of(k);
    m.build(p >= 0 ? members[static_cast<std::size_t>(p)].get() : nullptr, k);
    std::size_t need = 0;
    if (api == Api::kGallocr) {
      check(ggml_gallocr_reserve(m.galloc, m.gf), key + ": reserve graph " + std::to_string(k));
      need = ggml_gallocr_get_buffer_size(m.galloc, 0);
    } else {
      // as whisper.cpp sizes its schedulers: allocated once in order, so that each graph's
      // view finds the output it reads in a buffer (a scheduler assigns it a backend by that)
      check(ggml_backend_sched_alloc_graph(m.sched, m.gf), key + ": sched alloc graph " + std::to_string(k));
      ggml_backend_sched_reset(m.sched);
      need = ggml_backend_sched_get_buffer_size(m.sched, cpu);
    }
    own_needs += need;
    const std::size_t read = p >= 0 ? GGML_PAD(ggml_nbytes(m.out), counted_alignment(counted)) : 0;
    largest_with_read = std::max(largest_with_read, need + read);
  }

  int allocations_after_first_round = 0;
  for (int round = 0; round < kRounds; ++round) {
    const int allocations_before = counter.allocations;
    for (int k = 0; k < n; ++k) {
      Member& m = *members[static_cast<std::size_t>(k)];
      const int p = previous_of(k);
      if (rebuild && round > 0) m.build(p >= 0 ? members[static_cast<std::size_t>(p)].get() : nullptr, k);
      const std::string step = key + ".round" + std::to_string(round) + ".graph" + std::to_string(k);
      if (api == Api::kGallocr) {
        check(ggml_gallocr_alloc_graph(m.galloc, m.gf), step + ": alloc_graph");
        fill(m.in, rng, 1.0f);
        check(ggml_backend_graph_compute(cpu, m.gf) == GGML_STATUS_SUCCESS, step + ": compute");
      } else {
        ggml_backend_sched_reset(m.sched);
        check(ggml_backend_sched_alloc_graph(m.sched, m.gf), step + ": sched alloc_graph");
        fill(m.in, rng, 1.0f);
        check(ggml_backend_sched_graph_compute(m.sched, m.gf) == GGML_STATUS_SUCCESS, step + ": sched compute");
      }
      std::printf("exact %s.out %s\n", step.c_str(), output_hash(m.out).c_str());
    }
    if (round > 0) allocations_after_first_round += counter.allocations - allocations_before;
  }
  const std::size_t peak = counter.peak - held_before;
  std::printf("exact %s.allocations_after_round0 %d\n", key.c_str(), allocations_after_first_round);
  std::printf("size %s.compute_peak %zu\n", key.c_str(), peak);
  if (share) {
    check(peak <= largest_with_read, key + ": shared compute memory at its peak is " + std::to_string(peak) +
                                         " bytes, more than the largest graph's need plus what it reads (" +
                                         std::to_string(largest_with_read) + ")");
    if (n == 4) {
      check(static_cast<double>(peak) <= 0.35 * static_cast<double>(own_needs),
            key + ": shared compute memory at its peak is " + std::to_string(peak) + " bytes, more than 0.35 of " +
                std::to_string(own_needs) + " (the graphs' own needs added up)");
    }
    std::printf("info %s.shared_over_sum %.3f\n", key.c_str(),
                static_cast<double>(peak) / static_cast<double>(std::max<std::size_t>(own_needs, 1)));
  }
  members.clear();
  check(counter.held == held_before, key + ": compute buffers left behind after the allocators were freed");
}

}  // namespace

int main(int argc, char** argv) {
  const bool share = argc > 1 && std::strcmp(argv[1], "share") == 0;
  ggml_backend_t cpu = ggml_backend_cpu_init();
  check(cpu != nullptr, "ggml_backend_cpu_init");
  ggml_backend_cpu_set_n_threads(cpu, 2);
  ggml_backend_buffer_type counted = counted_type();
  for (Api api : {Api::kGallocr, Api::kSched}) {
    for (int n = 2; n <= 4; ++n) {
      for (bool rebuild : {false, true}) run_case(cpu, &counted, api, n, rebuild, share);
    }
  }
  ggml_backend_free(cpu);
  std::printf("done\n");
  return 0;
}
