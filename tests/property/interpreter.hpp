// A reference interpreter: really executes a graph in the memory a plan lays out, and again
// with no reuse at all (every tensor its own memory), and compares the two byte for byte.
//
// Semantics (over bytes; a tensor's value is the contiguous window of tensor_nbytes bytes at
// its address, a view's address being its root's plus view_offs):
//   - weights (has_memory) and every leaf are filled with seeded bytes before the first node
//     (the application sets them after alloc), except a leaf whose first use is a CPY view that
//     overwrites all of it: it holds nothing before that node;
//     a tensor that is neither node nor leaf is filled just before the first node that names it
//     (ggml allocates it there);
//   - ops that can run in place (op_can_inplace): out[i] = f(op, node, i, src_k[i mod n_k]),
//     computed for i = 0, 1, ... reading the sources from memory as it goes, so a destination
//     that shares a source's address is safe element by element, as in ggml's in-place kernels;
//   - other ops read every source whole first: out[i] = f(op, node, hash of all sources, i);
//   - VIEW, RESHAPE, PERMUTE, TRANSPOSE compute nothing; NONE-op views carry dependencies
//     only and are never read (a node reading one gets it skipped as a source);
//   - views with any other op write into their window: CPY overwrites it from src0 only,
//     SET copies src1 into a part of it and keeps the rest, ACC adds src1 into a part of it,
//     SET_ROWS overwrites the rows that the index tensor (src1) selects and keeps the others;
//     any other op computes the whole window from all sources.
// Each byte also carries a "defined" bit (memory starts undefined; results of undefined bytes
// are undefined); only bytes defined in the no-reuse run are compared.
//
// Checks, in execution order: every source of every node holds the same bytes in both runs
// when the node reads it, every node's value is the same right after it is computed, and every
// output-flagged tensor is the same at the end. The first difference is reported with the
// tensor, the byte and where the plan put it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "galloc/buffer.hpp"
#include "galloc/graph.hpp"
#include "galloc/plan.hpp"

namespace galloc::property {

struct ExecutionReport {
  bool ok = true;
  std::string failure;  // the first difference, or why the plan could not be executed
  std::size_t nodes_executed = 0;
  std::size_t bytes_compared = 0;
};

[[nodiscard]] ExecutionReport execute_and_compare(const Graph& graph, Span<const BufferType* const> buffer_types,
                                                  const Plan& plan, std::uint64_t seed);

// Per allocator, per chunk: where the chunk's memory begins.
using ChunkBases = std::vector<std::vector<std::byte*>>;
// The same run in real memory, where GraphAllocator::alloc put the chunks: planned tensors at
// chunk_bases[allocator][chunk] + offset, weights with data set at their data (the memory must
// hold each chunk's planned size). Catches what the plan alone cannot: a placement that
// overlaps memory the graph reads, such as another graph's output in a shared arena.
[[nodiscard]] ExecutionReport execute_in_place(const Graph& graph, const Plan& plan, const ChunkBases& chunk_bases,
                                               std::uint64_t seed);

}  // namespace galloc::property
