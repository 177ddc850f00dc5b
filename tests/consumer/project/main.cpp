#include <cstdio>

#include "galloc/galloc.hpp"

int main() {
  galloc::Graph graph;
  const auto x = graph.add_leaf(graph.new_tensor("x", galloc::DataType::F32, {256}));
  graph[x].flags |= galloc::kFlagInput;
  const auto y = graph.add_node(graph.new_op("y", galloc::Op::Scale, galloc::DataType::F32, {256}, {x}));
  graph[y].flags |= galloc::kFlagOutput;
  galloc::CpuBufferType cpu;
  galloc::GraphAllocator allocator({&cpu});
  if (auto status = allocator.alloc(graph); !status) {
    std::fprintf(stderr, "%s\n", status.to_string().c_str());
    return 1;
  }
  auto size = allocator.buffer_size(0);
  std::printf("consumer: compute buffer %llu bytes\n", static_cast<unsigned long long>(*size));
  // SCALE reuses its input in place, so one 1024-byte tensor is all the graph needs.
  return *size == 1024 ? 0 : 1;
}
