#include "support/lifetimes_difference.hpp"

#include <vector>

namespace galloc::testing {
namespace {

template <typename T, typename Same>
std::string compare(const char* field, const std::vector<T>& a, const std::vector<T>& b, Same same) {
  if (a.size() != b.size()) {
    return std::string(field) + ": " + std::to_string(a.size()) + " against " + std::to_string(b.size()) + " entries";
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!same(a[i], b[i])) return std::string(field) + "[" + std::to_string(i) + "] differs";
  }
  return {};
}

const auto equal = [](const auto& x, const auto& y) { return x == y; };

}  // namespace

std::string lifetimes_difference(const GraphProblem& a, const GraphProblem& b) {
  const auto same_event = [](const LifetimeEvent& x, const LifetimeEvent& y) {
    return x.kind == y.kind && x.storage == y.storage && x.begin == y.begin && x.size == y.size;
  };
  const auto same_storage = [](const StorageObject& x, const StorageObject& y) {
    if (x.allocator != y.allocator || x.size != y.size || x.live.lower != y.live.lower ||
        x.live.upper != y.live.upper || x.first_tensor != y.first_tensor ||
        x.tail_frees.size() != y.tail_frees.size()) {
      return false;
    }
    for (std::size_t i = 0; i < x.tail_frees.size(); ++i) {
      if (x.tail_frees[i].step != y.tail_frees[i].step || x.tail_frees[i].begin != y.tail_frees[i].begin) return false;
    }
    return true;
  };
  const auto same_allocator = [](const AllocatorSpec& x, const AllocatorSpec& y) {
    return x.alignment == y.alignment && x.max_chunk_size == y.max_chunk_size;
  };
  for (const std::string& difference : {
           compare("allocators", a.allocators, b.allocators, same_allocator),
           compare("events", a.events, b.events, same_event),
           compare("storages", a.storages, b.storages, same_storage),
           compare("buffer_allocator", a.buffer_allocator, b.buffer_allocator, equal),
           compare("tensor_storage", a.tensor_storage, b.tensor_storage, equal),
           compare("tensor_buffer", a.tensor_buffer, b.tensor_buffer, equal),
           compare("tensor_size", a.tensor_size, b.tensor_size, equal),
           compare("read_order", a.read_order, b.read_order, equal),
           compare("node_step", a.node_step, b.node_step, equal),
       }) {
    if (!difference.empty()) return difference;
  }
  return {};
}

}  // namespace galloc::testing
