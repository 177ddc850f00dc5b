#include "ggml_bench_support.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <utility>

#include "galloc/graph_file_gz.hpp"
#include "galloc/planner.hpp"
#include "ggml-cpu.h"
#include "graph_file_ggml.hpp"
#include "test_support.hpp"

namespace galloc::ggml_bench {
namespace {

void* no_memory_base(ggml_backend_buffer_t) { return reinterpret_cast<void*>(std::uintptr_t{1} << 40); }
const char* no_memory_name(ggml_backend_buffer_type_t) { return "NoMemory"; }
ggml_backend_buffer_t no_memory_alloc(ggml_backend_buffer_type_t buft, std::size_t size) {
  ggml_backend_buffer_i iface{};
  iface.get_base = no_memory_base;
  return ggml_backend_buffer_init(buft, iface, nullptr, size);
}
std::size_t no_memory_get_alignment(ggml_backend_buffer_type_t) { return no_memory_alignment(); }

}  // namespace

std::size_t no_memory_alignment() { return ggml_backend_buft_get_alignment(ggml_backend_cpu_buffer_type()); }

ggml_backend_buffer_type no_memory_buffer_type() {
  ggml_backend_buffer_type t{};
  t.iface.get_name = no_memory_name;
  t.iface.alloc_buffer = no_memory_alloc;
  t.iface.get_alignment = no_memory_get_alignment;
  t.device = ggml_backend_cpu_buffer_type()->device;
  return t;
}

ggml_backend_buffer_t place_in_buffer(ggml_backend_buffer_type& type, const std::vector<ggml_tensor*>& tensors) {
  const std::size_t align = no_memory_alignment();
  std::size_t total = 0;
  for (ggml_tensor* t : tensors) total += GGML_PAD(ggml_nbytes(t), align);
  ggml_backend_buffer_t buffer = ggml_backend_buft_alloc_buffer(&type, std::max<std::size_t>(total, align));
  std::size_t offset = 0;
  for (ggml_tensor* t : tensors) {
    void* address = static_cast<char*>(ggml_backend_buffer_get_base(buffer)) + offset;
    dropin_test::check(ggml_backend_tensor_alloc(buffer, t, address) == GGML_STATUS_SUCCESS, "weight address");
    offset += GGML_PAD(ggml_nbytes(t), align);
  }
  return buffer;
}

std::size_t lower_bound_of(GraphFile file, std::size_t alignment) {
  const Graph defaults;
  file.graph.inplace_ops = defaults.inplace_ops;
  file.graph.inplace_across_buffers = defaults.inplace_across_buffers;
  file.graph.inplace_through_views = defaults.inplace_through_views;
  for (BufferTypeDesc& type : file.buffer_types) type.alignment = alignment;
  const auto types = make_null_buffer_types(file);
  auto result = plan_graph(file.graph, types.per_id, file.assignment(), {.strategy = Strategy::kBest});
  return result.is_ok() ? result->plan.total_lower_bound() : 0;
}

FreshTensors::FreshTensors(const std::vector<ggml_tensor*>& fresh) : fresh_(fresh) {
  for (const ggml_tensor* t : fresh) saved_.push_back({t->data, t->buffer});
}

void FreshTensors::restore() const {
  for (std::size_t k = 0; k < fresh_.size(); ++k) {
    fresh_[k]->data = saved_[k].data;
    fresh_[k]->buffer = saved_[k].buffer;
  }
}

bool parse_bench_args(int argc, char** argv, BenchArgs& out) {
  for (int k = 1; k < argc; ++k) {
    const std::string arg = argv[k];
    if (arg == "--filter" && k + 1 < argc) {
      out.filter = argv[++k];
    } else if (arg == "--files") {
      while (k + 1 < argc && argv[k + 1][0] != '-') out.files.emplace_back(argv[++k]);
    } else if (std::atoi(arg.c_str()) > 0) {
      out.repetitions = std::atoi(arg.c_str());
    } else {
      return false;
    }
  }
  return true;
}

int for_each_graph_file(const std::vector<std::string>& paths, const std::string& filter,
                        ggml_backend_buffer_type& no_memory, const std::function<bool(const ReplayedFile&)>& bench) {
  int failures = 0;
  for (const std::string& path : paths) {
    std::string name = std::filesystem::path(path).filename().string();
    for (const char* suffix : {".gz", ".json"}) {
      if (name.ends_with(suffix)) name.resize(name.size() - std::strlen(suffix));
    }
    if (name.find(filter) == std::string::npos) continue;
    auto file = read_graph_file_any(path);
    if (!file.is_ok()) {
      std::fprintf(stderr, "%s\n", file.status().to_string().c_str());
      ++failures;
      continue;
    }
    if (file->buffer_types.size() != 1) {
      std::fprintf(stderr, "%s: %zu buffer types; the replay has one\n", path.c_str(), file->buffer_types.size());
      ++failures;
      continue;
    }
    dropin_test::ReplayedGraph replayed;
    dropin_test::replay_graph_file(*file, replayed);
    if (replayed.graph == nullptr) {
      std::fprintf(stderr, "%s: %s\n", path.c_str(), replayed.error.c_str());
      ++failures;
      continue;
    }
    ggml_backend_buffer_t buffer = place_in_buffer(no_memory, replayed.external);
    dropin_test::address_views_of_external(replayed);
    const std::size_t bound = lower_bound_of(std::move(file).value(), no_memory_alignment());
    if (!bench({name, replayed.graph, replayed.tensors, bound})) ++failures;
    ggml_backend_buffer_free(buffer);
  }
  return failures;
}

}  // namespace galloc::ggml_bench
