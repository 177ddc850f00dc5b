// MiniMalloc's eleven "challenging" instances: greedy by size against the exact search at
// the capacity each file carries in its name (1048576), every result validated.
//
//   minimalloc_challenging [DIR] [--seconds S] [--steps] [--minimize]
//
// DIR defaults to ../shared/benchmarks/minimalloc-challenging (run from the repository root).
// S is the time limit per instance (default 60). The search ranks buffers by the files' own
// times; --steps gives it only the problem (times reduced to their order), as for a graph.
// --minimize searches for the smallest size instead of a fit in the capacity (it then stops
// at the lower bound or the time limit). Exit status 0 when every instance fits and validates.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "galloc/minimalloc_csv.hpp"
#include "galloc/placement.hpp"
#include "galloc/plan.hpp"
#include "galloc/validator.hpp"

namespace {

galloc::Bytes total(const std::vector<galloc::Bytes>& chunks) {
  galloc::Bytes sum = 0;
  for (galloc::Bytes c : chunks) sum += c;
  return sum;
}

}  // namespace

int main(int argc, char** argv) {
  std::filesystem::path directory = "../shared/benchmarks/minimalloc-challenging";
  double seconds = 60;
  bool steps_only = false;
  bool minimize = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--seconds" && i + 1 < argc) {
      seconds = std::atof(argv[++i]);
    } else if (arg == "--steps") {
      steps_only = true;
    } else if (arg == "--minimize") {
      minimize = true;
    } else if (arg == "-h" || arg == "--help") {
      std::printf("usage: %s [DIR] [--seconds S] [--steps] [--minimize]\n", argv[0]);
      return 0;
    } else {
      directory = arg;
    }
  }
  std::vector<std::filesystem::path> files;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(directory, error)) {
    if (entry.path().extension() == ".csv") files.push_back(entry.path());
  }
  if (error || files.empty()) {
    std::fprintf(stderr, "no .csv files in %s\n", directory.string().c_str());
    return 2;
  }
  std::sort(files.begin(), files.end());

  std::printf("%-16s %7s %9s %9s %7s %9s %6s %10s %9s\n", "instance", "buffers", "peak", "greedy", "greedy%", "exact",
              "fits", "validator", "seconds");
  int solved = 0;
  int valid = 0;
  double total_seconds = 0;
  std::vector<double> times;
  for (const auto& file : files) {
    const galloc::Bytes capacity = galloc::capacity_from_file_name(file).value_or(1048576);
    auto problem = galloc::read_minimalloc_csv(file);
    if (!problem) {
      std::printf("%-16s %s\n", file.filename().string().c_str(), problem.status().to_string().c_str());
      continue;
    }
    const galloc::Problem& lifetimes = problem->problem;
    const galloc::Bytes peak = galloc::live_lower_bound(lifetimes).front();
    const galloc::Placement greedy = galloc::place_greedy(lifetimes);
    const galloc::Bytes greedy_size = total(greedy.chunk_sizes.front());

    galloc::ExactOptions options;
    options.time_limit_seconds = seconds;
    if (!minimize) options.capacity = capacity;
    const auto begin = std::chrono::steady_clock::now();
    auto exact =
        steps_only ? galloc::place_exact(lifetimes, greedy, options) : galloc::place_exact(*problem, greedy, options);
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    total_seconds += elapsed;
    times.push_back(elapsed);

    std::string exact_text = "-";
    std::string fits = "no";
    std::string verdict = "-";
    if (exact) {
      const galloc::Bytes size = total(exact->chunk_sizes.front());
      exact_text = std::to_string(size);
      const bool fit = size <= capacity;
      fits = fit ? "yes" : "no";
      const auto issues = galloc::validate_placement(lifetimes, *exact);
      verdict = issues.empty() ? "valid" : "INVALID";
      if (!issues.empty())
        std::fprintf(stderr, "%s: %s\n", file.filename().string().c_str(), issues.front().message.c_str());
      solved += fit ? 1 : 0;
      valid += issues.empty() ? 1 : 0;
    } else {
      exact_text = galloc::error_code_name(exact.status().code());
    }
    std::printf("%-16s %7zu %9llu %9llu %6.1f%% %9s %6s %10s %9.3f\n", file.filename().string().c_str(),
                lifetimes.storages.size(), static_cast<unsigned long long>(peak),
                static_cast<unsigned long long>(greedy_size),
                100.0 * (static_cast<double>(greedy_size) / static_cast<double>(capacity) - 1.0), exact_text.c_str(),
                fits.c_str(), verdict.c_str(), elapsed);
    std::fflush(stdout);
  }
  std::sort(times.begin(), times.end());
  const double median = times.empty()           ? 0
                        : times.size() % 2 == 1 ? times[times.size() / 2]
                                                : (times[times.size() / 2 - 1] + times[times.size() / 2]) / 2;
  std::printf("fit %d of %zu, valid %d, total %.3f s, median %.3f s (time limit %.0f s each%s%s)\n", solved,
              files.size(), valid, total_seconds, median, seconds, steps_only ? ", steps only" : "",
              minimize ? ", minimizing" : "");
  return solved == static_cast<int>(files.size()) && valid == solved ? 0 : 1;
}
