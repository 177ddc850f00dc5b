// Strategy `ggml`: replay the events through ggml's best-fit allocator, one per buffer type.
#include "galloc/dynamic_allocator.hpp"
#include "galloc/placement.hpp"

namespace galloc {

Placement place_ggml(const Problem& problem) {
  std::vector<DynamicAllocator> allocators;
  allocators.reserve(problem.allocators.size());
  for (const AllocatorSpec& spec : problem.allocators) {
    allocators.emplace_back(spec.alignment, spec.max_chunk_size);
  }
  Placement placement;
  placement.storage_address.resize(problem.storages.size());
  for (const LifetimeEvent& event : problem.events) {
    const auto s = static_cast<std::size_t>(event.storage);
    DynamicAllocator& allocator = allocators[static_cast<std::size_t>(problem.storages[s].allocator)];
    if (event.kind == LifetimeEvent::Kind::kAllocate) {
      placement.storage_address[s] = allocator.allocate(event.size);
    } else {
      const ChunkAddress base = placement.storage_address[s];
      allocator.free({base.chunk, base.offset + event.begin}, event.size);
    }
  }
  for (const DynamicAllocator& allocator : allocators) {
    placement.chunk_sizes.push_back(allocator.chunk_sizes());
  }
  return placement;
}

}  // namespace galloc
