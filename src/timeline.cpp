// Memory timelines as text and as HTML. Both read the same extents (timeline_extents) and
// never trust the placement: a storage object without a chunk is listed, not drawn, and
// overlapping bytes are drawn as such.
#include "galloc/timeline.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <string_view>

#include "galloc/extents.hpp"
#include "report/timeline_css.hpp"  // generated from src/report/timeline.css
#include "report/timeline_js.hpp"   // generated from src/report/timeline.js

namespace galloc {

std::vector<TimelineExtent> timeline_extents(const GraphProblem& lifetimes, const Placement& placement) {
  std::vector<TimelineExtent> extents;
  std::vector<StorageExtent> parts;
  const std::size_t n = std::min(lifetimes.storages.size(), placement.storage_address.size());
  for (std::size_t i = 0; i < n; ++i) {
    const StorageObject& storage = lifetimes.storages[i];
    const ChunkAddress address = placement.storage_address[i];
    const auto a = static_cast<std::size_t>(storage.allocator);
    if (storage.allocator < 0 || a >= placement.chunk_sizes.size() || address.chunk < 0 ||
        static_cast<std::size_t>(address.chunk) >= placement.chunk_sizes[a].size()) {
      continue;
    }
    split_at_tail_frees(storage, address.offset, parts);
    for (const StorageExtent& part : parts) {
      if (!part.empty()) {
        extents.push_back({static_cast<StorageId>(i), storage.allocator, address.chunk, part.steps, part.bytes});
      }
    }
  }
  return extents;
}

std::vector<std::string> buffer_names(const Plan& plan) {
  std::vector<std::string> names;
  for (const BufferPlan& buffer : plan.buffers) names.push_back(buffer.name);
  return names;
}

namespace {

constexpr std::string_view kChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

std::string tensor_label(const Graph& graph, TensorId id) {
  if (graph.contains(id) && !graph[id].name.empty()) return graph[id].name;
  return "#" + std::to_string(id);
}

// Everything both drawings need, computed once.
struct Model {
  struct Allocator {
    std::string label;                 // "buffer 0 'CPU'" or "buffers 0, 2 'CPU'"
    std::vector<Bytes> chunk_sizes;    // from the placement
    std::vector<Bytes> chunk_drawn;    // drawn height of each chunk: its size, or more if overfull
    std::vector<StorageId> storages;   // in id order
    std::vector<std::size_t> extents;  // indices into Model::extents
    Bytes lower_bound = 0;
    Bytes size = 0;
    std::vector<Bytes> live;  // per step
    Step peak_step = -1;      // first step with the most bytes live; -1: nothing ever is
    Bytes peak_live = 0;
  };
  std::vector<TimelineExtent> extents;
  std::vector<Allocator> allocators;
  std::vector<std::vector<TensorId>> storage_tensors;  // per storage
  std::vector<int> rank;                               // per storage: index in its allocator
  std::vector<char> placed;                            // per storage: has a valid chunk
  Step steps = 0;
};

Model build_model(const GraphProblem& lifetimes, const Placement& placement, Span<const std::string> names) {
  Model m;
  m.steps = lifetimes.step_count();
  m.extents = timeline_extents(lifetimes, placement);
  const std::size_t n_alloc = lifetimes.allocators.size();
  m.allocators.resize(n_alloc);
  for (std::size_t a = 0; a < n_alloc; ++a) {
    Model::Allocator& view = m.allocators[a];
    std::vector<std::size_t> ids;
    for (std::size_t b = 0; b < lifetimes.buffer_allocator.size(); ++b) {
      if (static_cast<std::size_t>(lifetimes.buffer_allocator[b]) == a) ids.push_back(b);
    }
    std::string id_list;
    for (std::size_t b : ids) id_list += (id_list.empty() ? "" : ", ") + std::to_string(b);
    const std::string name = !ids.empty() && ids[0] < names.size() ? names[ids[0]] : std::string();
    view.label = (ids.size() > 1 ? "buffers " : "buffer ") + (ids.empty() ? std::to_string(a) : id_list);
    if (!name.empty()) view.label += " '" + name + "'";
    if (a < placement.chunk_sizes.size()) view.chunk_sizes = placement.chunk_sizes[a];
    view.chunk_drawn = view.chunk_sizes;
    for (Bytes chunk : view.chunk_sizes) view.size += chunk;
    view.live.assign(static_cast<std::size_t>(m.steps) + 1, 0);
  }
  const auto lower = live_lower_bound(lifetimes);
  for (std::size_t a = 0; a < n_alloc && a < lower.size(); ++a) m.allocators[a].lower_bound = lower[a];

  m.storage_tensors.resize(lifetimes.storages.size());
  for (std::size_t t = 0; t < lifetimes.tensor_storage.size(); ++t) {
    const StorageId s = lifetimes.tensor_storage[t];
    if (s >= 0 && static_cast<std::size_t>(s) < m.storage_tensors.size()) {
      m.storage_tensors[static_cast<std::size_t>(s)].push_back(static_cast<TensorId>(t));
    }
  }
  m.rank.assign(lifetimes.storages.size(), 0);
  m.placed.assign(lifetimes.storages.size(), 0);
  for (std::size_t s = 0; s < lifetimes.storages.size(); ++s) {
    const auto a = static_cast<std::size_t>(lifetimes.storages[s].allocator);
    if (a >= n_alloc) continue;
    m.rank[s] = static_cast<int>(m.allocators[a].storages.size());
    m.allocators[a].storages.push_back(static_cast<StorageId>(s));
    // Make sure the first tensor comes first in the list.
    auto& tensors = m.storage_tensors[s];
    const TensorId first = lifetimes.storages[s].first_tensor;
    auto it = std::find(tensors.begin(), tensors.end(), first);
    if (it != tensors.end())
      std::rotate(tensors.begin(), it, it + 1);
    else if (first != kNoTensor)
      tensors.insert(tensors.begin(), first);
  }
  for (std::size_t e = 0; e < m.extents.size(); ++e) {
    const TimelineExtent& extent = m.extents[e];
    if (static_cast<std::size_t>(extent.allocator) >= n_alloc) continue;
    Model::Allocator& view = m.allocators[static_cast<std::size_t>(extent.allocator)];
    view.extents.push_back(e);
    m.placed[static_cast<std::size_t>(extent.storage)] = 1;
    Bytes& drawn = view.chunk_drawn[static_cast<std::size_t>(extent.chunk)];
    drawn = std::max(drawn, extent.bytes.upper);
    // A difference array: + at the first step, - after the last; summed below.
    const auto from = static_cast<std::size_t>(std::clamp<Step>(extent.steps.lower, 0, m.steps));
    const auto to = static_cast<std::size_t>(std::clamp<Step>(extent.steps.upper, 0, m.steps));
    if (from < to) {
      view.live[from] += extent.bytes.upper - extent.bytes.lower;
      view.live[to] -= extent.bytes.upper - extent.bytes.lower;
    }
  }
  for (Model::Allocator& view : m.allocators) {
    for (std::size_t t = 1; t < view.live.size(); ++t) view.live[t] += view.live[t - 1];
    for (Step t = 0; t < m.steps; ++t) {
      if (view.live[static_cast<std::size_t>(t)] > view.peak_live) {
        view.peak_live = view.live[static_cast<std::size_t>(t)];
        view.peak_step = t;
      }
    }
  }
  return m;
}

std::string storage_names(const Graph& graph, const Model& m, StorageId s, const char* separator) {
  std::string text;
  for (TensorId t : m.storage_tensors[static_cast<std::size_t>(s)]) {
    text += (text.empty() ? "" : separator) + tensor_label(graph, t);
  }
  return text.empty() ? "storage " + std::to_string(s) : text;
}

Op storage_op(const Graph& graph, const GraphProblem& lifetimes, StorageId s) {
  const TensorId first = lifetimes.storages[static_cast<std::size_t>(s)].first_tensor;
  return graph.contains(first) ? graph[first].op : Op::None;
}

std::string pad_right(std::string text, std::size_t width) {
  if (text.size() < width) text.append(width - text.size(), ' ');
  return text;
}
std::string pad_left(const std::string& text, std::size_t width) {
  return text.size() < width ? std::string(width - text.size(), ' ') + text : text;
}
std::string fit(const std::string& text, std::size_t width) {
  if (text.size() <= width) return pad_right(text, width);
  return width == 0 ? std::string() : text.substr(0, width - 1) + "~";
}

// --- ASCII ---------------------------------------------------------------------------------

struct Row {
  std::string label;
  Step at = -1;  // the step whose state the row shows; -1: before the first event
};

std::vector<Row> ascii_rows(const Graph& graph, const GraphProblem& lifetimes, const Model& m, AllocatorId allocator,
                            TimelineRows kind) {
  std::vector<Row> rows;
  if (kind == TimelineRows::kNodes) {
    std::size_t name_width = 0;
    for (TensorId id : graph.nodes) name_width = std::max(name_width, tensor_label(graph, id).size());
    name_width = std::min<std::size_t>(name_width, 16);
    for (std::size_t i = 0; i < graph.nodes.size() && i < lifetimes.node_step.size(); ++i) {
      rows.push_back({pad_left(std::to_string(i), 4) + " " + fit(tensor_label(graph, graph.nodes[i]), name_width),
                      lifetimes.node_step[i] - 1});
    }
    return rows;
  }
  for (std::size_t t = 0; t < lifetimes.events.size(); ++t) {
    const LifetimeEvent& event = lifetimes.events[t];
    const auto s = static_cast<std::size_t>(event.storage);
    if (s >= lifetimes.storages.size() || lifetimes.storages[s].allocator != allocator) continue;
    const char c = kChars[static_cast<std::size_t>(m.rank[s]) % kChars.size()];
    std::string what = event.kind == LifetimeEvent::Kind::kAllocate ? "alloc " : "free  ";
    what += c;
    if (event.kind == LifetimeEvent::Kind::kFree && event.begin > 0) what += " tail";
    rows.push_back({pad_left(std::to_string(t), 4) + " " + pad_right(what, 11), static_cast<Step>(t)});
  }
  return rows;
}

void draw_allocator(std::string& out, const Graph& graph, const GraphProblem& lifetimes, const Model& m,
                    AllocatorId allocator, const TimelineOptions& options) {
  const Model::Allocator& view = m.allocators[static_cast<std::size_t>(allocator)];
  const std::size_t n_chunks = view.chunk_drawn.size();
  const Bytes widest = n_chunks == 0 ? 0 : *std::max_element(view.chunk_drawn.begin(), view.chunk_drawn.end());
  const auto columns = static_cast<Bytes>(std::max(1, options.columns));
  const Bytes per_column = std::max<Bytes>(1, widest / columns + (widest % columns != 0 ? 1 : 0));
  std::vector<std::size_t> width(n_chunks);
  for (std::size_t c = 0; c < n_chunks; ++c) {
    const Bytes drawn = view.chunk_drawn[c];
    width[c] = static_cast<std::size_t>(std::max<Bytes>(1, drawn / per_column + (drawn % per_column != 0 ? 1 : 0)));
  }

  // Header.
  std::string sizes;
  for (std::size_t c = 0; c < n_chunks; ++c) sizes += (c == 0 ? "" : " + ") + std::to_string(view.chunk_sizes[c]);
  out += view.label + ": " + std::to_string(n_chunks) + (n_chunks == 1 ? " chunk, " : " chunks, ") +
         std::to_string(view.size) + " bytes" + (n_chunks > 1 ? " (" + sizes + ")" : "") + "; lower bound " +
         std::to_string(view.lower_bound) + " bytes; " + std::to_string(per_column) +
         (per_column == 1 ? " byte per column\n" : " bytes per column\n");
  std::string legend;
  for (StorageId s : view.storages) {
    legend += " ";
    legend += kChars[static_cast<std::size_t>(m.rank[static_cast<std::size_t>(s)]) % kChars.size()];
    legend += "=" + storage_names(graph, m, s, "+");
    if (!m.placed[static_cast<std::size_t>(s)]) legend += "(no address)";
  }
  out += "legend:" + (legend.empty() ? std::string(" (none)") : legend) + "\n";

  const std::vector<Row> rows = ascii_rows(graph, lifetimes, m, allocator, options.rows);
  std::size_t label_width = 4;  // "node" / "step"
  for (const Row& row : rows) label_width = std::max(label_width, row.label.size());

  // The grid, and the live bytes per row.
  std::vector<std::string> lines;
  std::vector<Bytes> live(rows.size(), 0);
  struct Live {
    Offset begin;
    Offset end;
    StorageId storage;
  };
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const Step at = rows[r].at;
    std::vector<std::vector<Live>> per_chunk(n_chunks);
    for (std::size_t e : view.extents) {
      const TimelineExtent& extent = m.extents[e];
      if (!extent.steps.contains(at)) continue;
      per_chunk[static_cast<std::size_t>(extent.chunk)].push_back(
          {extent.bytes.lower, extent.bytes.upper, extent.storage});
      live[r] += extent.bytes.upper - extent.bytes.lower;
    }
    std::string line = pad_right(rows[r].label, label_width) + " |";
    for (std::size_t c = 0; c < n_chunks; ++c) {
      auto& items = per_chunk[c];
      std::sort(items.begin(), items.end(), [](const Live& x, const Live& y) {
        return x.begin != y.begin ? x.begin < y.begin : x.storage < y.storage;
      });
      std::string cells(width[c], '.');
      std::vector<Bytes> cover(width[c], 0);
      for (const Live& item : items) {
        const std::size_t c0 = static_cast<std::size_t>(item.begin / per_column);
        const std::size_t c1 = std::min(width[c], static_cast<std::size_t>((item.end - 1) / per_column + 1));
        for (std::size_t col = c0; col < c1; ++col) {
          const Offset lo = std::max<Offset>(item.begin, col * per_column);
          const Offset hi = std::min<Offset>(item.end, (col + 1) * per_column);
          if (hi - lo > cover[col]) {
            cover[col] = hi - lo;
            cells[col] =
                kChars[static_cast<std::size_t>(m.rank[static_cast<std::size_t>(item.storage)]) % kChars.size()];
          }
        }
      }
      // Bytes two storage objects share: sorted by start, each against the furthest end so far.
      Offset reach = 0;
      StorageId reach_owner = -1;
      for (const Live& item : items) {
        if (reach_owner >= 0 && item.begin < reach && item.storage != reach_owner) {
          const Offset hi = std::min(item.end, reach);
          const std::size_t c0 = static_cast<std::size_t>(item.begin / per_column);
          const std::size_t c1 = std::min(width[c], static_cast<std::size_t>((hi - 1) / per_column + 1));
          for (std::size_t col = c0; col < c1; ++col) cells[col] = '!';
        }
        if (item.end > reach) {
          reach = item.end;
          reach_owner = item.storage;
        }
      }
      line += cells + "|";
    }
    lines.push_back(std::move(line));
  }

  const Bytes most = rows.empty() ? 0 : *std::max_element(live.begin(), live.end());
  const std::size_t live_width = std::max<std::size_t>(4, std::to_string(most).size());
  std::string header = pad_right(options.rows == TimelineRows::kNodes ? "node" : "step", label_width) + " |";
  for (std::size_t c = 0; c < n_chunks; ++c) header += fit("chunk " + std::to_string(c), width[c]) + "|";
  out += header + " " + pad_left("live", live_width) + "\n";
  bool peak_marked = false;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    out += lines[r] + " " + pad_left(std::to_string(live[r]), live_width);
    if (!peak_marked && most > 0 && live[r] == most) {
      out += " peak";
      peak_marked = true;
    }
    out += "\n";
  }
}

}  // namespace

std::string draw_timeline(const Graph& graph, const GraphProblem& lifetimes, const Placement& placement,
                          Span<const std::string> buffer_names, const TimelineOptions& options) {
  if (placement.storage_address.size() != lifetimes.storages.size() ||
      placement.chunk_sizes.size() != lifetimes.allocators.size()) {
    return "timeline: the placement covers " + std::to_string(placement.storage_address.size()) +
           " storage objects and " + std::to_string(placement.chunk_sizes.size()) + " buffers; the lifetimes have " +
           std::to_string(lifetimes.storages.size()) + " and " + std::to_string(lifetimes.allocators.size()) + "\n";
  }
  const Model m = build_model(lifetimes, placement, buffer_names);
  std::string out;
  for (std::size_t a = 0; a < m.allocators.size(); ++a) {
    if (a > 0) out += "\n";
    draw_allocator(out, graph, lifetimes, m, static_cast<AllocatorId>(a), options);
  }
  return out;
}

std::string draw_timeline(const Graph& graph, const PlanningResult& result, const TimelineOptions& options) {
  const auto names = buffer_names(result.plan);
  return draw_timeline(graph, result.lifetimes, result.placement, names, options);
}

// --- HTML ----------------------------------------------------------------------------------

namespace {

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string fixed(double value, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", digits, value);
  return buffer;
}

std::string human_bytes(Bytes bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 6) {
    value /= 1024.0;
    ++unit;
  }
  const bool whole = value == static_cast<double>(static_cast<std::uint64_t>(value));
  return fixed(value, whole ? 0 : (value < 10 ? 2 : (value < 100 ? 1 : 0))) + " " + kUnits[unit];
}

std::string px(double value) { return fixed(value, 2); }

// 1, 2 or 5 times a power of ten, at least `raw` (for steps).
double nice_step(double raw) {
  if (raw <= 0) return 1;
  double base = 1;
  while (base * 10 <= raw) base *= 10;
  while (base > raw) base /= 10;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (base * m >= raw) return base * m;
  }
  return base * 10;
}

// The smallest power of two at least `raw` (for bytes: ticks at 16 KiB, not 9.77 KiB).
double binary_step(double raw) {
  double step = 1;
  while (step < raw) step *= 2;
  return step;
}

// Tableau 20: the strong colours first, then their light partners.
constexpr const char* kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#59a14f", "#b07aa1", "#499894", "#9d7660",
                                    "#d37295", "#b6992d", "#79706e", "#a0cbe8", "#ffbe7d", "#ff9d9a", "#8cd17d",
                                    "#d4a6c8", "#86bcb6", "#d7b5a6", "#fabfd2", "#f1ce63", "#bab0ac"};
constexpr std::size_t kPaletteSize = sizeof(kPalette) / sizeof(kPalette[0]);

// The node that runs after step `t`'s event (its preparation contains t); -1: none.
std::int64_t node_at_step(const GraphProblem& lifetimes, Step t) {
  auto it = std::upper_bound(lifetimes.node_step.begin(), lifetimes.node_step.end(), t);
  if (it == lifetimes.node_step.end()) return -1;
  return it - lifetimes.node_step.begin();
}

// Nodes that run while [from, to) is live: node i runs after step node_step[i] - 1.
std::string node_range(const GraphProblem& lifetimes, Step from, Step to) {
  // node_step never decreases: the nodes with from <= node_step - 1 < to are a range.
  const auto& steps = lifetimes.node_step;
  const auto first = std::lower_bound(steps.begin(), steps.end(), from + 1) - steps.begin();
  const auto last = std::upper_bound(steps.begin(), steps.end(), to) - steps.begin() - 1;
  if (first > last) return "no node runs";
  if (first == last) return "node " + std::to_string(first);
  return "nodes " + std::to_string(first) + "\xE2\x80\x93" + std::to_string(last);
}

struct HtmlContext {
  const Graph& graph;
  const GraphProblem& lifetimes;
  const Model& m;
  const HtmlTimelineOptions& options;
  std::map<Op, std::size_t> op_colour;  // palette index per op, by first appearance
};

std::string colour_of(const HtmlContext& ctx, StorageId s) {
  auto it = ctx.op_colour.find(storage_op(ctx.graph, ctx.lifetimes, s));
  return kPalette[(it == ctx.op_colour.end() ? 0 : it->second) % kPaletteSize];
}

// Dark text on light fills, white on the rest.
const char* text_colour_on(const std::string& fill) {
  auto channel = [&](std::size_t at) {
    return static_cast<double>(std::stoi(fill.substr(at, 2), nullptr, 16)) / 255.0;
  };
  const double luminance = 0.2126 * channel(1) + 0.7152 * channel(3) + 0.0722 * channel(5);
  return luminance > 0.55 ? "#1f2430" : "#ffffff";
}

std::string extent_title(const HtmlContext& ctx, const TimelineExtent& e, bool tail) {
  const StorageObject& storage = ctx.lifetimes.storages[static_cast<std::size_t>(e.storage)];
  std::string text = storage_names(ctx.graph, ctx.m, e.storage, " + ") + "\n";
  text += "op " + std::string(op_name(storage_op(ctx.graph, ctx.lifetimes, e.storage))) + ", " +
          human_bytes(storage.size) + " (" + std::to_string(storage.size) + " bytes)\n";
  text += "steps [" + std::to_string(e.steps.lower) + ", " + std::to_string(e.steps.upper) + "), " +
          node_range(ctx.lifetimes, e.steps.lower, e.steps.upper) + "\n";
  text += "offset " + std::to_string(e.bytes.lower) + " in chunk " + std::to_string(e.chunk) + ", bytes [" +
          std::to_string(e.bytes.lower) + ", " + std::to_string(e.bytes.upper) + ")";
  if (tail) text += "\ntail: freed early, when an in-place successor took the rest";
  return text;
}

void panel(std::string& out, const HtmlContext& ctx, AllocatorId allocator, ChunkId chunk) {
  const Model::Allocator& view = ctx.m.allocators[static_cast<std::size_t>(allocator)];
  const double pw = std::max(100, ctx.options.plot_width);
  const double ph = std::max(60, ctx.options.plot_height);
  const double left = 78, right = 18, top = 24, bottom = 36;
  const double width = left + pw + right, height = top + ph + bottom;
  const bool one_chunk = view.chunk_sizes.size() == 1;
  const Bytes chunk_size = view.chunk_sizes[static_cast<std::size_t>(chunk)];
  Bytes extent_bytes = std::max<Bytes>(view.chunk_drawn[static_cast<std::size_t>(chunk)], 1);
  if (one_chunk) extent_bytes = std::max(extent_bytes, view.lower_bound);
  const double steps = static_cast<double>(std::max<Step>(ctx.m.steps, 1));
  auto x = [&](double t) { return left + t * pw / steps; };
  auto y = [&](double offset) { return top + ph - offset * ph / static_cast<double>(extent_bytes); };

  out += "<figure class=\"panel\" id=\"panel-" + std::to_string(allocator) + "-" + std::to_string(chunk) +
         "\" data-allocator=\"" + std::to_string(allocator) + "\" data-chunk=\"" + std::to_string(chunk) + "\">\n";
  out += "<figcaption>chunk " + std::to_string(chunk) + " \xC2\xB7 " + human_bytes(chunk_size) + " (" +
         std::to_string(chunk_size) + " bytes)</figcaption>\n";
  out += "<svg class=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" + px(width) + "\" height=\"" +
         px(height) + "\" viewBox=\"0 0 " + px(width) + " " + px(height) + "\" role=\"img\" aria-label=\"" +
         escape(view.label) + " chunk " + std::to_string(chunk) + "\">\n";
  out += "<rect class=\"plot-bg\" x=\"" + px(left) + "\" y=\"" + px(top) + "\" width=\"" + px(pw) + "\" height=\"" +
         px(ph) + "\"/>\n";

  // Axes: offsets up the side, steps along the bottom.
  out += "<g class=\"axes\">\n";
  const double y_step = binary_step(static_cast<double>(extent_bytes) / 6.0);
  for (double o = 0; o <= static_cast<double>(extent_bytes) + 0.5; o += y_step) {
    out += "<line class=\"grid\" x1=\"" + px(left) + "\" x2=\"" + px(left + pw) + "\" y1=\"" + px(y(o)) + "\" y2=\"" +
           px(y(o)) + "\"/>";
    out += "<text class=\"tick-label\" x=\"" + px(left - 6) + "\" y=\"" + px(y(o) + 4) + "\" text-anchor=\"end\">" +
           escape(human_bytes(static_cast<Bytes>(o))) + "</text>\n";
  }
  const double x_step = std::max(1.0, nice_step(steps / 10.0));
  for (double t = 0; t <= steps + 0.5; t += x_step) {
    if (t > 0 && t < steps) {
      out += "<line class=\"grid\" x1=\"" + px(x(t)) + "\" x2=\"" + px(x(t)) + "\" y1=\"" + px(top) + "\" y2=\"" +
             px(top + ph) + "\"/>";
    }
    out += "<text class=\"tick-label\" x=\"" + px(x(t)) + "\" y=\"" + px(top + ph + 15) + "\" text-anchor=\"middle\">" +
           std::to_string(static_cast<long long>(t)) + "</text>";
  }
  out += "\n<text class=\"axis-label\" x=\"" + px(left + pw / 2) + "\" y=\"" + px(top + ph + 31) +
         "\" text-anchor=\"middle\">step</text>";
  out += "<text class=\"axis-label\" transform=\"translate(14 " + px(top + ph / 2) +
         ") rotate(-90)\" text-anchor=\"middle\">offset</text>\n</g>\n";

  // The storage objects.
  out += "<g class=\"storages\">\n";
  std::string labels;
  std::map<StorageId, int> extent_index;
  for (std::size_t e : view.extents) {
    const TimelineExtent& extent = ctx.m.extents[e];
    if (extent.chunk != chunk) continue;
    const int index = extent_index[extent.storage]++;
    const StorageObject& storage = ctx.lifetimes.storages[static_cast<std::size_t>(extent.storage)];
    const auto& tensors = ctx.m.storage_tensors[static_cast<std::size_t>(extent.storage)];
    std::string all;
    for (TensorId t : tensors) all += (all.empty() ? "" : ", ") + tensor_label(ctx.graph, t);
    const std::string first = tensors.empty() ? std::string() : tensor_label(ctx.graph, tensors.front());
    const double x0 = x(static_cast<double>(extent.steps.lower));
    const double x1 = x(static_cast<double>(std::min(extent.steps.upper, ctx.m.steps)));
    const double y0 = y(static_cast<double>(extent.bytes.upper));
    const double y1 = y(static_cast<double>(extent.bytes.lower));
    const double h = std::max(y1 - y0, 1.0);
    out += "<rect class=\"storage\" id=\"storage-" + std::to_string(allocator) + "-" + std::to_string(extent.storage) +
           "-" + std::to_string(index) + "\" data-allocator=\"" + std::to_string(allocator) + "\" data-storage=\"" +
           std::to_string(extent.storage) + "\" data-extent=\"" + std::to_string(index) + "\" data-tensor=\"" +
           escape(first) + "\" data-tensors=\"" + escape(all) + "\" data-op=\"" +
           escape(op_name(storage_op(ctx.graph, ctx.lifetimes, extent.storage))) + "\" data-size=\"" +
           std::to_string(storage.size) + "\" data-offset=\"" + std::to_string(extent.bytes.lower) +
           "\" data-chunk=\"" + std::to_string(chunk) + "\" data-from=\"" + std::to_string(extent.steps.lower) +
           "\" data-to=\"" + std::to_string(extent.steps.upper) + "\" x=\"" + px(x0) + "\" y=\"" + px(y1 - h) +
           "\" width=\"" + px(std::max(x1 - x0, 0.75)) + "\" height=\"" + px(h) + "\" fill=\"" +
           colour_of(ctx, extent.storage) + "\"><title>" + escape(extent_title(ctx, extent, index > 0)) +
           "</title></rect>\n";
    // A name on blocks wide and tall enough to hold one (about 6.5 px a character).
    const std::string name = storage_names(ctx.graph, ctx.m, extent.storage, " + ");
    const double room = x1 - x0 - 8;
    if (index == 0 && h >= 15 && room >= 30) {
      const auto chars = static_cast<std::size_t>(room / 6.5);
      const std::string shown =
          name.size() <= chars ? name : name.substr(0, chars > 1 ? chars - 1 : 0) + "\xE2\x80\xA6";
      labels += "<text class=\"storage-label\" x=\"" + px(x0 + 4) + "\" y=\"" + px(y1 - h / 2 + 4) + "\" fill=\"" +
                text_colour_on(colour_of(ctx, extent.storage)) + "\">" + escape(shown) + "</text>\n";
    }
  }
  out += "</g>\n<g class=\"storage-labels\">\n" + labels + "</g>\n";

  if (one_chunk && view.lower_bound > 0) {
    const double ly = y(static_cast<double>(view.lower_bound));
    out += "<line class=\"lower-bound\" x1=\"" + px(left) + "\" x2=\"" + px(left + pw) + "\" y1=\"" + px(ly) +
           "\" y2=\"" + px(ly) + "\" data-bytes=\"" + std::to_string(view.lower_bound) + "\"/>";
    // At the left, unless the peak label is there.
    const bool peak_left = view.peak_step >= 0 && x(static_cast<double>(view.peak_step)) < left + 190;
    out += "<text class=\"lower-bound-label\" x=\"" + px(peak_left ? left + pw - 4 : left + 4) + "\" y=\"" +
           px(ly - 4) + "\" text-anchor=\"" + (peak_left ? "end" : "start") + "\">lower bound " +
           escape(human_bytes(view.lower_bound)) + "</text>\n";
  }
  if (view.peak_step >= 0) {
    const double px_peak = x(static_cast<double>(view.peak_step) + 0.5);
    out += "<line class=\"peak-marker\" x1=\"" + px(px_peak) + "\" x2=\"" + px(px_peak) + "\" y1=\"" + px(top) +
           "\" y2=\"" + px(top + ph) + "\" data-step=\"" + std::to_string(view.peak_step) + "\"/>";
    const char* anchor = px_peak > left + pw - 60 ? "end" : (px_peak < left + 60 ? "start" : "middle");
    out += "<text class=\"peak-label\" x=\"" + px(px_peak) + "\" y=\"" + px(top - 7) + "\" text-anchor=\"" + anchor +
           "\">peak \xC2\xB7 step " + std::to_string(view.peak_step) + " \xC2\xB7 " +
           escape(human_bytes(view.peak_live)) + " live</text>\n";
  }
  out += "</svg>\n</figure>\n";
}

void peak_table(std::string& out, const HtmlContext& ctx, AllocatorId allocator) {
  const Model::Allocator& view = ctx.m.allocators[static_cast<std::size_t>(allocator)];
  if (view.peak_step < 0) return;
  // Bytes of each storage object live at the peak step.
  std::map<StorageId, Bytes> live;
  std::map<StorageId, const TimelineExtent*> head;
  for (std::size_t e : view.extents) {
    const TimelineExtent& extent = ctx.m.extents[e];
    if (!extent.steps.contains(view.peak_step)) continue;
    live[extent.storage] += extent.bytes.upper - extent.bytes.lower;
    if (head.find(extent.storage) == head.end()) head[extent.storage] = &extent;
  }
  std::vector<std::pair<StorageId, Bytes>> rows(live.begin(), live.end());
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  const std::size_t shown = std::min(rows.size(), static_cast<std::size_t>(std::max(0, ctx.options.largest_at_peak)));
  const std::int64_t node = node_at_step(ctx.lifetimes, view.peak_step);
  std::string when = "step " + std::to_string(view.peak_step);
  if (node >= 0 && static_cast<std::size_t>(node) < ctx.graph.nodes.size()) {
    when += ", before node " + std::to_string(node) + " '" +
            escape(tensor_label(ctx.graph, ctx.graph.nodes[static_cast<std::size_t>(node)])) + "'";
  }
  out += "<table class=\"peak-tensors\" id=\"peak-tensors-" + std::to_string(allocator) + "\" data-step=\"" +
         std::to_string(view.peak_step) + "\">\n<caption>Largest of the " + std::to_string(rows.size()) +
         " storage objects live at the peak (" + when + "; " + escape(human_bytes(view.peak_live)) +
         " live)</caption>\n";
  out +=
      "<thead><tr><th>tensors</th><th>op</th><th class=\"num\">live at peak</th><th class=\"num\">"
      "size</th><th class=\"num\">offset</th><th class=\"num\">chunk</th><th>steps</th><th>nodes</th>"
      "</tr></thead>\n<tbody>\n";
  for (std::size_t i = 0; i < shown; ++i) {
    const StorageId s = rows[i].first;
    const StorageObject& storage = ctx.lifetimes.storages[static_cast<std::size_t>(s)];
    const TimelineExtent& extent = *head[s];
    out += "<tr class=\"peak-row\" data-allocator=\"" + std::to_string(allocator) + "\" data-storage=\"" +
           std::to_string(s) + "\"><td><span class=\"swatch\" style=\"background:" + colour_of(ctx, s) + "\"></span>" +
           escape(storage_names(ctx.graph, ctx.m, s, " + ")) + "</td><td>" +
           escape(op_name(storage_op(ctx.graph, ctx.lifetimes, s))) + "</td><td class=\"num\">" +
           escape(human_bytes(rows[i].second)) + "</td><td class=\"num\">" + std::to_string(storage.size) +
           "</td><td class=\"num\">" + std::to_string(extent.bytes.lower) + "</td><td class=\"num\">" +
           std::to_string(extent.chunk) + "</td><td>[" + std::to_string(storage.live.lower) + ", " +
           std::to_string(storage.live.upper) + ")</td><td>" +
           escape(node_range(ctx.lifetimes, storage.live.lower, storage.live.upper)) + "</td></tr>\n";
  }
  out += "</tbody></table>\n";
}

}  // namespace

std::string render_timeline_html(const Graph& graph, const GraphProblem& lifetimes, const Placement& placement,
                                 Span<const std::string> buffer_names, const HtmlTimelineOptions& options) {
  const bool consistent = placement.storage_address.size() == lifetimes.storages.size() &&
                          placement.chunk_sizes.size() == lifetimes.allocators.size();
  Placement empty;
  empty.storage_address.resize(lifetimes.storages.size());
  empty.chunk_sizes.resize(lifetimes.allocators.size());
  const Model m = build_model(lifetimes, consistent ? placement : empty, buffer_names);
  HtmlContext ctx{graph, lifetimes, m, options, {}};
  for (std::size_t s = 0; s < lifetimes.storages.size(); ++s) {
    const Op op = storage_op(graph, lifetimes, static_cast<StorageId>(s));
    if (ctx.op_colour.find(op) == ctx.op_colour.end()) {
      const std::size_t next = ctx.op_colour.size();
      ctx.op_colour[op] = next;
    }
  }

  Bytes total = 0, lower = 0, no_reuse = 0;
  for (const Model::Allocator& view : m.allocators) {
    total += view.size;
    lower += view.lower_bound;
  }
  for (Bytes size : no_reuse_size(lifetimes)) no_reuse += size;
  const std::string ratio =
      lower == 0 ? "\xE2\x80\x94" : fixed(static_cast<double>(total) / static_cast<double>(lower), 3);

  std::string out;
  out.reserve(4096 + m.extents.size() * 600);
  out +=
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>" +
      escape(options.title) + "</title>\n<style>\n" + kTimelineCss + "</style>\n</head>\n<body>\n";
  out += "<header id=\"summary\">\n<h1>" + escape(options.title) + "</h1>\n<dl class=\"stats\">\n";
  auto stat = [&](const char* id, const std::string& label, const std::string& value, const std::string& extra) {
    out += "<div><dt>" + label + "</dt><dd id=\"" + id + "\"" + extra + ">" + value + "</dd></div>\n";
  };
  stat("strategy", "strategy", escape(options.strategy.empty() ? "(not given)" : options.strategy), "");
  stat("peak", "peak (buffer size)", escape(human_bytes(total)) + " <small>" + std::to_string(total) + " B</small>",
       " data-bytes=\"" + std::to_string(total) + "\"");
  stat("lower-bound", "lower bound", escape(human_bytes(lower)) + " <small>" + std::to_string(lower) + " B</small>",
       " data-bytes=\"" + std::to_string(lower) + "\"");
  stat("ratio", "peak / lower bound", ratio, "");
  stat("no-reuse", "without reuse", escape(human_bytes(no_reuse)), " data-bytes=\"" + std::to_string(no_reuse) + "\"");
  stat("counts", "nodes \xC2\xB7 steps \xC2\xB7 storage objects",
       std::to_string(graph.nodes.size()) + " \xC2\xB7 " + std::to_string(m.steps) + " \xC2\xB7 " +
           std::to_string(lifetimes.storages.size()),
       "");
  out += "</dl>\n<div class=\"op-legend\">";
  std::vector<std::pair<std::size_t, Op>> ops;
  for (const auto& [op, index] : ctx.op_colour) ops.emplace_back(index, op);
  std::sort(ops.begin(), ops.end());
  for (const auto& [index, op] : ops) {
    out += "<span class=\"op\" data-op=\"" + escape(op_name(op)) +
           "\"><span class=\"swatch\" style=\"background:" + std::string(kPalette[index % kPaletteSize]) +
           "\"></span>" + escape(op_name(op)) + "</span>";
  }
  out += "</div>\n</header>\n<main>\n";
  if (!consistent) {
    out += "<p class=\"error\">The placement does not match the lifetimes (" +
           std::to_string(placement.storage_address.size()) + " storage objects and " +
           std::to_string(placement.chunk_sizes.size()) + " buffers, against " +
           std::to_string(lifetimes.storages.size()) + " and " + std::to_string(lifetimes.allocators.size()) +
           "); nothing is drawn.</p>\n";
  }

  for (std::size_t a = 0; a < m.allocators.size(); ++a) {
    const Model::Allocator& view = m.allocators[a];
    const auto id = static_cast<AllocatorId>(a);
    out += "<section class=\"buffer\" id=\"buffer-" + std::to_string(a) + "\" data-allocator=\"" + std::to_string(a) +
           "\" data-size=\"" + std::to_string(view.size) + "\" data-lower-bound=\"" + std::to_string(view.lower_bound) +
           "\">\n<h2>" + escape(view.label) + "</h2>\n";
    std::string stats = human_bytes(view.size) + " in " + std::to_string(view.chunk_sizes.size()) +
                        (view.chunk_sizes.size() == 1 ? " chunk" : " chunks") + " \xC2\xB7 lower bound " +
                        human_bytes(view.lower_bound);
    if (view.lower_bound > 0) {
      stats += " (\xC3\x97" + fixed(static_cast<double>(view.size) / static_cast<double>(view.lower_bound), 3) + ")";
    }
    stats += " \xC2\xB7 " + std::to_string(view.storages.size()) + " storage objects";
    if (view.peak_step >= 0) stats += " \xC2\xB7 peak at step " + std::to_string(view.peak_step);
    if (view.chunk_sizes.size() > 1) stats += " \xC2\xB7 the lower bound is for all chunks together";
    out += "<p class=\"buffer-stats\">" + escape(stats) + "</p>\n";
    if (view.chunk_sizes.empty()) out += "<p class=\"empty\">No memory planned in this buffer.</p>\n";
    for (std::size_t c = 0; c < view.chunk_sizes.size(); ++c) panel(out, ctx, id, static_cast<ChunkId>(c));
    peak_table(out, ctx, id);
    out += "</section>\n";
  }
  out +=
      "</main>\n<div id=\"details\"></div>\n<footer>Drawn by galloc. x: step of the lifetimes (one "
      "allocation or free each); y: offset in the chunk. Hover a block for its tensors.</footer>\n";
  out += "<script>\n" + std::string(kTimelineScript) + "</script>\n</body>\n</html>\n";
  return out;
}

std::string render_timeline_html(const Graph& graph, const PlanningResult& result, HtmlTimelineOptions options) {
  if (options.strategy.empty()) options.strategy = result.plan.strategy;
  const auto names = buffer_names(result.plan);
  return render_timeline_html(graph, result.lifetimes, result.placement, names, options);
}

}  // namespace galloc
