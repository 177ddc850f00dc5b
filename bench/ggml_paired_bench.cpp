// Stock ggml-alloc.c and galloc's drop-in in one program (paired_dropin.cpp renames the
// drop-in's functions), on llama.rn 0.12.9's ggml: on each graph file of bench/graphs,
// replayed through ggml with no memory behind its buffers, stock, the drop-in's `ggml`, its
// `best` and `best` in a share group reserve by turns, then allocate, then allocate again.
//
//   galloc_ggml_paired_bench [REPETITIONS] --files FILE... [--filter SUBSTRING]
//
// Prints a `pair` line per graph with galloc / stock ratios (shared / best for the last), then
// their geometric means per graph family. Fails when `ggml`'s buffer is not stock's.
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml.h"
#include "ggml_bench_support.hpp"
#include "ggml_warnings_log.hpp"
#include "median.hpp"
#include "test_support.hpp"

// paired_dropin.cpp: the drop-in under other names, beside stock ggml-alloc.c
extern "C" {
ggml_gallocr_t paired_gallocr_new(ggml_backend_buffer_type_t buft);
void paired_gallocr_free(ggml_gallocr_t galloc);
bool paired_gallocr_reserve(ggml_gallocr_t galloc, ggml_cgraph* graph);
bool paired_gallocr_alloc_graph(ggml_gallocr_t galloc, ggml_cgraph* graph);
size_t paired_gallocr_get_buffer_size(ggml_gallocr_t galloc, int buffer_id);
bool paired_share_begin(const char* name);
bool paired_share_end(void);
}

namespace {

using namespace galloc::dropin_test;
using namespace galloc::ggml_bench;
using galloc::bench::median;

// One allocator of the comparison: stock ggml-alloc, or the drop-in with a strategy, alone or
// in a share group (its buffer a shared arena's, as GALLOC_SHARE makes it; the only member).
struct Contender {
  const char* name;
  const char* strategy;  // GALLOC_STRATEGY when the drop-in's allocator is made; null: stock
  bool shared;
  ggml_gallocr_t (*make)(ggml_backend_buffer_type_t);
  void (*release)(ggml_gallocr_t);
  bool (*reserve)(ggml_gallocr_t, ggml_cgraph*);
  bool (*alloc)(ggml_gallocr_t, ggml_cgraph*);
  size_t (*buffer_size)(ggml_gallocr_t, int);
};

const std::array<Contender, 4> kContenders = {{
    {"stock", nullptr, false, ggml_gallocr_new, ggml_gallocr_free, ggml_gallocr_reserve, ggml_gallocr_alloc_graph,
     ggml_gallocr_get_buffer_size},
    {"ggml", "ggml", false, paired_gallocr_new, paired_gallocr_free, paired_gallocr_reserve, paired_gallocr_alloc_graph,
     paired_gallocr_get_buffer_size},
    {"best", "best", false, paired_gallocr_new, paired_gallocr_free, paired_gallocr_reserve, paired_gallocr_alloc_graph,
     paired_gallocr_get_buffer_size},
    {"shared", "best", true, paired_gallocr_new, paired_gallocr_free, paired_gallocr_reserve,
     paired_gallocr_alloc_graph, paired_gallocr_get_buffer_size},
}};

// Per graph family (the name's first word: llama, whisper), the log of each ratio to stock,
// for geometric means over the graphs where stock takes 10 us or more.
struct PairedMeans {
  struct Sums {
    int n = 0;
    // reserve ggml, reserve best, alloc ggml, alloc best, alloc again ggml, alloc again best
    // (each / stock), alloc shared / best
    std::array<double, 7> log_ratio{};
    std::array<double, 7> worst{};
  };
  std::map<std::string, Sums> families;
  void add(const std::string& family, const std::array<double, 7>& ratios) {
    for (const std::string& key : {family, std::string("all")}) {
      Sums& sums = families[key];
      sums.n += 1;
      for (std::size_t k = 0; k < ratios.size(); ++k) {
        sums.log_ratio[k] += std::log(ratios[k]);
        sums.worst[k] = std::max(sums.worst[k], ratios[k]);
      }
    }
  }
  void print() const {
    std::printf("\ngeometric means (worst) of galloc / stock, graphs where stock takes >= 10 us:\n");
    std::printf("%-10s %4s %15s %15s %15s %15s %15s %15s %15s\n", "family", "n", "ggml reserve", "best reserve",
                "ggml alloc", "best alloc", "ggml again", "best again", "shared / best");
    for (const auto& [family, sums] : families) {
      std::printf("%-10s %4d", family.c_str(), sums.n);
      for (std::size_t k = 0; k < sums.log_ratio.size(); ++k) {
        std::printf("    %5.2f (%4.2f)", std::exp(sums.log_ratio[k] / sums.n), sums.worst[k]);
      }
      std::printf("\n");
    }
  }
};

// Reserves `graph` with every contender by turns (the first of each turn rotates), REPETITIONS
// turns, then allocates it the same way, each alloc from the state the tensors of `fresh` had
// before; then allocates it again the same way, each contender timed on the graph it has just
// allocated (the usual ggml loop). A ratio is the median over the turns of galloc's time /
// stock's in the same turn, so that a busy machine slows both sides of it. False when a
// reserve fails, `ggml` does not give stock's buffer or the shared `best` does not report
// `best`'s need.
bool pair_graph(const std::string& name, ggml_cgraph* graph, const std::vector<ggml_tensor*>& fresh,
                ggml_backend_buffer_type& no_memory, int repetitions, std::size_t bound, PairedMeans& means) {
  const FreshTensors before(fresh);
  constexpr std::size_t n = kContenders.size();
  std::array<ggml_gallocr_t, n> gallocs{};
  for (std::size_t c = 0; c < n; ++c) {
    if (kContenders[c].strategy != nullptr) setenv("GALLOC_STRATEGY", kContenders[c].strategy, 1);
    if (kContenders[c].shared) check(paired_share_begin("paired"), "share group");
    gallocs[c] = kContenders[c].make(&no_memory);
    if (kContenders[c].shared) check(paired_share_end(), "share group");
  }
  std::array<std::vector<double>, n> reserve_us, alloc_us, again_us;
  auto timed = [](auto&& call) {
    const auto t0 = std::chrono::steady_clock::now();
    const bool ok = call();
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    return ok ? us : -1.0;
  };
  bool ok = true;
  for (int r = 0; r < repetitions && ok; ++r) {
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t c = (static_cast<std::size_t>(r) + k) % n;
      const double us = timed([&] { return kContenders[c].reserve(gallocs[c], graph); });
      if (us < 0) {
        std::fprintf(stderr, "%s: %s: ggml_gallocr_reserve failed\n", name.c_str(), kContenders[c].name);
        ok = false;
      }
      reserve_us[c].push_back(us);
    }
  }
  std::array<std::size_t, n> buffer{};
  for (std::size_t c = 0; c < n && ok; ++c) buffer[c] = kContenders[c].buffer_size(gallocs[c], 0);
  if (ok && buffer[1] != buffer[0]) {
    std::fprintf(stderr, "%s: ggml's buffer is %zu bytes, stock's %zu\n", name.c_str(), buffer[1], buffer[0]);
    ok = false;
  }
  if (ok && buffer[3] != buffer[2]) {  // a member reports its own need
    std::fprintf(stderr, "%s: shared best needs %zu bytes, best alone %zu\n", name.c_str(), buffer[3], buffer[2]);
    ok = false;
  }
  for (int r = 0; r < repetitions && ok; ++r) {
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t c = (static_cast<std::size_t>(r) + k) % n;
      before.restore();
      const double us = timed([&] { return kContenders[c].alloc(gallocs[c], graph); });
      check(us >= 0, name + ": " + kContenders[c].name + ": alloc_graph");
      alloc_us[c].push_back(us);
    }
  }
  for (int r = 0; r < repetitions && ok; ++r) {
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t c = (static_cast<std::size_t>(r) + k) % n;
      before.restore();
      check(kContenders[c].alloc(gallocs[c], graph), name + ": " + kContenders[c].name + ": alloc_graph");
      const double us = timed([&] { return kContenders[c].alloc(gallocs[c], graph); });
      check(us >= 0, name + ": " + kContenders[c].name + ": alloc_graph again");
      again_us[c].push_back(us);
    }
  }
  before.restore();
  for (std::size_t c = 0; c < n; ++c) kContenders[c].release(gallocs[c]);
  if (!ok) return false;

  auto ratio = [&](const std::array<std::vector<double>, n>& us, std::size_t c, std::size_t base = 0) {
    std::vector<double> turns;
    for (std::size_t r = 0; r < us[base].size(); ++r) turns.push_back(us[c][r] / us[base][r]);
    return median(turns);
  };
  const std::array<double, 7> ratios = {ratio(reserve_us, 1), ratio(reserve_us, 2), ratio(alloc_us, 1),
                                        ratio(alloc_us, 2),   ratio(again_us, 1),   ratio(again_us, 2),
                                        ratio(alloc_us, 3, 2)};
  std::printf(
      "pair %s nodes=%d bound=%zu buffer stock=%zu ggml=%zu best=%zu | reserve us stock=%.1f ggml=%.2fx "
      "best=%.2fx | alloc us stock=%.1f ggml=%.2fx best=%.2fx | again us stock=%.1f ggml=%.2fx best=%.2fx | "
      "shared/best alloc %.2fx\n",
      name.c_str(), ggml_graph_n_nodes(graph), bound, buffer[0], buffer[1], buffer[2], median(reserve_us[0]), ratios[0],
      ratios[1], median(alloc_us[0]), ratios[2], ratios[3], median(again_us[0]), ratios[4], ratios[5], ratios[6]);
  std::fflush(stdout);
  if (median(reserve_us[0]) >= 10 && median(alloc_us[0]) >= 10) means.add(name.substr(0, name.find('-')), ratios);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  log_ggml_warnings_only();
  BenchArgs args;
  if (!parse_bench_args(argc, argv, args) || args.files.empty())
    fail("usage: galloc_ggml_paired_bench [REPETITIONS] --files FILE... [--filter SUBSTRING]");
  ggml_backend_buffer_type no_memory = no_memory_buffer_type();
  PairedMeans means;
  const int failures = for_each_graph_file(args.files, args.filter, no_memory, [&](const ReplayedFile& f) {
    return pair_graph(f.name, f.graph, f.fresh, no_memory, args.repetitions, f.bound, means);
  });
  means.print();
  if (failures > 0) {
    std::fprintf(stderr, "ggml_paired_bench: %d graph(s) failed\n", failures);
    return 1;
  }
  std::printf("done\n");
  return 0;
}
