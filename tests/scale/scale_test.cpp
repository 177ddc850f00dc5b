// Scale: large graphs plan without error, and how time and memory grow with them.
//
//   galloc_scale                     10^4, 10^5, 10^6 tensors: a table of times and peak RSS
//   galloc_scale --sizes 1000,50000  other sizes
//   galloc_scale --graphs chain      only these graphs (comma-separated: chain, holes, chunks)
//   galloc_scale --strategies greedy other strategies than ggml and best (comma-separated)
//   galloc_scale --quick             one small size, checks only (CTest runs this)
//
// Three graphs, each planned with `ggml` and with `best`, each run in a child process so that
// its peak RSS (getrusage through wait4) is its own:
//   chain   N tensors: a long chain with in-place ops, views (VIEW, RESHAPE) and branches that
//           join again, an output every 100 blocks;
//   holes   a long-lived set of 0.8 N tensors, every other one freed first (0.4 N free blocks
//           at once in ggml's allocator), the rest later;
//   chunks  N tensors of 1 KiB, every 4th an output, a max size of 8 KiB: N / 32 chunks.
// Each plan is checked with validate_placement; the time of that check is reported apart.
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "galloc/galloc.hpp"
#include "galloc/validator.hpp"

namespace {

using namespace galloc;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// The chain: blocks of ten tensors until there are n.
Graph chain_graph(std::size_t n) {
  Graph g;
  g.tensors.reserve(n + 16);
  Tensor x = g.new_tensor("x", DataType::F32, {256});
  x.flags |= kFlagInput;
  TensorId prev = g.add_leaf(std::move(x));
  for (std::size_t block = 0; g.tensors.size() < n; ++block) {
    const std::string p = std::to_string(block);
    const TensorId a = g.add_node(g.new_op("a" + p, Op::MulMat, DataType::F32, {256}, {prev}));
    const TensorId b = g.add_node(g.new_op("b" + p, Op::Scale, DataType::F32, {256}, {a}));  // in place over a
    const TensorId v = g.add_node(g.new_view("v" + p, Op::View, b, 512, {128}));             // a view of b
    const TensorId c = g.add_node(g.new_op("c" + p, Op::MulMat, DataType::F32, {256}, {v}));
    const TensorId d = g.add_node(g.new_op("d" + p, Op::Add, DataType::F32, {256}, {c, b}));    // in place over c
    const TensorId br = g.add_node(g.new_op("br" + p, Op::MulMat, DataType::F32, {128}, {d}));  // a branch
    const TensorId e = g.add_node(g.new_op("e" + p, Op::RmsNorm, DataType::F32, {256}, {d}));
    Tensor reshaped = g.new_view("r" + p, Op::Reshape, e, 0, {256});
    reshaped.ne = {16, 16, 1, 1};
    reshaped.nb = contiguous_strides(reshaped.type, reshaped.ne);
    const TensorId r = g.add_node(std::move(reshaped));
    const TensorId f = g.add_node(g.new_op("f" + p, Op::Mul, DataType::F32, {256}, {r, br}));  // the join
    if (block % 100 == 99) g[f].flags |= kFlagOutput;
    prev = f;
  }
  g[prev].flags |= kFlagOutput;
  return g;
}

// The holes: 0.8 n long-lived tensors L_i; the even ones are read (eight at a time) by small
// MEAN nodes first, which frees them while their odd neighbours live; the odd ones after.
Graph holes_graph(std::size_t n, Step* holes_node) {
  Graph g;
  g.tensors.reserve(n + 16);
  Tensor x = g.new_tensor("x", DataType::F32, {64});
  x.flags |= kFlagInput;
  const TensorId input = g.add_leaf(std::move(x));
  const std::size_t k = std::max<std::size_t>(16, n * 8 / 10);
  std::vector<TensorId> live;
  live.reserve(k);
  for (std::size_t i = 0; i < k; ++i) {
    live.push_back(g.add_node(g.new_op("L" + std::to_string(i), Op::MulMat, DataType::F32,
                                       {16 + static_cast<std::int64_t>(i % 7) * 8}, {input})));
  }
  for (int parity = 0; parity < 2; ++parity) {
    std::vector<TensorId> group;
    for (std::size_t i = static_cast<std::size_t>(parity); i < k; i += 2) {
      group.push_back(live[i]);
      if (group.size() == 8 || i + 2 >= k) {
        Tensor m = g.new_op("m" + std::to_string(parity) + "_" + std::to_string(i), Op::Mean, DataType::F32, {1}, {});
        for (std::size_t s = 0; s < group.size(); ++s) m.src[s] = group[s];
        g.add_node(std::move(m));
        group.clear();
      }
    }
    if (parity == 0 && holes_node) *holes_node = static_cast<Step>(g.nodes.size() - 1);
  }
  return g;
}

// The chunks: n tensors of 1 KiB in a chain, every 4th an output (never freed).
Graph chunks_graph(std::size_t n) {
  Graph g;
  g.tensors.reserve(n + 4);
  Tensor x = g.new_tensor("x", DataType::F32, {256});
  x.flags |= kFlagInput;
  TensorId prev = g.add_leaf(std::move(x));
  for (std::size_t i = 1; i < n; ++i) {
    prev = g.add_node(g.new_op("t" + std::to_string(i), Op::MulMat, DataType::F32, {256}, {prev}));
    if (i % 4 == 0) g[prev].flags |= kFlagOutput;
  }
  return g;
}

// Free blocks between the live storage objects of `allocator` right after node `node`
// (ggml's allocator merges neighbours, so this is its free-list length there, per chunk).
std::size_t free_blocks_after(const GraphProblem& lifetimes, const Placement& placement, Step node) {
  const Step step = lifetimes.node_step[static_cast<std::size_t>(node)] + 1;
  std::map<ChunkId, std::vector<std::pair<Offset, Offset>>> live;
  for (std::size_t s = 0; s < lifetimes.storages.size(); ++s) {
    const StorageObject& st = lifetimes.storages[s];
    if (!st.live.contains(step) || st.size == 0) continue;
    const ChunkAddress a = placement.storage_address[s];
    live[a.chunk].push_back({a.offset, a.offset + st.size});
  }
  std::size_t holes = 0;
  for (auto& [chunk, extents] : live) {
    std::sort(extents.begin(), extents.end());
    Offset end = 0;
    for (const auto& [b, e] : extents) {
      if (b > end) ++holes;
      end = std::max(end, e);
    }
  }
  return holes;
}

struct Row {
  double build_s = 0, plan_s = 0, validate_s = 0;
  std::size_t tensors = 0, chunks = 0, holes = 0, issues = 0;
  Bytes total = 0, lower = 0;
  int ok = 0;
};

// One case in this process; the parent prints it.
Row run_case(const std::string& name, std::size_t n, Strategy strategy) {
  Row row;
  const auto t0 = Clock::now();
  Step holes_node = -1;
  Bytes max_size = kUnlimited;
  Graph g;
  if (name == "chain")
    g = chain_graph(n);
  else if (name == "holes")
    g = holes_graph(n, &holes_node);
  else {
    g = chunks_graph(n);
    max_size = 8192;
  }
  row.build_s = seconds_since(t0);
  row.tensors = g.tensors.size();
  NullBufferType type(32, max_size);
  const std::vector<const BufferType*> types{&type};
  PlacementOptions options;
  options.strategy = strategy;
  const auto t1 = Clock::now();
  auto planned = plan_graph(g, types, {}, options);
  row.plan_s = seconds_since(t1);
  if (!planned) {
    std::fprintf(stderr, "%s n=%zu %s: %s\n", name.c_str(), n, std::string(strategy_name(strategy)).c_str(),
                 planned.status().to_string().c_str());
    return row;
  }
  const auto t2 = Clock::now();
  row.issues = validate_placement(planned->lifetimes, planned->placement).size();
  row.validate_s = seconds_since(t2);
  row.total = planned->plan.total_size();
  row.lower = planned->plan.total_lower_bound();
  row.chunks = planned->plan.buffers[0].chunk_sizes.size();
  if (holes_node >= 0) row.holes = free_blocks_after(planned->lifetimes, planned->placement, holes_node);
  row.ok = row.issues == 0 ? 1 : 0;
  return row;
}

struct ChildResult {
  Row row;
  long peak_rss_kb = 0;
  bool crashed = false;
  bool timed_out = false;
};

// Runs the case in a child (its own peak RSS), with a time limit.
ChildResult run_in_child(const std::string& name, std::size_t n, Strategy strategy, unsigned limit_s) {
  int fds[2];
  if (pipe(fds) != 0) std::abort();
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    alarm(limit_s);
    Row row = run_case(name, n, strategy);
    if (write(fds[1], &row, sizeof row) != static_cast<ssize_t>(sizeof row)) _exit(3);
    _exit(0);
  }
  close(fds[1]);
  ChildResult result;
  const ssize_t got = read(fds[0], &result.row, sizeof result.row);
  close(fds[0]);
  int status = 0;
  struct rusage usage {};
  wait4(pid, &status, 0, &usage);
  result.peak_rss_kb = usage.ru_maxrss;
  result.timed_out = WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM;
  result.crashed = got != static_cast<ssize_t>(sizeof result.row) || !WIFEXITED(status) || WEXITSTATUS(status) != 0;
  return result;
}

std::vector<std::string> split_commas(std::string list) {
  std::vector<std::string> parts;
  while (!list.empty()) {
    const std::size_t comma = list.find(',');
    parts.push_back(list.substr(0, comma));
    list = comma == std::string::npos ? "" : list.substr(comma + 1);
  }
  return parts;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::size_t> sizes{10000, 100000, 1000000};
  std::vector<std::string> graphs{"chain", "holes", "chunks"};
  std::vector<Strategy> strategies{Strategy::kGgml, Strategy::kBest};
  bool quick = false;
  unsigned limit_s = 600;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--quick") {
      quick = true;
      sizes = {4000};
      limit_s = 60;
    } else if (arg == "--sizes" && i + 1 < argc) {
      sizes.clear();
      for (char* p = argv[++i]; *p;) {
        sizes.push_back(std::strtoull(p, &p, 10));
        if (*p == ',') ++p;
      }
    } else if (arg == "--graphs" && i + 1 < argc) {
      graphs = split_commas(argv[++i]);
      for (const std::string& name : graphs) {
        if (name != "chain" && name != "holes" && name != "chunks") {
          std::fprintf(stderr, "unknown graph '%s' (known: chain, holes, chunks)\n", name.c_str());
          return 2;
        }
      }
    } else if (arg == "--strategies" && i + 1 < argc) {
      strategies.clear();
      for (const std::string& name : split_commas(argv[++i])) {
        auto strategy = strategy_from_name(name);
        if (!strategy) {
          std::fprintf(stderr, "%s\n", strategy.status().to_string().c_str());
          return 2;
        }
        strategies.push_back(*strategy);
      }
    } else if (arg == "--limit" && i + 1 < argc) {
      limit_s = static_cast<unsigned>(std::atoi(argv[++i]));
    } else {
      std::fprintf(
          stderr,
          "usage: %s [--quick] [--sizes N,N,...] [--graphs NAME,...] [--strategies NAME,...] [--limit SECONDS]\n",
          argv[0]);
      return 2;
    }
  }
  std::printf("%-7s %9s %-6s %8s %9s %10s %9s %12s %12s %7s %8s  %s\n", "graph", "tensors", "plan", "build_s", "plan_s",
              "validate_s", "rss_MiB", "bytes", "lower_bound", "chunks", "holes", "result");
  int failures = 0;
  for (std::size_t n : sizes) {
    for (const std::string& name : graphs) {
      for (Strategy strategy : strategies) {
        const ChildResult r = run_in_child(name, n, strategy, limit_s);
        const Row& row = r.row;
        const std::string verdict = r.timed_out ? "TIMED OUT after " + std::to_string(limit_s) + " s"
                                    : r.crashed ? "CRASHED"
                                    : row.ok    ? "ok"
                                                : "INVALID";
        std::printf("%-7s %9zu %-6s %8.3f %9.3f %10.3f %9.1f %12llu %12llu %7zu %8zu  %s\n", name.c_str(), row.tensors,
                    std::string(strategy_name(strategy)).c_str(), row.build_s, row.plan_s, row.validate_s,
                    static_cast<double>(r.peak_rss_kb) / 1024.0, static_cast<unsigned long long>(row.total),
                    static_cast<unsigned long long>(row.lower), row.chunks, row.holes, verdict.c_str());
        std::fflush(stdout);
        if (r.crashed || !row.ok) ++failures;
        if (quick && name == "chunks" && row.chunks < n / 40) {
          std::printf("  expected about %zu chunks\n", n / 32);
          ++failures;
        }
      }
    }
  }
  return failures == 0 ? 0 : 1;
}
