// Memory timelines: where every storage object lives and when, drawn as text (for terminals
// and tests) or as one self-contained HTML page (for people). Both come back as strings;
// writing them anywhere is the caller's business.
//
//   auto result = galloc::plan_graph(graph, types);
//   std::cout << galloc::draw_timeline(graph, *result);            // ASCII, a row per node
//   std::ofstream("plan.html") << galloc::render_timeline_html(graph, *result);
//
// The drawings take the lifetimes a placement was made for (PlanningResult::lifetimes), not
// any lifetimes of the same graph: `ggml` and the offline strategies use different ones.
#pragma once

#include <string>
#include <vector>

#include "galloc/graph.hpp"
#include "galloc/lifetimes.hpp"
#include "galloc/placement.hpp"
#include "galloc/plan.hpp"
#include "galloc/planner.hpp"
#include "galloc/types.hpp"

namespace galloc {

// One rectangle of the drawing: bytes [bytes.lower, bytes.upper) of chunk `chunk` belong to
// storage `storage` over the steps [steps.lower, steps.upper). A storage object with tail
// frees is several extents (its tail dies first); every other storage object is one.
struct TimelineExtent {
  StorageId storage = -1;
  AllocatorId allocator = 0;
  ChunkId chunk = 0;
  Interval<Step> steps;
  Interval<Offset> bytes;  // offsets inside the chunk
};

// The extents of a placement, by storage id then from the head of the storage to its tail.
// Storage objects without a valid chunk, and empty extents, are left out.
[[nodiscard]] std::vector<TimelineExtent> timeline_extents(const GraphProblem& lifetimes, const Placement& placement);

// The buffer type names of a plan, per buffer id.
[[nodiscard]] std::vector<std::string> buffer_names(const Plan& plan);

enum class TimelineRows {
  kNodes,  // a row per node, showing what is live while it runs (after its allocation)
  kSteps,  // a row per event of the lifetimes (allocation or free)
};

struct TimelineOptions {
  // Characters for the largest chunk of a buffer; every chunk of a buffer has the same bytes
  // per character, ceil(largest chunk / columns), so chunks are drawn to scale.
  int columns = 64;
  TimelineRows rows = TimelineRows::kNodes;
};

// In the style of TFLite Micro's PrintMemoryPlan, one section per buffer (buffer ids that
// share a buffer type share a section):
//
//   buffer 0 'CPU': 1 chunk, 128 bytes; lower bound 128 bytes; 8 bytes per column
//   legend: a=x b=mm+scaled+sum c=copy d=out
//   node        |chunk 0         | live
//      0 mm     |aaaabbbbbbbb....|   96
//      2 copy   |aaaabbbbbbbbcccc|  128 peak
//
// One character per storage object ('a'..'z', 'A'..'Z', '0'..'9', cycling), in storage id
// order; '.' is free; '!' marks bytes that two live storage objects share, which no valid
// placement has. A column shows the storage object that covers most of its bytes. The legend
// lists the tensors of each storage object (in-place successors joined by '+'). At the end of
// each row: the bytes live in the buffer, and "peak" on the first row with the most.
[[nodiscard]] std::string draw_timeline(const Graph& graph, const GraphProblem& lifetimes, const Placement& placement,
                                        Span<const std::string> buffer_names, const TimelineOptions& options = {});
[[nodiscard]] std::string draw_timeline(const Graph& graph, const PlanningResult& result,
                                        const TimelineOptions& options = {});

struct HtmlTimelineOptions {
  std::string title = "galloc memory timeline";
  std::string strategy;      // shown in the header; the PlanningResult overload fills it in
  int largest_at_peak = 12;  // rows of each buffer's table of what is live at its peak
  int plot_width = 1040;     // pixels of each panel's plot area
  int plot_height = 240;
};

// One self-contained HTML page (inline CSS and a few lines of inline JS, nothing fetched):
//
//   header#summary      strategy (#strategy), peak = sum of chunk sizes (#peak), lower bound
//                       (#lower-bound), their ratio (#ratio), an op colour legend (.op-legend)
//   section.buffer      one per buffer (id "buffer-<allocator>"), with
//     figure.panel      one per chunk (id "panel-<allocator>-<chunk>"), holding an svg.timeline:
//                       x = step, y = offset (0 at the bottom);
//                       rect.storage per extent (data-storage, data-tensor, data-tensors, data-op,
//                       data-size, data-offset, data-chunk, data-from, data-to, data-extent),
//                       filled by the op of the storage's first tensor, with a <title>;
//                       line.lower-bound (buffers with one chunk) and line.peak-marker at the
//                       buffer's peak step
//     table.peak-tensors  the largest storage objects live at the peak step (tr.peak-row)
//   div#details         filled in by the script when the pointer is over a rect.storage
[[nodiscard]] std::string render_timeline_html(const Graph& graph, const GraphProblem& lifetimes,
                                               const Placement& placement, Span<const std::string> buffer_names,
                                               const HtmlTimelineOptions& options = {});
[[nodiscard]] std::string render_timeline_html(const Graph& graph, const PlanningResult& result,
                                               HtmlTimelineOptions options = {});

}  // namespace galloc
