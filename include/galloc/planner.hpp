// The planning pipeline in one call: graph -> lifetimes -> placement -> plan.
#pragma once

#include "galloc/buffer.hpp"
#include "galloc/graph.hpp"
#include "galloc/lifetimes.hpp"
#include "galloc/placement.hpp"
#include "galloc/plan.hpp"
#include "galloc/status.hpp"

namespace galloc {

struct PlanningResult {
  GraphProblem lifetimes;  // the lifetimes the placement is valid for
  Placement placement;
  Plan plan;
};

// `ggml` plans with upstream's lifetimes, to match it exactly. Every other strategy plans with
// deferred written leafs (LifetimeOptions); `best` also keeps, per buffer, the ggml placement
// when that is as small. Either way the result validates against result.lifetimes.
[[nodiscard]] Result<PlanningResult> plan_graph(const Graph& graph, Span<const BufferType* const> buffer_types,
                                                const BufferAssignment& assignment = {},
                                                const PlacementOptions& options = {});

}  // namespace galloc
