// build/bin/galloc: plan a graph file, compare strategies, draw the memory timeline, convert
// between formats, and write graphs of the zoo. Thin: every decision is in the library.
//
//   galloc zoo list
//   galloc strategies
//   galloc zoo llama-7b-pp512 -o llama.json
//   galloc plan llama.json --strategy best --json
//   galloc plan ../shared/benchmarks/minimalloc-challenging/A.1048576.csv --strategy exact --capacity 1048576
//   galloc plan A.1048576.csv --strategy best --capacity 1048576 --time-limit 60 --output A.solution.csv
//   galloc compare zoo:whisper-base-encoder
//   galloc render llama.json --html out/report.html
//   galloc convert graph.json graph.csv
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "galloc/galloc.hpp"
#include "galloc/graph_file_gz.hpp"
#include "galloc/graph_json.hpp"
#include "galloc/minimalloc_csv.hpp"
#include "galloc/zoo.hpp"
#if __has_include("galloc/timeline.hpp")
#include "galloc/timeline.hpp"
#include "galloc/validator.hpp"
#define GALLOC_HAVE_TIMELINE 1
#endif

namespace {

using galloc::Bytes;

// What the planner works on: a graph with its buffer types, or a bare MiniMalloc problem.
struct Input {
  std::string source;
  std::optional<galloc::GraphFile> graph;
  std::optional<galloc::CsvProblem> csv;
  std::optional<Bytes> capacity_from_name;  // "A.1048576.csv"
};

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A CPU-like buffer type for zoo graphs (ggml's CPU buffers align to 32 bytes).
galloc::GraphFile zoo_file(galloc::Graph graph) {
  galloc::GraphFile file;
  file.graph = std::move(graph);
  file.buffer_types = {{"CPU", 32, galloc::kUnlimited, 0}};
  file.buffer_type_of_id = {0};
  return file;
}

galloc::Result<Input> load(const std::string& path, double zoo_scale) {
  Input input;
  input.source = path;
  if (path.rfind("zoo:", 0) == 0) {
    auto graph = galloc::zoo::build(path.substr(4), {.scale = zoo_scale});
    if (!graph) return graph.status();
    input.graph = zoo_file(std::move(graph).value());
  } else if (ends_with(path, ".csv")) {
    auto csv = galloc::read_minimalloc_csv(std::filesystem::path(path));
    if (!csv) return csv.status();
    input.csv = std::move(csv).value();
    input.capacity_from_name = galloc::capacity_from_file_name(path);
  } else {
    auto file = galloc::read_graph_file_any(path);
    if (!file) return file.status();
    input.graph = std::move(file).value();
  }
  return input;
}

struct Outcome {
  std::string strategy;
  galloc::GraphProblem lifetimes;
  galloc::Placement placement;
  std::vector<std::string> buffer_names;  // per buffer id
  double seconds = 0;
  std::optional<galloc::Plan> plan;  // graphs only
};

Bytes sum(const std::vector<Bytes>& v) {
  Bytes total = 0;
  for (Bytes x : v) total += x;
  return total;
}

// Draws "best 1.2 MiB, bound 1.1 MiB, 3.2 s left" on a terminal; nothing when piped.
class ProgressBar {
 public:
  ProgressBar() : enabled_(isatty(STDERR_FILENO) != 0) {}
  ~ProgressBar() {
    if (drawn_) std::fprintf(stderr, "\r\033[K");
  }
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;
  void operator()(const galloc::SearchProgress& p) {
    if (!enabled_) return;
    const double gap =
        p.lower_bound == 0 ? 0 : 100.0 * (static_cast<double>(p.best) / static_cast<double>(p.lower_bound) - 1.0);
    std::fprintf(stderr, "\r\033[Ksearching: best %llu bytes, %.3f%% above the lower bound, %.1f s left",
                 static_cast<unsigned long long>(p.best), gap, p.seconds_left);
    drawn_ = true;
  }

 private:
  bool enabled_;
  bool drawn_ = false;
};

// time_limit: the exact search's; `best` searches too when the caller gave one
// (time_limit_given) or a capacity its heuristics miss.
galloc::Result<Outcome> run(const Input& input, galloc::Strategy strategy, double time_limit,
                            std::optional<Bytes> capacity, bool time_limit_given = false) {
  galloc::PlacementOptions options;
  options.strategy = strategy;
  options.exact.time_limit_seconds = time_limit;
  options.exact.capacity = capacity;
  if (time_limit_given) options.best_search_seconds = time_limit;
  ProgressBar bar;
  options.exact.on_progress = [&bar](const galloc::SearchProgress& p) { bar(p); };
  Outcome outcome;
  outcome.strategy = std::string(galloc::strategy_name(strategy));
  const auto start = std::chrono::steady_clock::now();
  if (input.graph) {
    auto types = galloc::make_null_buffer_types(*input.graph);
    auto planned = galloc::plan_graph(input.graph->graph, types.per_id, input.graph->assignment(), options);
    if (!planned) return planned.status();
    outcome.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    outcome.lifetimes = std::move(planned->lifetimes);
    outcome.placement = std::move(planned->placement);
    outcome.buffer_names = galloc::buffer_names(planned->plan);
    outcome.plan = std::move(planned->plan);
  } else {
    // A CSV keeps its real times, which rank buffers for the exact search far better than
    // steps do (MiniMalloc's challenging instances: 11 of 11 at capacity instead of 3).
    options.exact.durations = galloc::durations_of(*input.csv);
    auto placement = strategy == galloc::Strategy::kExact
                         ? galloc::place_exact(*input.csv, galloc::place(input.csv->problem, {}).value(), options.exact)
                         : galloc::place(input.csv->problem, options);
    if (!placement) return placement.status();
    outcome.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    outcome.lifetimes = galloc::GraphProblem{input.csv->problem};  // no tensors
    outcome.placement = std::move(placement).value();
    outcome.buffer_names = {"buffer"};
  }
  return outcome;
}

nlohmann::json to_json(const Outcome& o, std::optional<Bytes> capacity) {
  const auto issues = galloc::validate_placement(o.lifetimes, o.placement);
  const auto lower = galloc::live_lower_bound(o.lifetimes);
  nlohmann::json j;
  j["strategy"] = o.strategy;
  Bytes peak = 0;
  for (const auto& chunks : o.placement.chunk_sizes) peak += sum(chunks);
  j["peak_bytes"] = peak;
  j["lower_bound_bytes"] = sum(lower);
  j["valid"] = issues.empty();
  if (!issues.empty()) j["issues"] = issues.front().message;
  if (capacity) j["fits"] = peak <= *capacity;
  j["plan_seconds"] = o.seconds;
  nlohmann::json buffers = nlohmann::json::array();
  for (std::size_t a = 0; a < o.placement.chunk_sizes.size(); ++a) {
    std::string name = "buffer";
    if (o.plan) {
      for (const galloc::BufferPlan& b : o.plan->buffers) {
        if (b.allocator == static_cast<galloc::AllocatorId>(a)) {
          name = b.name;
          break;
        }
      }
    }
    buffers.push_back({{"name", name},
                       {"size", sum(o.placement.chunk_sizes[a])},
                       {"lower_bound", lower[a]},
                       {"chunks", o.placement.chunk_sizes[a]}});
  }
  j["buffers"] = buffers;
  return j;
}

std::string mib(Bytes bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return text;
}

void print_table_header() {
  std::printf("%-31s %16s %16s %9s %7s %6s %11s\n", "strategy", "peak", "lower bound", "ratio", "chunks", "valid",
              "plan time");
}

void print_row(const Outcome& o, std::optional<Bytes> capacity) {
  const auto issues = galloc::validate_placement(o.lifetimes, o.placement);
  Bytes peak = 0;
  std::size_t chunks = 0;
  for (const auto& c : o.placement.chunk_sizes) {
    peak += sum(c);
    chunks += c.size();
  }
  const Bytes lower = sum(galloc::live_lower_bound(o.lifetimes));
  std::printf("%-31s %16s %16s %9.4f %7zu %6s %9.3f ms", o.strategy.c_str(), mib(peak).c_str(), mib(lower).c_str(),
              lower == 0 ? 1.0 : static_cast<double>(peak) / static_cast<double>(lower), chunks,
              issues.empty() ? "yes" : "NO", o.seconds * 1e3);
  if (capacity) std::printf("  %s", peak <= *capacity ? "fits" : "does not fit");
  std::printf("\n");
}

// A graph's storage objects as a MiniMalloc problem: one row per storage object, times are
// steps, ids name the tensor that allocated it. Only for graphs with a single buffer type.
galloc::Result<galloc::CsvProblem> graph_as_csv(const galloc::Graph& graph, galloc::Problem problem) {
  if (problem.allocators.size() != 1) {
    return galloc::invalid_argument("the graph has " + std::to_string(problem.allocators.size()) +
                                    " buffer types; a MiniMalloc CSV holds one");
  }
  galloc::CsvProblem csv;
  for (std::size_t s = 0; s < problem.storages.size(); ++s) {
    const galloc::StorageObject& storage = problem.storages[s];
    std::string id = "s" + std::to_string(s);
    if (graph.contains(storage.first_tensor) && !graph[storage.first_tensor].name.empty()) {
      id += "_" + graph[storage.first_tensor].name;
    }
    for (char& c : id) {
      if (c == ',' || c == '\n' || c == '\r' || c == '"') c = '_';
    }
    csv.ids.push_back(std::move(id));
    csv.times.push_back({storage.live.lower, storage.live.upper});
    csv.sizes.push_back(storage.size);
    csv.alignments.push_back(1);
    csv.given_offsets.emplace_back();
  }
  csv.problem = std::move(problem);
  return csv;
}

// A MiniMalloc CSV (with the placement's offsets, when given), written whole or not at all: a
// file beside the target, renamed over it.
galloc::Status write_csv_file(const std::string& path, const galloc::CsvProblem& csv,
                              const galloc::Placement* placement) {
  const std::string partial = path + ".partial";
  {
    std::ofstream out(partial);
    galloc::write_minimalloc_csv(out, csv, placement);
    out.close();
    if (!out) {
      std::error_code ignored;
      std::filesystem::remove(partial, ignored);
      return galloc::invalid_argument("cannot write " + path);
    }
  }
  std::error_code ec;
  std::filesystem::rename(partial, path, ec);
  if (ec) return galloc::invalid_argument("cannot write " + path + ": " + ec.message());
  return galloc::Status::ok();
}

// A plan's solution as a MiniMalloc CSV: a CSV input's own rows, or a graph's storage objects.
galloc::Status write_solution(const Input& input, const Outcome& outcome, const std::string& path) {
  if (input.csv) return write_csv_file(path, *input.csv, &outcome.placement);
  auto csv = graph_as_csv(input.graph->graph, outcome.lifetimes);
  if (!csv) return csv.status();
  return write_csv_file(path, *csv, &outcome.placement);
}

// The registry's names, for help texts: "ggml, greedy-lowest-offset, ..., best".
std::string strategy_names() {
  std::string names;
  for (const galloc::NamedStrategy& entry : galloc::strategy_registry()) {
    names += (names.empty() ? "" : ", ") + std::string(entry.name);
  }
  return names;
}

int fail(const galloc::Status& status) {
  std::fprintf(stderr, "galloc: %s\n", status.to_string().c_str());
  return 1;
}

#ifdef GALLOC_HAVE_TIMELINE
int render_outcome(const Input& input, const Outcome& outcome, const std::string& html_output, bool ascii, int width) {
  if (!input.graph) {
    return fail(galloc::invalid_argument("render draws graphs; convert the CSV's plan with `galloc plan` instead"));
  }
  const galloc::Graph& graph = input.graph->graph;
  if (ascii || html_output.empty()) {
    galloc::TimelineOptions options;
    options.columns = width;
    std::cout << galloc::draw_timeline(graph, outcome.lifetimes, outcome.placement, outcome.buffer_names, options);
  }
  if (!html_output.empty()) {
    galloc::HtmlTimelineOptions options;
    options.title = "galloc: " + input.source;
    options.strategy = outcome.strategy;
    std::ofstream out(html_output);
    out << galloc::render_timeline_html(graph, outcome.lifetimes, outcome.placement, outcome.buffer_names, options);
    if (!out) return fail(galloc::invalid_argument("cannot write " + html_output));
  }
  return 0;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"galloc: plan the memory of tensor compute graphs"};
  const std::string strategy_help = "one of: " + strategy_names();
  app.require_subcommand(1);
  double scale = 1.0;

  // zoo
  auto* zoo = app.add_subcommand("zoo", "list the bundled real-model graphs, or write one as a galloc graph file");
  std::string zoo_name, zoo_output;
  zoo->add_option("name", zoo_name, "'list', or the name of a graph")->required();
  zoo->add_option("-o,--output", zoo_output, "file to write (galloc JSON, or MiniMalloc CSV by extension)");
  zoo->add_option("--scale", scale, "shrink the model (0 < scale <= 1)")->check(CLI::Range(0.0, 1.0));

  // strategies
  auto* strategies = app.add_subcommand("strategies", "list the placement strategies by name");

  // plan
  auto* plan = app.add_subcommand("plan", "plan a graph file (.json) or a MiniMalloc problem (.csv)");
  std::string plan_file, strategy_name = "best";
  double time_limit = 10.0;
  std::optional<Bytes> capacity;
  bool json = false;
  plan->add_option("file", plan_file, "graph file, MiniMalloc CSV, or zoo:NAME")->required();
  plan->add_option("--strategy", strategy_name, strategy_help);
  plan->add_option("--time-limit", time_limit, "seconds for the exact search (per buffer)");
  plan->add_option("--capacity", capacity, "bytes the plan must fit in");
  plan->add_flag("--json", json, "one JSON object on stdout");
  std::string plan_output;
  plan->add_option("-o,--output", plan_output,
                   "write the solution as a MiniMalloc CSV (id,lower,upper,size,offset); a graph's storage "
                   "objects become its rows");
  plan->add_option("--scale", scale, "for zoo:NAME: shrink the model");

  // compare
  auto* compare = app.add_subcommand("compare", "every strategy side by side");
  std::string compare_file;
  compare->add_option("file", compare_file, "graph file, MiniMalloc CSV, or zoo:NAME")->required();
  compare->add_option("--time-limit", time_limit, "seconds for the exact search (per buffer)");
  compare->add_option("--capacity", capacity, "bytes the plan must fit in");
  compare->add_flag("--json", json, "a JSON array on stdout");
  compare->add_option("--scale", scale, "for zoo:NAME: shrink the model");

  // render
  auto* render = app.add_subcommand("render", "draw the memory timeline of a plan");
  std::string render_file, html_output;
  bool ascii = false;
  int width = 64;
  render->add_option("file", render_file, "graph file, MiniMalloc CSV, or zoo:NAME")->required();
  render->add_option("--strategy", strategy_name, strategy_help);
  render->add_option("--html", html_output, "write a self-contained HTML page here");
  render->add_flag("--ascii", ascii, "print the timeline as text");
  render->add_option("--width", width, "characters per buffer in --ascii");
  render->add_option("--time-limit", time_limit, "seconds for the exact search (per buffer)");
  render->add_option("--scale", scale, "for zoo:NAME: shrink the model");

  // convert
  auto* convert = app.add_subcommand("convert", "convert between galloc JSON and MiniMalloc CSV");
  std::string convert_in, convert_out, convert_strategy = "best";
  convert->add_option("input", convert_in, "graph file (.json), MiniMalloc CSV, or zoo:NAME")->required();
  convert->add_option("output", convert_out, "output file (.json or .csv)")->required();
  convert->add_option("--strategy", convert_strategy, "graph to CSV: the plan whose offsets the CSV carries");
  convert->add_option("--scale", scale, "for zoo:NAME: shrink the model");

  CLI11_PARSE(app, argc, argv);

  if (zoo->parsed()) {
    if (zoo_name == "list") {
      for (const auto& entry : galloc::zoo::list()) {
        std::printf("%-28s %s\n%-28s follows %s%s\n", entry.name.c_str(), entry.description.c_str(), "",
                    entry.follows.c_str(), entry.shipped ? "" : " [no shipped program plans this graph so]");
      }
      return 0;
    }
    auto graph = galloc::zoo::build(zoo_name, {.scale = scale});
    if (!graph) return fail(graph.status());
    const galloc::GraphFile file = zoo_file(std::move(graph).value());
    if (zoo_output.empty()) {
      std::cout << galloc::write_graph_json(file);
      return 0;
    }
    if (auto s = galloc::write_graph_file(zoo_output, file); !s) return fail(s);
    std::fprintf(stderr, "wrote %s (%zu nodes, %zu leafs)\n", zoo_output.c_str(), file.graph.nodes.size(),
                 file.graph.leafs.size());
    return 0;
  }

  if (strategies->parsed()) {
    for (const galloc::NamedStrategy& entry : galloc::strategy_registry()) {
      std::printf("%-32s %s\n", std::string(entry.name).c_str(), std::string(entry.summary).c_str());
    }
    return 0;
  }

  if (plan->parsed()) {
    auto input = load(plan_file, scale);
    if (!input) return fail(input.status());
    auto strategy = galloc::strategy_from_name(strategy_name);
    if (!strategy) return fail(strategy.status());
    const auto cap = capacity ? capacity : input->capacity_from_name;
    auto outcome = run(*input, *strategy, time_limit, capacity, plan->count("--time-limit") > 0);
    if (!outcome) return fail(outcome.status());
    const bool valid = galloc::validate_placement(outcome->lifetimes, outcome->placement).empty();
    if (!plan_output.empty() && valid) {
      if (auto s = write_solution(*input, *outcome, plan_output); !s) return fail(s);
    }
    if (json) {
      std::cout << to_json(*outcome, cap).dump(2) << "\n";
    } else {
      std::printf("%s\n", plan_file.c_str());
      print_table_header();
      print_row(*outcome, cap);
    }
    return valid ? 0 : 2;
  }

  if (compare->parsed()) {
    auto input = load(compare_file, scale);
    if (!input) return fail(input.status());
    const auto cap = capacity ? capacity : input->capacity_from_name;
    nlohmann::json all = nlohmann::json::array();
    if (!json) {
      std::printf("%s\n", compare_file.c_str());
      print_table_header();
    }
    for (galloc::Strategy strategy : galloc::all_strategies()) {
      auto outcome = run(*input, strategy, time_limit, std::nullopt);
      if (!outcome) return fail(outcome.status());
      if (json) {
        all.push_back(to_json(*outcome, cap));
      } else {
        print_row(*outcome, cap);
      }
    }
    if (json) std::cout << all.dump(2) << "\n";
    return 0;
  }

  if (render->parsed()) {
#ifdef GALLOC_HAVE_TIMELINE
    auto input = load(render_file, scale);
    if (!input) return fail(input.status());
    auto strategy = galloc::strategy_from_name(strategy_name);
    if (!strategy) return fail(strategy.status());
    auto outcome = run(*input, *strategy, time_limit, std::nullopt);
    if (!outcome) return fail(outcome.status());
    return render_outcome(*input, *outcome, html_output, ascii, width);
#else
    return fail(galloc::Status(galloc::ErrorCode::kFailedPrecondition, "render is not built in"));
#endif
  }

  if (convert->parsed()) {
    auto input = load(convert_in, scale);
    if (!input) return fail(input.status());
    if (ends_with(convert_out, ".csv")) {
      if (input->csv) {
        const galloc::Status s = write_csv_file(convert_out, *input->csv, nullptr);
        return s ? 0 : fail(s);
      }
      auto strategy = galloc::strategy_from_name(convert_strategy);
      if (!strategy) return fail(strategy.status());
      auto outcome = run(*input, *strategy, 1.0, std::nullopt);
      if (!outcome) return fail(outcome.status());
      const galloc::Status s = write_solution(*input, *outcome, convert_out);
      return s ? 0 : fail(s);
    }
    if (!input->graph) {
      return fail(
          galloc::Status(galloc::ErrorCode::kInvalidArgument, "a MiniMalloc CSV has no graph to write as galloc JSON"));
    }
    if (auto s = galloc::write_graph_file(convert_out, *input->graph); !s) return fail(s);
    return 0;
  }
  return 0;
}
