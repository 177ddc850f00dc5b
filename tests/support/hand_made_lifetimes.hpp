// Graph problems written by hand for placement tests: storage objects as time intervals, without a
// graph.
#pragma once

#include <vector>

#include "galloc/lifetimes.hpp"

namespace galloc::testing {

struct TimedBuffer {
  Step lower;  // half-open [lower, upper) in time
  Step upper;
  Bytes size;
  AllocatorId allocator = 0;
};

// Events in time order, frees before allocations at equal times; one buffer id per
// allocator. Each event is one step, so a buffer's `live` is in event steps.
[[nodiscard]] GraphProblem make_lifetimes(const std::vector<TimedBuffer>& buffers,
                                          std::vector<AllocatorSpec> allocators = {{}});

}  // namespace galloc::testing
