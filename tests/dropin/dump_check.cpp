// Reads the graph files that the drop-in wrote under GALLOC_DUMP=DIR and plans each one
// again with the ggml strategy on planning-only buffer types, printing its buffer sizes:
//   dump FILE buffer<id> BYTES
// dump.cmake checks them against the compute buffer the drop-in itself reported.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "galloc/graph_allocator.hpp"
#include "galloc/graph_json.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(argv[1])) {
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& path : files) {
    auto file = galloc::read_graph_file(path.string());
    if (!file) {
      std::fprintf(stderr, "%s\n", file.status().to_string().c_str());
      return 1;
    }
    auto types = galloc::make_null_buffer_types(*file);
    galloc::GraphAllocatorOptions options;
    options.placement.strategy = galloc::Strategy::kGgml;
    galloc::GraphAllocator allocator(types.per_id, options);
    if (auto s = allocator.reserve(file->graph, file->assignment()); !s) {
      std::fprintf(stderr, "%s: %s\n", path.c_str(), s.to_string().c_str());
      return 1;
    }
    for (int b = 0; b < allocator.buffer_count(); ++b) {
      std::printf("dump %s buffer%d %llu\n", path.filename().c_str(), b,
                  static_cast<unsigned long long>(allocator.buffer_size(b).value()));
    }
  }
  return 0;
}
