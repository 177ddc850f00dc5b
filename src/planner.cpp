#include "galloc/planner.hpp"

#include "placement_internal.hpp"

namespace galloc {

Result<PlanningResult> plan_graph(const Graph& graph, Span<const BufferType* const> buffer_types,
                                  const BufferAssignment& assignment, const PlacementOptions& options) {
  const std::string name(strategy_name(options.strategy));
  if (options.strategy == Strategy::kGgml) {
    auto upstream = analyze_lifetimes(graph, buffer_types, assignment);
    if (!upstream) return upstream.status();
    Placement placement = place_ggml(*upstream);
    Plan plan = make_plan(graph, buffer_types, *upstream, placement, name);
    return PlanningResult{std::move(upstream).value(), std::move(placement), std::move(plan)};
  }

  LifetimeOptions defer;
  defer.defer_written_leafs = true;
  auto deferred = analyze_lifetimes(graph, buffer_types, assignment, defer);
  if (!deferred) return deferred.status();
  auto placement = place(*deferred, options);
  if (!placement) return placement.status();
  // With no deferred leaf both lifetimes are the same, and best has tried ggml already; at the
  // lower bound upstream's placement cannot be smaller. Only otherwise is upstream's placement
  // worth computing, on upstream's lifetimes derived from these (no second walk).
  if (options.strategy == Strategy::kBest && !deferred->deferred_leafs.empty() &&
      !detail::cannot_be_beaten(*deferred, *placement, live_lower_bound(*deferred))) {
    // Deferring only shortens intervals of the same storage objects, so upstream's placement
    // is valid for the deferred lifetimes too; it wins ties.
    placement = detail::smallest_per_allocator(
        *deferred, {place_ggml(upstream_lifetimes(*deferred)), std::move(placement).value()});
  }
  Plan plan = make_plan(graph, buffer_types, *deferred, *placement, name);
  return PlanningResult{std::move(deferred).value(), std::move(placement).value(), std::move(plan)};
}

}  // namespace galloc
