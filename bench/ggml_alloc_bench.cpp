// Every zoo graph at real dimensions (ggml_zoo_mirror.hpp), or the graph files of
// bench/graphs replayed through ggml, reserved and allocated by ggml-alloc, nothing computed:
// weights and compute buffers have addresses but no memory. Linked twice against llama.rn
// 0.12.9's ggml: galloc_ggml_alloc_bench_stock (stock ggml-alloc.c) and
// galloc_ggml_alloc_bench_galloc (the drop-in; GALLOC_STRATEGY picks its strategy).
//
//   galloc_ggml_alloc_bench_KIND [REPETITIONS] [--files FILE...] [--filter SUBSTRING]
//
// ggml_gallocr_reserve and ggml_gallocr_alloc_graph timed, median of REPETITIONS (default 15).
// Prints `bench NAME nodes=.. buffer=.. reserve_us=.. alloc_us=.. bound=..` lines (bound: the
// live lower bound), which bench/zoo_bench.cmake puts side by side for stock and galloc.
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "galloc/zoo.hpp"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml.h"
#include "ggml_bench_support.hpp"
#include "ggml_warnings_log.hpp"
#include "ggml_zoo_mirror.hpp"
#include "median.hpp"
#include "test_support.hpp"

namespace {

using namespace galloc::dropin_test;
using namespace galloc::ggml_bench;
using galloc::bench::median;
namespace zoo = galloc::zoo;

// Reserves `graph` REPETITIONS times, then allocates it as often, each time from the state the
// tensors of `fresh` had before (as a program builds a new graph per evaluation); prints the
// `bench` line of zoo_bench.cmake. False when the reserve fails.
bool bench_graph(const std::string& name, ggml_cgraph* graph, const std::vector<ggml_tensor*>& fresh,
                 ggml_backend_buffer_type& no_memory, int repetitions, std::size_t bound) {
  const FreshTensors before(fresh);
  ggml_gallocr_t galloc = ggml_gallocr_new(&no_memory);
  std::vector<double> reserve_us, alloc_us;
  bool reserved = true;
  for (int r = 0; r < repetitions && reserved; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    reserved = ggml_gallocr_reserve(galloc, graph);
    reserve_us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  if (!reserved) {  // zoo_bench.cmake reports the graph missing from this run
    std::fprintf(stderr, "%s: ggml_gallocr_reserve failed\n", name.c_str());
    ggml_gallocr_free(galloc);
    return false;
  }
  for (int r = 0; r < repetitions; ++r) {
    before.restore();
    const auto t0 = std::chrono::steady_clock::now();
    check(ggml_gallocr_alloc_graph(galloc, graph), name + ": alloc_graph");
    alloc_us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::printf("bench %s nodes=%d buffer=%zu reserve_us=%.1f alloc_us=%.1f bound=%zu\n", name.c_str(),
              ggml_graph_n_nodes(graph), ggml_gallocr_get_buffer_size(galloc, 0), median(reserve_us), median(alloc_us),
              bound);
  std::fflush(stdout);
  ggml_gallocr_free(galloc);
  return true;
}

int bench_zoo(const std::string& filter, int repetitions) {
  ggml_backend_buffer_type no_memory = no_memory_buffer_type();
  int failures = 0;
  for (const zoo::ZooEntry& entry : zoo::list()) {
    if (entry.name.find(filter) == std::string::npos) continue;
    Built b;
    if (build_both(entry.name, 1.0, b) != Outcome::kSame) {
      ++failures;
      continue;
    }
    GgmlMirror& m = *b.mirror;
    std::vector<ggml_tensor*> weights, planned;
    for (ggml_tensor* t = ggml_get_first_tensor(m.weights_ctx()); t != nullptr;
         t = ggml_get_next_tensor(m.weights_ctx(), t))
      weights.push_back(t);
    for (ggml_tensor* t = ggml_get_first_tensor(m.graph_ctx()); t != nullptr;
         t = ggml_get_next_tensor(m.graph_ctx(), t))
      planned.push_back(t);
    ggml_backend_buffer_t buffer = place_in_buffer(no_memory, weights);
    galloc::GraphFile file;
    file.graph = std::move(b.graph);
    file.buffer_types = {{"CPU"}};  // lower_bound_of sets the alignment
    file.buffer_type_of_id = {0};
    const std::size_t bound = lower_bound_of(std::move(file), no_memory_alignment());
    if (!bench_graph(entry.name, m.graph(), planned, no_memory, repetitions, bound)) ++failures;
    ggml_backend_buffer_free(buffer);
  }
  return failures;
}

}  // namespace

int main(int argc, char** argv) {
  log_ggml_warnings_only();
  BenchArgs args;
  if (!parse_bench_args(argc, argv, args))
    fail("usage: galloc_ggml_alloc_bench_KIND [REPETITIONS] [--files FILE...] [--filter SUBSTRING]");
  ggml_backend_buffer_type no_memory = no_memory_buffer_type();
  const int failures = args.files.empty()
                           ? bench_zoo(args.filter, args.repetitions)
                           : for_each_graph_file(args.files, args.filter, no_memory, [&](const ReplayedFile& f) {
                               return bench_graph(f.name, f.graph, f.fresh, no_memory, args.repetitions, f.bound);
                             });
  if (failures > 0) {
    std::fprintf(stderr, "ggml_alloc_bench: %d graph(s) failed\n", failures);
    return 1;
  }
  std::printf("done\n");
  return 0;
}
