// Properties of graph allocators sharing one arena (galloc/shared_arena.hpp), over groups of
// generated graphs run one after another in any order:
//   - every alloc succeeds and puts every tensor inside the arena's chunk, at one base per chunk
//     plus its planned offset;
//   - executing the graph in that real memory gives, node by node and for every output, the
//     bytes of executing it with no reuse (property/interpreter.hpp), also when the graph reads
//     the previous member's output where it lies in the arena;
//   - members allocate their graphs again and switch to another graph, reserving it between
//     runs (as llama.cpp reserves a larger batch), also a reader between its writer's alloc and
//     its own: what is read still holds the bytes its writer left.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
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

// The previous member's largest planned tensor that is at least as large as `read`, as it lies
// now: where `read` points (null when there is none).
void point_at_largest(const BuiltCase& previous, const GraphAllocator& allocator, Tensor& read) {
  read.data = nullptr;
  const Plan& plan = *allocator.plan();
  for (std::size_t t = 0; t < previous.graph.tensors.size(); ++t) {
    const Tensor& tensor = previous.graph.tensors[t];
    if (plan.tensors[t].planned() && tensor_nbytes(tensor) >= tensor_nbytes(read) && tensor.data != nullptr) {
      read.data = tensor.data;
    }
  }
}

RC_GTEST_PROP(SharedArenaProperties, ReservesBetweenRunsKeepWhatIsRead, ()) {
  const int member_count = *rc::gen::inRange(2, 5).as("members");
  // Per step: the member that runs and the graph it runs (of its two); a member switching
  // graphs reserves the other one directly, between the previous member's run and its own.
  const auto steps =
      *rc::gen::container<std::vector<std::pair<int, int>>>(
           *rc::gen::inRange(2, 12), rc::gen::pair(rc::gen::inRange(0, member_count), rc::gen::inRange(0, 2)))
           .as("steps (member, graph)");
  const std::uint64_t seed = *rc::gen::arbitrary<std::uint64_t>().as("fill seed");

  CpuBufferType cpu(64);
  auto arena = std::make_shared<SharedArena>(cpu, "property");
  std::vector<std::array<BuiltCase, 2>> cases;
  std::vector<std::array<TensorId, 2>> carried;
  std::vector<GraphAllocator> members;
  std::vector<int> current;  // the graph each member reserved last
  for (int m = 0; m < member_count; ++m) {
    cases.push_back({build_case(*gen_graph_desc()), build_case(*gen_graph_desc())});
    carried.push_back({add_carried_reader(cases.back()[0]), add_carried_reader(cases.back()[1])});
    // every buffer id of either graph on the one buffer type: one allocator, one membership
    const std::size_t ids = std::max(cases.back()[0].per_id.size(), cases.back()[1].per_id.size());
    members.emplace_back(std::vector<const BufferType*>(ids, &cpu));
    RC_ASSERT(members.back().join(0, arena, "member " + std::to_string(m)).is_ok());
    for (const BuiltCase& c : cases.back()) {
      const Status planned = members.back().measure(c.graph, c.assignment()).status();
      if (!planned) RC_DISCARD("the case does not plan: " + planned.message());
    }
    RC_ASSERT(members.back().reserve(cases.back()[0].graph, cases.back()[0].assignment()).is_ok());
    current.push_back(0);
  }

  int previous = -1;
  bool reserved_between = false;  // a reader reserved between its writer's alloc and its own
  for (const auto& [m, graph] : steps) {
    const auto member_index = static_cast<std::size_t>(m);
    BuiltCase& c = cases[member_index][static_cast<std::size_t>(graph)];
    // The previous member's output that this one reads, and its bytes as the writer left them.
    Tensor& read = c.graph[carried[member_index][static_cast<std::size_t>(graph)]];
    read.data = nullptr;
    if (previous >= 0 && previous != m) {
      const auto p = static_cast<std::size_t>(previous);
      point_at_largest(cases[p][static_cast<std::size_t>(current[p])], members[p], read);
    }
    std::vector<std::byte> written;
    if (read.data != nullptr) {
      written.resize(tensor_nbytes(read));
      std::memcpy(written.data(), read.data, written.size());
    }
    GraphAllocator& member = members[member_index];
    if (graph != current[member_index]) {
      current[member_index] = graph;
      const Status reserved = member.reserve(c.graph, c.assignment());
      RC_ASSERT_FALSE(!reserved.is_ok());
      reserved_between = reserved_between || read.data != nullptr;
    }

    const Status allocated = member.alloc(c.graph);
    RC_ASSERT_FALSE(!allocated.is_ok());
    if (read.data != nullptr) {
      RC_ASSERT(std::memcmp(written.data(), read.data, written.size()) == 0);
    }
    const std::vector<Buffer*> chunks = member.chunks(0);
    ChunkBases bases(1);
    const Plan& plan = *member.plan();
    bases[0].assign(chunks.size(), nullptr);
    for (std::size_t t = 0; t < c.graph.tensors.size(); ++t) {
      const TensorPlacement& slot = plan.tensors[t];
      const Tensor& tensor = c.graph.tensors[t];
      if (!slot.planned() || tensor.has_memory || tensor.is_view() || tensor.data == nullptr) continue;
      bases[0][static_cast<std::size_t>(slot.chunk)] = static_cast<std::byte*>(tensor.data) - slot.offset;
    }
    const ExecutionReport report = execute_in_place(c.graph, plan, bases, seed);
    if (!report.ok) RC_FAIL("member " + std::to_string(m) + ": " + report.failure);
    previous = m;
  }
  RC_TAG(reserved_between ? "a reader reserved between its writer's alloc and its own" : "no reserve between");
}

}  // namespace
}  // namespace galloc::property
