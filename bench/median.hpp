// The median the benchmarks report: of an odd count the middle value, of an even one the upper
// middle; 0 for none.
#pragma once

#include <algorithm>
#include <vector>

namespace galloc::bench {

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace galloc::bench
