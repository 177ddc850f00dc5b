// The graphs captured from real programs (bench/graphs/, GALLOC_DUMP of the drop-in, gzip'd):
// each loads, every cheap strategy's plan validates against its lifetimes, and best reaches
// the live lower bound on them.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "galloc/graph_file_gz.hpp"
#include "galloc/graph_json.hpp"
#include "galloc/placement.hpp"
#include "galloc/planner.hpp"
#include "galloc/validator.hpp"

namespace galloc {
namespace {

std::vector<std::filesystem::path> captured_graphs() {
  // tests/unit/captured_graphs_test.cpp -> the repository's bench/graphs/
  const auto dir = std::filesystem::path(__FILE__).parent_path().parent_path().parent_path() / "bench" / "graphs";
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().string().ends_with(".json.gz")) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(CapturedGraphs, EveryPlanValidatesAndBestReachesTheBound) {
  const auto files = captured_graphs();
  // capture-whisper.sh: 8 from whisper.rn 0.4.0-rc.8, 32 from rc.10; capture-llama.sh: 72
  ASSERT_EQ(files.size(), 112u) << "bench/graphs/ holds 40 whisper.cpp graphs and 72 llama.cpp graphs";
  for (const auto& path : files) {
    SCOPED_TRACE(path.filename().string());
    auto file = read_graph_file_any(path.string());
    ASSERT_TRUE(file.is_ok()) << file.status().to_string();
    const auto types = make_null_buffer_types(*file);
    for (const NamedStrategy& entry : strategy_registry()) {
      if (!entry.heuristic && entry.strategy != Strategy::kBest) continue;  // the exact search: not here
      SCOPED_TRACE(std::string(entry.name));
      auto result = plan_graph(file->graph, types.per_id, file->assignment(), {.strategy = entry.strategy});
      ASSERT_TRUE(result.is_ok()) << result.status().to_string();
      const auto issues = validate_placement(result->lifetimes, result->placement);
      EXPECT_TRUE(issues.empty()) << issues.front().message;
      if (entry.strategy == Strategy::kBest) {
        EXPECT_EQ(result->plan.total_size(), result->plan.total_lower_bound());
      }
    }
  }
}

}  // namespace
}  // namespace galloc
