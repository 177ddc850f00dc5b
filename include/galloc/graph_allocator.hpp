// The graph allocator: ggml_gallocr's state machine on galloc's graph model.
//
//   galloc::CpuBufferType cpu;
//   galloc::GraphAllocator allocator({&cpu});
//   if (auto s = allocator.reserve(worst_case_graph); !s) { /* s.message() says why */ }
//   if (auto s = allocator.alloc(graph); !s) { ... }   // every tensor.data is set now
//   std::printf("compute buffer: %zu bytes\n", size_t(allocator.buffer_size(0)));
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "galloc/buffer.hpp"
#include "galloc/graph.hpp"
#include "galloc/lifetimes.hpp"
#include "galloc/placement.hpp"
#include "galloc/plan.hpp"
#include "galloc/status.hpp"

namespace galloc {

struct GraphAllocatorOptions {
  PlacementOptions placement;  // which strategy plans the graphs
};

class GraphAllocator {
 public:
  // One buffer id per entry; entries with the same BufferType share one allocator and one
  // buffer, as in ggml_gallocr_new_n. The buffer types must outlive the allocator.
  explicit GraphAllocator(std::vector<const BufferType*> buffer_types,
                          GraphAllocatorOptions options = {});
  ~GraphAllocator();
  GraphAllocator(GraphAllocator&&) noexcept;
  GraphAllocator& operator=(GraphAllocator&&) noexcept;
  GraphAllocator(const GraphAllocator&) = delete;
  GraphAllocator& operator=(const GraphAllocator&) = delete;

  // Plans `graph` and grows the buffers to fit it. On failure the previous plan and buffers
  // stay as they were.
  Status reserve(const Graph& graph, const BufferAssignment& assignment = {});
  // Plans `graph` and returns the bytes each buffer id would need (ids sharing a buffer type
  // each report the shared size, as ggml_gallocr_reserve_n_size does). Changes nothing.
  [[nodiscard]] Result<std::vector<Bytes>> measure(const Graph& graph,
                                                   const BufferAssignment& assignment = {}) const;
  // Places the graph's tensors at the reserved offsets, reserving first when the graph no
  // longer fits the reservation and there is a single buffer id.
  Status alloc(Graph& graph);
  // True when `graph` does not fit the current reservation (counts, sizes, or structure).
  [[nodiscard]] bool needs_reserve(const Graph& graph) const;

  // Bytes of the buffer for `id`; 0 for an id that shares an earlier id's buffer.
  [[nodiscard]] Result<Bytes> buffer_size(BufferId id) const;
  [[nodiscard]] int buffer_count() const { return static_cast<int>(types_.size()); }
  // The plan of the last successful reserve.
  [[nodiscard]] const std::optional<Plan>& plan() const { return plan_; }
  // The backend buffers of an id's chunks (shared ids see the same buffers).
  [[nodiscard]] std::vector<Buffer*> chunks(BufferId id) const;

 private:
  [[nodiscard]] Result<Plan> make_reservation_plan(const Graph& graph,
                                                   const BufferAssignment& assignment) const;

  std::vector<const BufferType*> types_;
  std::vector<AllocatorId> allocator_of_;
  GraphAllocatorOptions options_;
  // Per allocator: one backend buffer per chunk.
  std::vector<std::vector<std::unique_ptr<Buffer>>> buffers_;
  std::optional<Plan> plan_;
  std::vector<bool> reserved_once_;  // per allocator: ggml keeps a (maybe empty) buffer after the first reserve
  std::uint64_t structure_ = 0;      // fingerprint of the reserved graph's topology
  std::vector<TensorId> touched_;    // leafs, nodes and sources of the reserved graph, once each
};

// The topology of a graph (ops, sources, views, flags, list positions), without sizes: two
// graphs with the same fingerprint can share a plan if the new sizes are no larger.
[[nodiscard]] std::uint64_t graph_structure_fingerprint(const Graph& graph);

}  // namespace galloc
