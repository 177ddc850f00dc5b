// Fuzz target: the JSON graph loader. Whatever the bytes: read_graph_json returns a graph or
// kInvalidArgument with a message, never throws or crashes; a graph it accepts writes back to
// a file that reads again to the same file, and plans (ggml, greedy) into a valid placement
// (or, for a view of a tensor that nothing allocates, is refused by the planner).
#include <string_view>

#include "fuzz_support.hpp"
#include "galloc/graph_json.hpp"
#include "galloc/validator.hpp"

using namespace galloc;
using galloc::fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto file = read_graph_json(text);
  if (!file) {
    require(file.status().code() == ErrorCode::kInvalidArgument,
            "rejected with " + file.status().to_string() + " instead of invalid argument");
    require(!file.status().message().empty(), "rejected without a message");
    return 0;
  }
  const std::string once = write_graph_json(*file);
  auto again = read_graph_json(once);
  require(again.is_ok(), "write_graph_json's output does not read back: " + again.status().to_string() + "\n" + once);
  require(write_graph_json(*again) == once, "write(read(write(f))) != write(f)\n" + once);

  if (file->graph.tensors.size() > 4096) return 0;
  const NullBufferTypes types = make_null_buffer_types(*file);
  for (Strategy strategy : {Strategy::kGgml, Strategy::kGreedy}) {
    PlacementOptions options;
    options.strategy = strategy;
    auto planned = plan_graph(file->graph, types.per_id, file->assignment(), options);
    if (!planned && !fuzz::views_have_roots(file->graph)) {
      // A view of a tensor nothing allocates: the reader cannot tell, the planner refuses.
      require(planned.status().code() == ErrorCode::kInvalidArgument, planned.status().to_string());
      return 0;
    }
    require(planned.is_ok(),
            std::string(strategy_name(strategy)) + ": an accepted file does not plan: " + planned.status().to_string());
    const auto issues = validate_placement(planned->lifetimes, planned->placement);
    require(issues.empty(), std::string(strategy_name(strategy)) +
                                ": invalid placement: " + (issues.empty() ? "" : issues.front().message));
  }
  return 0;
}
