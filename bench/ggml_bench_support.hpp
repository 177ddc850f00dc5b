// What the ggml allocation benchmarks share (ggml_alloc_bench.cpp, ggml_paired_bench.cpp):
// buffers without memory, so that a 7B model's weights and compute buffers cost nothing;
// graph files (bench/graphs) replayed through ggml; the live lower bound of a graph.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "galloc/graph_json.hpp"
#include "ggml-backend-impl.h"
#include "ggml-backend.h"
#include "ggml.h"

namespace galloc::ggml_bench {

// A buffer type whose buffers have a base address nothing reads or writes: graphs are planned
// and their tensors get addresses, but nothing is computed. Alignment: the CPU backend's.
ggml_backend_buffer_type no_memory_buffer_type();
std::size_t no_memory_alignment();

// `tensors` at addresses in a new buffer of `type`, one after the other, as
// ggml_backend_alloc_ctx_tensors lays them out.
ggml_backend_buffer_t place_in_buffer(ggml_backend_buffer_type& type, const std::vector<ggml_tensor*>& tensors);

// The live lower bound of `file`'s graph as llama.rn 0.12.9's ggml plans it: its in-place
// rules and the CPU alignment, where a capture from another ggml has that ggml's in the file
// (whisper.rn rc.8's allocator also reuses memory through views). What no placement of the
// replayed graph can go under.
std::size_t lower_bound_of(GraphFile file, std::size_t alignment);

// The address and buffer of each tensor of `fresh` as they are now (before any alloc), to
// put back before each timed alloc, as a program builds a new graph per evaluation.
class FreshTensors {
 public:
  explicit FreshTensors(const std::vector<ggml_tensor*>& fresh);
  void restore() const;

 private:
  struct Saved {
    void* data;
    ggml_backend_buffer_t buffer;
  };
  const std::vector<ggml_tensor*>& fresh_;
  std::vector<Saved> saved_;
};

// One graph of a graph file, replayed through ggml with its weights in a buffer of
// `no_memory`: its name (the file name without .json.gz), the ggml graph, the tensors an alloc
// places and the live lower bound.
struct ReplayedFile {
  std::string name;
  ggml_cgraph* graph;
  const std::vector<ggml_tensor*>& fresh;
  std::size_t bound;
};

// A benchmark's command line: [REPETITIONS] [--files FILE...] [--filter SUBSTRING].
struct BenchArgs {
  int repetitions = 15;
  std::vector<std::string> files;
  std::string filter;
};
// False on an argument it does not know.
bool parse_bench_args(int argc, char** argv, BenchArgs& out);

// Calls `bench` for each of `paths` whose name contains `filter`; returns how many files could
// not be read or replayed plus how many `bench` returned false for.
int for_each_graph_file(const std::vector<std::string>& paths, const std::string& filter,
                        ggml_backend_buffer_type& no_memory, const std::function<bool(const ReplayedFile&)>& bench);

}  // namespace galloc::ggml_bench
