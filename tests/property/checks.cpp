#include "property/checks.hpp"

#include "property/interpreter.hpp"

namespace galloc::property {

PlacementOptions options_for(Strategy strategy) {
  PlacementOptions options;
  options.strategy = strategy;
  options.exact.time_limit_seconds = 0.002;  // per allocator: the search is exercised, not finished
  options.best_search_seconds = 0.001;
  return options;
}

std::string check_every_strategy(const Graph& graph, Span<const BufferType* const> types,
                                 const BufferAssignment& assignment, std::uint64_t seed, bool execute) {
  std::vector<Bytes> ggml_sizes;
  for (Strategy strategy : all_strategies()) {
    const std::string name(strategy_name(strategy));
    auto result = plan_graph(graph, types, assignment, options_for(strategy));
    if (!result) return name + ": plan_graph failed: " + result.status().to_string();
    const auto issues = validate_placement(result->lifetimes, result->placement);
    if (!issues.empty()) return name + ": invalid placement: " + issues.front().message;
    const Plan& plan = result->plan;
    for (std::size_t b = 0; b < plan.buffers.size(); ++b) {
      const BufferPlan& buffer = plan.buffers[b];
      if (buffer.size() < buffer.lower_bound) {
        return name + ": buffer " + std::to_string(b) + " is " + std::to_string(buffer.size()) +
               " bytes, below its lower bound " + std::to_string(buffer.lower_bound);
      }
      if (strategy == Strategy::kGgml) ggml_sizes.push_back(buffer.size());
      if (strategy == Strategy::kBest && b < ggml_sizes.size() && buffer.size() > ggml_sizes[b]) {
        return "best: buffer " + std::to_string(b) + " is " + std::to_string(buffer.size()) +
               " bytes, more than ggml's " + std::to_string(ggml_sizes[b]);
      }
    }
    if (execute) {
      const ExecutionReport report = execute_and_compare(graph, types, plan, seed);
      if (!report.ok) return name + ": " + report.failure;
    }
  }
  return "";
}

bool within_ggml_contract(const Graph& graph) {
  for (TensorId id : graph.nodes) {
    const Tensor& t = graph[id];
    if (t.is_input() && !t.is_view() && t.op != Op::None) return false;
    for (TensorId src : t.src) {
      if (src != kNoTensor && graph[src].is_view() && graph[src].op == Op::None) return false;
    }
  }
  return true;
}

}  // namespace galloc::property
