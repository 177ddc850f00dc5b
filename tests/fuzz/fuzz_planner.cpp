// Fuzz target: the planner on graphs decoded from bytes (fuzz_support.hpp). For every strategy
// (exact and best with a budget of a millisecond), plan_graph either rejects the graph with a
// Status that is not kInternal, or returns a placement that validate_placement accepts and a
// plan whose tensors lie inside their chunks. A graph that passes validate_graph, with valid
// buffer ids and power-of-two alignments, must plan, and (when the reference interpreter can
// judge it) execute in the planned memory exactly as without reuse. GraphAllocator then
// reserves and allocs it.
#include "fuzz_support.hpp"
#include "property/checks.hpp"
#include "property/interpreter.hpp"

using namespace galloc;
using galloc::fuzz::require;

namespace {

// Whether the reference interpreter (tests/property/interpreter.hpp) can judge this graph:
// within ggml's contract (property::within_ggml_contract), small enough to execute, and every
// tensor a node names has memory by then: weights, a leaf, a node already listed, or a tensor
// outside both lists that some node has named as a source (the planner allocates those there).
bool interpretable(const Graph& g) {
  if (!property::within_ggml_contract(g)) return false;
  Bytes total = 0;
  for (const Tensor& t : g.tensors) {
    if (!t.is_view()) total += tensor_nbytes(t);
    if (total > (Bytes{1} << 20)) return false;
  }
  // A source that is a view of planned memory must be a node: the liveness pass (as ggml's)
  // counts the views a root has among the nodes only, so a node may take over a root in place
  // while it reads an unlisted view of that root (C4 in docs/RELIABILITY.md).
  // And a source with an op must be listed: the pass allocates an unlisted source when a node
  // first reads it, with the in-place rule of a computed tensor, so it can take over its own
  // source's memory while the node that reads both still needs it (C5).
  std::vector<char> is_node(g.tensors.size(), 0);
  std::vector<char> listed(g.tensors.size(), 0);
  for (TensorId id : g.nodes) is_node[static_cast<std::size_t>(id)] = listed[static_cast<std::size_t>(id)] = 1;
  for (TensorId id : g.leafs) listed[static_cast<std::size_t>(id)] = 1;
  for (TensorId id : g.nodes) {
    for (TensorId src : g[id].src) {
      if (src == kNoTensor) continue;
      const Tensor& s = g[src];
      if (s.is_view() && !s.has_memory && !is_node[static_cast<std::size_t>(src)]) return false;
      if (!s.is_view() && !s.has_memory && s.op != Op::None && !listed[static_cast<std::size_t>(src)]) return false;
    }
  }
  std::vector<char> ready(g.tensors.size(), 0);
  for (std::size_t t = 0; t < g.tensors.size(); ++t) ready[t] = g.tensors[t].has_memory;
  for (TensorId id : g.leafs) ready[static_cast<std::size_t>(id)] = 1;
  auto root = [&](TensorId id) { return g[id].is_view() ? g[id].view_src : id; };
  for (TensorId id : g.leafs) {
    if (!ready[static_cast<std::size_t>(root(id))]) return false;  // a leaf viewing nothing allocated
  }
  for (TensorId id : g.nodes) {
    const Tensor& t = g[id];
    for (TensorId src : t.src) {
      if (src != kNoTensor && !g[src].is_view()) ready[static_cast<std::size_t>(src)] = 1;
    }
    for (TensorId src : t.src) {
      if (src != kNoTensor && !ready[static_cast<std::size_t>(root(src))]) return false;
    }
    if (t.is_view() && !ready[static_cast<std::size_t>(t.view_src)]) return false;
    ready[static_cast<std::size_t>(id)] = 1;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::ByteReader in(data, size);
  fuzz::DecodedCase c = fuzz::decode_case(in);
  const bool valid =
      validate_graph(c.graph).is_ok() && c.ids_in_range && c.alignments_valid && fuzz::views_have_roots(c.graph);
  const bool execute = valid && interpretable(c.graph);
  for (Strategy strategy : all_strategies()) {
    const std::string name(strategy_name(strategy));
    PlacementOptions options;
    options.strategy = strategy;
    options.exact.time_limit_seconds = 0.001;
    options.best_search_seconds = 0.0005;
    auto planned = plan_graph(c.graph, c.per_id, c.assignment(), options);
    if (!planned) {
      require(planned.status().code() != ErrorCode::kInternal,
              name + ": internal error: " + planned.status().to_string());
      require(!valid, name + ": a valid graph is rejected: " + planned.status().to_string());
      continue;
    }
    const auto issues = validate_placement(planned->lifetimes, planned->placement);
    require(issues.empty(), name + ": invalid placement: " + (issues.empty() ? "" : issues.front().message));
    const Plan& plan = planned->plan;
    require(plan.tensors.size() == c.graph.tensors.size(), name + ": plan has another tensor count");
    for (std::size_t t = 0; t < plan.tensors.size(); ++t) {
      const TensorPlacement& p = plan.tensors[t];
      if (!p.planned()) continue;
      require(static_cast<std::size_t>(p.buffer) < plan.buffers.size(), name + ": tensor in an unknown buffer");
      const auto& chunks = plan.buffers[static_cast<std::size_t>(p.buffer)].chunk_sizes;
      require(p.chunk >= 0 && static_cast<std::size_t>(p.chunk) < chunks.size(), name + ": tensor in an unknown chunk");
      require(p.offset <= chunks[static_cast<std::size_t>(p.chunk)] &&
                  p.size <= chunks[static_cast<std::size_t>(p.chunk)] - p.offset,
              name + ": tensor " + std::to_string(t) + " reaches past its chunk");
    }
    // Executed in the planned memory, it computes what it computes without reuse.
    if (execute) {
      const auto report = property::execute_and_compare(c.graph, c.per_id, plan, size);
      require(report.ok, name + ": executing the plan differs from no reuse: " + report.failure);
    }
  }
  // The allocator's state machine on the same graph (ggml, the cheapest).
  GraphAllocatorOptions options;
  options.placement.strategy = Strategy::kGgml;
  GraphAllocator allocator(c.per_id, options);
  const Status reserved = allocator.reserve(c.graph, c.assignment());
  require(reserved.is_ok() || reserved.code() != ErrorCode::kInternal, "reserve: " + reserved.to_string());
  if (reserved.is_ok()) {
    require(!allocator.needs_reserve(c.graph), "needs_reserve right after reserve");
    Graph copy = c.graph;
    const Status allocated = allocator.alloc(copy);
    require(allocated.is_ok(), "alloc after reserve: " + allocated.to_string());
  }
  return 0;
}
