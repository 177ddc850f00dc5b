// Properties of graph allocators sharing one arena (galloc/shared_arena.hpp), over groups of
// generated graphs run one after another in any order:
//   - every alloc succeeds and puts every tensor inside the arena's chunk, at one base per chunk
//     plus its planned offset;
//   - executing the graph in that real memory gives, node by node and for every output, the
//     bytes of executing it with no reuse (property/interpreter.hpp), also when the graph reads
//     the previous member's output where it lies in the arena.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "galloc/galloc.hpp"
#include "property/generators.hpp"
#include "property/interpreter.hpp"

namespace galloc::property {
namespace {

constexpr std::int64_t kCarriedFloats = 16;

// Appends a weight `carried` (memory that exists: set to another graph's output before each
// alloc) and a node reading it, flagged output. Returns the weight's id.
TensorId add_carried_reader(BuiltCase& c) {
  Graph& g = c.graph;
  Tensor carried;
  carried.name = "carried";
  carried.ne = {kCarriedFloats, 1, 1, 1};
  carried.nb = contiguous_strides(carried.type, carried.ne);
  carried.has_memory = true;
  const auto id = static_cast<TensorId>(g.tensors.size());
  g.tensors.push_back(carried);
  g.leafs.push_back(id);
  Tensor reader = carried;
  reader.name = "carried_reader";
  reader.has_memory = false;
  reader.op = Op::Add;
  reader.src[0] = id;
  reader.src[1] = id;
  reader.flags = kFlagOutput;
  g.tensors.push_back(reader);
  g.nodes.push_back(id + 1);
  if (!c.node_buffer_ids.empty()) c.node_buffer_ids.push_back(0);
  if (!c.leaf_buffer_ids.empty()) c.leaf_buffer_ids.push_back(0);
  return id;
}

RC_GTEST_PROP(SharedArenaProperties, MembersRunInAnyOrderLikeUnshared, ()) {
  const int member_count = *rc::gen::inRange(2, 5).as("members");
  const Bytes max_size = *rc::gen::element(Bytes{kUnlimited}, Bytes{512}, Bytes{4096}).as("max size");
  const auto cycle =
      *rc::gen::container<std::vector<int>>(*rc::gen::inRange(1, 9), rc::gen::inRange(0, member_count)).as("cycle");
  // Repeated, as whisper.cpp runs its graphs over and over: an arena that comes back to a state
  // it saw before may repeat a member's place (SharedArena::place).
  const int cycles = *rc::gen::inRange(1, 4).as("cycles");
  std::vector<int> order;
  for (int c = 0; c < cycles; ++c) order.insert(order.end(), cycle.begin(), cycle.end());
  const std::uint64_t seed = *rc::gen::arbitrary<std::uint64_t>().as("fill seed");

  CpuBufferType cpu(64, max_size);
  auto arena = std::make_shared<SharedArena>(cpu, "property");
  std::vector<BuiltCase> cases;
  std::vector<TensorId> carried;
  std::vector<GraphAllocator> members;
  for (int m = 0; m < member_count; ++m) {
    cases.push_back(build_case(*gen_graph_desc()));
    carried.push_back(add_carried_reader(cases.back()));
    members.emplace_back(std::vector<const BufferType*>(cases.back().per_id.size(), &cpu));
    RC_ASSERT(members.back().join(0, arena, "member " + std::to_string(m)).is_ok());
    const Status reserved = members.back().reserve(cases.back().graph, cases.back().assignment());
    if (!reserved) RC_DISCARD("the case does not plan with this max size: " + reserved.message());
  }

  int previous = -1;
  for (int m : order) {
    BuiltCase& c = cases[static_cast<std::size_t>(m)];
    GraphAllocator& member = members[static_cast<std::size_t>(m)];
    // The previous member's largest planned tensor, read where it lies (a different member's
    // only: a member's own earlier tensors are not kept, as in a buffer of its own).
    Tensor& read = c.graph[carried[static_cast<std::size_t>(m)]];
    read.data = nullptr;
    if (previous >= 0 && previous != m) {
      const BuiltCase& p = cases[static_cast<std::size_t>(previous)];
      const Plan& plan = *members[static_cast<std::size_t>(previous)].plan();
      for (std::size_t t = 0; t < p.graph.tensors.size(); ++t) {
        const Tensor& tensor = p.graph.tensors[t];
        if (plan.tensors[t].planned() && tensor_nbytes(tensor) >= tensor_nbytes(read) && tensor.data != nullptr) {
          read.data = tensor.data;
        }
      }
    }
    void* const read_at = read.data;
    const Status allocated = member.alloc(c.graph);
    RC_ASSERT_FALSE(!allocated.is_ok());  // the message is in the counterexample when it fails
    RC_ASSERT(member.check_allocation().is_ok());
    RC_TAG(read_at == nullptr ? "reads nothing" : read.data == read_at ? "reads in place" : "reads after a move");

    // One base per chunk, every tensor inside its chunk.
    const Plan& plan = *member.plan();
    const std::vector<Buffer*> chunks = member.chunks(0);
    ChunkBases bases(1);
    for (Buffer* chunk : chunks) bases[0].push_back(chunk->base());
    std::vector<bool> seen(chunks.size(), false);
    for (std::size_t t = 0; t < c.graph.tensors.size(); ++t) {
      const TensorPlacement& slot = plan.tensors[t];
      const Tensor& tensor = c.graph.tensors[t];
      if (!slot.planned() || tensor.has_memory || tensor.is_view() || tensor.data == nullptr) continue;
      const auto chunk = static_cast<std::size_t>(slot.chunk);
      RC_ASSERT(chunk < chunks.size());
      std::byte* base = static_cast<std::byte*>(tensor.data) - slot.offset;
      if (seen[chunk]) RC_ASSERT(base == bases[0][chunk]);
      seen[chunk] = true;
      bases[0][chunk] = base;
      RC_ASSERT(static_cast<std::byte*>(tensor.data) >= chunks[chunk]->base());
      RC_ASSERT(static_cast<std::byte*>(tensor.data) + slot.size <= chunks[chunk]->base() + chunks[chunk]->size());
    }
    const ExecutionReport report = execute_in_place(c.graph, plan, bases, seed);
    if (!report.ok) RC_FAIL("member " + std::to_string(m) + ": " + report.failure);
    previous = m;
  }
}

}  // namespace
}  // namespace galloc::property
