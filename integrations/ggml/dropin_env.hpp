// The drop-in's environment: GALLOC_STRATEGY (the placement strategy, by name) and GALLOC_DUMP
// (a folder for graph files), read the same way by every ggml API generation.
#pragma once

#include <cstdlib>
#include <string>

#include "galloc/placement.hpp"
#include "galloc/status.hpp"

namespace {

// GALLOC_STRATEGY, or best when it is unset or empty; a name galloc does not know is an error
// (the caller logs it and uses best).
galloc::Result<galloc::Strategy> strategy_from_env() {
  const char* name = std::getenv("GALLOC_STRATEGY");
  if (name == nullptr || *name == '\0') return galloc::Strategy::kBest;
  auto strategy = galloc::strategy_from_name(name);
  if (!strategy) return galloc::invalid_argument("GALLOC_STRATEGY: " + strategy.status().message() + "; using best");
  return strategy;
}

std::string dump_dir_from_env() {
  const char* dir = std::getenv("GALLOC_DUMP");
  return dir != nullptr ? dir : "";
}

}  // namespace
