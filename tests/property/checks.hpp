// The checks every property and regression test runs on a graph, for every strategy.
#pragma once

#include <string>

#include "galloc/galloc.hpp"
#include "galloc/validator.hpp"

namespace galloc::property {

// The options the tests plan with: the exact search is exercised for a few milliseconds.
[[nodiscard]] PlacementOptions options_for(Strategy strategy);

// Plans with every strategy of all_strategies() and checks each plan: plan_graph succeeds,
// validate_placement finds nothing, every buffer is at least its lower bound, best is no larger
// than ggml, and (with `execute`) the interpreter finds no difference to a run without reuse.
// Returns the first failure, prefixed with the strategy, or "".
[[nodiscard]] std::string check_every_strategy(const Graph& graph, Span<const BufferType* const> types,
                                               const BufferAssignment& assignment, std::uint64_t seed, bool execute);

// ggml's contract for graphs it builds itself: no computed node is flagged input, and no node
// reads a NONE-op view (those only carry dependencies for ggml-backend).
[[nodiscard]] bool within_ggml_contract(const Graph& graph);

}  // namespace galloc::property
