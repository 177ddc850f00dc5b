// The first difference between two GraphProblems, for tests that expect two analyses to agree.
#pragma once

#include <string>

#include "galloc/lifetimes.hpp"

namespace galloc::testing {

// Empty when every field agrees; otherwise names the first field and index that differs.
[[nodiscard]] std::string lifetimes_difference(const GraphProblem& a, const GraphProblem& b);

}  // namespace galloc::testing
