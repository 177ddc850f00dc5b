// Test suites parameterised by strategy walk the registry (all_strategies()); gtest names each
// instance after the strategy, with the '-' that gtest does not allow in a name as '_'.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "galloc/placement.hpp"

namespace galloc::testing {

inline std::string strategy_param_name(const ::testing::TestParamInfo<Strategy>& info) {
  std::string name(strategy_name(info.param));
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

}  // namespace galloc::testing
