// The drop-in's environment, read: the definitions of dropin_env.hpp, which says what each
// variable means.
#include "dropin_env.hpp"

#include <cstdlib>
#include <string>

#include "galloc/placement.hpp"
#include "galloc/status.hpp"

#ifdef GALLOC_DROPIN_JSON
#include <atomic>
#include <cstdio>
#include <filesystem>
#include "galloc/graph_json.hpp"
#endif

namespace {

galloc::Result<galloc::Strategy> strategy_from_env() {
  const char* name = std::getenv("GALLOC_STRATEGY");
  if (name == nullptr || *name == '\0') return galloc::Strategy::kBest;
  auto strategy = galloc::strategy_from_name(name);
  if (!strategy) return galloc::invalid_argument("GALLOC_STRATEGY: " + strategy.status().message() + "; using best");
  return strategy;
}

galloc::Result<ShareMode> share_mode_from_name(const std::string& name, const char* source) {
  if (name == "0") return ShareMode::kNone;
  if (name == "groups") return ShareMode::kGroups;
  if (name == "1") return ShareMode::kAll;
  return galloc::invalid_argument(std::string(source) + " is '" + name +
                                  "'; use 0 (no sharing), groups (share groups only) or 1 (every allocator); "
                                  "sharing share groups only");
}

galloc::Result<ShareMode> share_mode_from_env() {
  const char* value = std::getenv("GALLOC_SHARE");
  if (value == nullptr || *value == '\0') return share_mode_from_name(GALLOC_SHARE_DEFAULT, "GALLOC_SHARE_DEFAULT");
  return share_mode_from_name(value, "GALLOC_SHARE");
}

bool share_check_from_env() {
  const char* value = std::getenv("GALLOC_SHARE_CHECK");
  return value != nullptr && std::string(value) == "1";
}

std::string dump_dir_from_env() {
  const char* dir = std::getenv("GALLOC_DUMP");
  return dir != nullptr ? dir : "";
}

#ifdef GALLOC_DROPIN_JSON
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
