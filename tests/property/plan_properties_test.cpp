// Properties of planning, for every strategy, over generated graphs (property/generators.hpp)
// and over the seeded graphs of tests/support/random_graph:
//   - plan_graph succeeds and validate_placement finds nothing wrong;
//   - the plan is no smaller than the lower bound, and best is no larger than ggml;
//   - executing the graph in the planned memory gives, node by node and for every output,
//     the bytes of executing it with no reuse (property/interpreter.hpp);
//   - GraphAllocator reserves the plan, does not re-reserve the same graph and places every
//     tensor at its chunk's base plus its planned offset.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <string>

#include "galloc/galloc.hpp"
#include "galloc/validator.hpp"
#include "property/checks.hpp"
#include "property/generators.hpp"
#include "property/interpreter.hpp"
#include "support/lifetimes_difference.hpp"
#include "support/random_graph.hpp"

namespace galloc::property {
namespace {

std::size_t max_chunks(const Plan& plan) {
  std::size_t n = 0;
  for (const BufferPlan& b : plan.buffers) n = std::max(n, b.chunk_sizes.size());
  return n;
}

RC_GTEST_PROP(PlanProperties, EveryStrategyValidatesAndExecutesLikeNoReuse, ()) {
  const GraphDesc desc = *gen_graph_desc();
  const std::uint64_t seed = *rc::gen::arbitrary<std::uint64_t>().as("fill seed");
  BuiltCase c = build_case(desc);
  RC_CLASSIFY(c.per_id.size() > 1, "several buffer ids");
  RC_CLASSIFY(c.graph.nodes.size() >= 20, ">= 20 nodes");
  if (auto planned = plan_graph(c.graph, c.per_id, c.assignment(), options_for(Strategy::kGreedy))) {
    RC_CLASSIFY(max_chunks(planned->plan) > 1, "several chunks");
    RC_CLASSIFY(!planned->lifetimes.deferred_leafs.empty(), "deferred written leafs");
    RC_CLASSIFY(planned->lifetimes.storages.size() + 2 < c.graph.tensors.size(), "reuse in place or views");
  }
  const std::string failure = check_every_strategy(c.graph, c.per_id, c.assignment(), seed, true);
  if (!failure.empty()) {
    RC_FAIL(failure + "\n" + case_to_cpp(c));
  }
}

// upstream_lifetimes of the deferred analysis is the analysis without deferring.
RC_GTEST_PROP(PlanProperties, UpstreamLifetimesEqualAWalkWithoutDeferring, ()) {
  const GraphDesc desc = *gen_graph_desc();
  BuiltCase c = build_case(desc);
  LifetimeOptions defer;
  defer.defer_written_leafs = true;
  auto deferred = analyze_lifetimes(c.graph, c.per_id, c.assignment(), defer);
  auto upstream = analyze_lifetimes(c.graph, c.per_id, c.assignment());
  RC_ASSERT(deferred.is_ok() == upstream.is_ok());
  if (!deferred) return;
  RC_CLASSIFY(!deferred->deferred_leafs.empty(), "deferred written leafs");
  const std::string difference = galloc::testing::lifetimes_difference(upstream_lifetimes(*deferred), *upstream);
  if (!difference.empty()) RC_FAIL(difference + "\n" + case_to_cpp(c));
}

// Computed nodes flagged input (outside ggml's contract): planning must still validate.
RC_GTEST_PROP(PlanProperties, InputNodesStillValidate, ()) {
  const GraphDesc desc = *gen_graph_desc();
  BuiltCase c = build_case(desc, {.allow_input_nodes = true});
  const std::string failure = check_every_strategy(c.graph, c.per_id, c.assignment(), 0, within_ggml_contract(c.graph));
  if (!failure.empty()) RC_FAIL(failure + "\n" + case_to_cpp(c));
}

RC_GTEST_PROP(PlanProperties, GraphAllocatorPlacesTensorsAtThePlannedOffsets, ()) {
  const GraphDesc desc = *gen_graph_desc();
  BuiltCase c = build_case(desc);
  for (Strategy strategy : {Strategy::kGgml, Strategy::kBest}) {
    GraphAllocatorOptions options;
    options.placement = options_for(strategy);
    GraphAllocator allocator(c.per_id, options);
    const Status reserved = allocator.reserve(c.graph, c.assignment());
    RC_ASSERT(reserved.is_ok());
    RC_ASSERT(!allocator.needs_reserve(c.graph));
    const Plan plan = *allocator.plan();
    for (BufferId b = 0; b < allocator.buffer_count(); ++b) {
      const BufferPlan& buffer = plan.buffers[static_cast<std::size_t>(b)];
      RC_ASSERT(*allocator.buffer_size(b) == (buffer.shared ? 0 : buffer.size()));
    }
    Graph graph = c.graph;
    RC_ASSERT(allocator.alloc(graph).is_ok());
    for (std::size_t t = 0; t < graph.tensors.size(); ++t) {
      const Tensor& tensor = graph.tensors[t];
      const TensorPlacement& slot = plan.tensors[t];
      if (tensor.has_memory || tensor.is_view() || !slot.planned()) continue;
      const auto chunks = allocator.chunks(slot.buffer);
      RC_ASSERT(static_cast<std::size_t>(slot.chunk) < chunks.size());
      const bool at_offset =
          tensor.data == static_cast<void*>(chunks[static_cast<std::size_t>(slot.chunk)]->base() + slot.offset);
      RC_ASSERT(at_offset);
    }
    for (const Tensor& tensor : graph.tensors) {
      if (!tensor.is_view() || tensor.has_memory) continue;
      const Tensor& root = graph[tensor.view_src];
      if (root.data != nullptr) {
        const bool follows_root =
            tensor.data == static_cast<void*>(static_cast<std::byte*>(root.data) + tensor.view_offs);
        RC_ASSERT(follows_root);
      }
    }
  }
}

// The seeded graphs of tests/support/random_graph (used by the differential tests): a seed
// does not shrink, but these graphs are made differently from gen_graph_desc's.
RC_GTEST_PROP(PlanProperties, SeededRandomGraphsValidateAndExecute, ()) {
  const std::uint64_t seed = *rc::gen::arbitrary<std::uint64_t>().as("random_case seed");
  const testing::RandomCase rc_case = testing::random_case(seed);
  const auto types = rc_case.make_buffer_types();
  const BufferAssignment assignment{rc_case.node_buffer_ids, rc_case.leaf_buffer_ids};
  const bool execute = within_ggml_contract(rc_case.graph);
  RC_CLASSIFY(!execute, "outside ggml's contract: validated only");
  const std::string failure = check_every_strategy(rc_case.graph, types.per_id, assignment, seed, execute);
  if (!failure.empty()) RC_FAIL("random_case(" + std::to_string(seed) + "): " + failure);
}

}  // namespace
}  // namespace galloc::property
