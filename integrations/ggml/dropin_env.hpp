// The drop-in's environment: GALLOC_STRATEGY (the placement strategy, by name) and GALLOC_DUMP
// (a folder for graph files), read and written the same way by every ggml API generation.
#pragma once

#include <cstdlib>
#include <string>

#include "galloc/placement.hpp"
#include "galloc/status.hpp"

// GALLOC_DROPIN_JSON: galloc's graph file code is compiled in, for GALLOC_DUMP (build.sh
// defines it when galloc's sources have it; amalgamate.sh --with-dump in the file it writes).
#ifdef GALLOC_DROPIN_JSON
#include <atomic>
#include <cstdio>
#include <filesystem>
#include "galloc/graph_json.hpp"
#endif

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

#ifdef GALLOC_DROPIN_JSON
// Writes `file` as DIR/ggml-<sequence>-<tag>.json. The sequence counts the process's dumps, so
// files sort in the order the graphs were planned, and an allocator made at a freed one's
// address overwrites nothing.
galloc::Status write_dump(const std::string& dir, const std::string& tag, const galloc::GraphFile& file) {
  static std::atomic<int> sequence{0};
  std::error_code ignored;  // write_graph_file reports a folder that is not there
  std::filesystem::create_directories(dir, ignored);
  char number[16];
  std::snprintf(number, sizeof number, "%05d", sequence++);
  const std::filesystem::path path = std::filesystem::path(dir) / ("ggml-" + std::string(number) + "-" + tag + ".json");
  return galloc::write_graph_file(path.string(), file);
}
#endif

}  // namespace
