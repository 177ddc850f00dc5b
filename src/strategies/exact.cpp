// Exact placement: a depth-first search for the smallest buffer, after MiniMalloc (Moffitt,
// "MiniMalloc: A Lightweight Memory Allocator for Hardware-Accelerated Machine Learning",
// ASPLOS 2023). Our own code; the ideas are the paper's unless marked as ours.
//
// The search looks only at canonical solutions: storage objects are placed in non-decreasing
// offset order (ties by a static rank), each at the lowest offset its live interval allows on
// top of what is already placed, so an object's offset is a function of the objects placed
// before it. Every solution can be pushed down into such a form, so searching them is
// complete. On top of that, from MiniMalloc:
//   - sections: time is cut at every interval end into sections; a section's floor (the top
//     of the placed objects live there, or the lowest offset any unplaced one there can take)
//     plus the sizes of its unplaced objects must stay within the capacity;
//   - dominance: an object is never placed at or above the lowest top any unplaced object
//     could reach, since that one could always drop into the gap below;
//   - a "hatless" object (no unplaced object overlaps it) that fails ends its node: its offset
//     is the same in every completion;
//   - dynamic decomposition: once every object crossing a section boundary is placed, the two
//     sides are independent problems, solved one after the other, each with its own order;
//   - static orders by section total, width and area (re-ranked for every sub-problem on its
//     remaining totals), tried round robin with a node limit that doubles each round.
// Ours:
//   - the section check before placing anything: with every floor already checked, an object
//     placed at offset m passes exactly when m + (the most unplaced bytes in any section of
//     the partition) fits, so a node drops every candidate above one threshold at once;
//   - the unallocated floor is checked, not recomputed: a section passes as soon as one of
//     its unplaced objects can still go low enough, and the one found is remembered per
//     section (the same pruning for a fraction of the work);
//   - objects with the same interval and size are placed in one order only (symmetry);
//   - with a capacity, the lower bound is tried alongside it in the round robin: a tight
//     capacity is often found much faster than a loose one;
//   - the search is iterative (no recursion, whatever the number of objects) and undoes its
//     work from one trail of (address, old value) pairs;
//   - without a capacity, the driver first asks for the lower bound itself, then bisects
//     between the best size found and the smallest size not yet ruled out.
// The orders use how long objects live: in steps for a Problem, or in the caller's own
// times (the MiniMalloc CSV overload), which on MiniMalloc's benchmarks decide everything.
// Every result is checked with validate_placement before it is returned.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "galloc/placement.hpp"
#include "galloc/validator.hpp"

namespace galloc {

namespace {

using Clock = std::chrono::steady_clock;
using Units = std::uint64_t;      // bytes divided by the allocator's alignment
using PackedItem = std::int32_t;  // an index into Packing's per-item vectors
using Section = std::int32_t;     // an index into Packing's sections

constexpr Units kUnplaced = std::numeric_limits<Units>::max();
// Beyond these, the search keeps the start placement: its tables would not pay.
constexpr std::size_t kMaxItems = 1u << 20;
constexpr std::size_t kMaxOverlaps = std::size_t{1} << 26;
constexpr Units kMaxUnits = Units{1} << 62;

Units units_up(Bytes bytes, Bytes alignment) { return bytes / alignment + (bytes % alignment != 0 ? 1 : 0); }

// One allocator's storage objects as a packing problem, in units of the alignment.
struct Packing {
  Bytes alignment = 1;
  std::vector<StorageId> storage;          // per item: the storage object it stands for
  std::vector<Units> size;                 // per item, > 0
  std::vector<Section> first;              // per item: its first section
  std::vector<Section> last;               // per item: one past its last section
  std::vector<double> width;               // per item: how long it lives (steps, or the caller's times)
  std::vector<Units> section_total;        // per section: the sizes of the items live in it
  std::vector<std::size_t> section_begin;  // CSR: the items live in each section
  std::vector<PackedItem> section_items;
  std::vector<std::size_t> overlap_begin;  // CSR: the items live at a common step
  std::vector<PackedItem> overlaps;
  Units peak = 0;                // the largest section total
  std::vector<StorageId> loose;  // live at no step, or of size 0: placed at offset 0
  Units loose_peak = 0;          // the largest of those
  [[nodiscard]] std::size_t item_count() const { return size.size(); }
  [[nodiscard]] Section section_count() const { return static_cast<Section>(section_total.size()); }
  [[nodiscard]] Units lower_bound() const { return std::max(peak, loose_peak); }
};

// nullopt when the problem is too large for the search.
std::optional<Packing> make_packing(const Problem& problem, AllocatorId allocator, Span<const double> durations) {
  Packing p;
  p.alignment = std::max<Bytes>(1, problem.allocators[static_cast<std::size_t>(allocator)].alignment);
  std::vector<Step> points;
  for (std::size_t s = 0; s < problem.storages.size(); ++s) {
    const StorageObject& object = problem.storages[s];
    if (object.allocator != allocator) continue;
    if (object.size == 0 || object.live.empty()) {
      p.loose.push_back(static_cast<StorageId>(s));
      p.loose_peak = std::max(p.loose_peak, units_up(object.size, p.alignment));
      continue;
    }
    p.storage.push_back(static_cast<StorageId>(s));
    p.size.push_back(units_up(object.size, p.alignment));
    p.width.push_back(durations.empty() ? static_cast<double>(object.live.upper - object.live.lower) : durations[s]);
    points.push_back(object.live.lower);
    points.push_back(object.live.upper);
  }
  const std::size_t n = p.storage.size();
  if (n > kMaxItems) return std::nullopt;
  // Every sum of sizes the search forms, in units and in bytes, stays far from overflowing.
  const Units most = kMaxUnits / p.alignment;
  Units sum = 0;
  for (Units size : p.size) {
    if (size > most - sum) return std::nullopt;
    sum += size;
  }
  std::sort(points.begin(), points.end());
  points.erase(std::unique(points.begin(), points.end()), points.end());
  const auto section_of = [&](Step step) {
    return static_cast<Section>(std::lower_bound(points.begin(), points.end(), step) - points.begin());
  };
  p.first.resize(n);
  p.last.resize(n);
  const std::size_t sections = points.empty() ? 0 : points.size() - 1;
  p.section_total.assign(sections, 0);
  std::vector<std::size_t> count(sections + 1, 0);
  for (std::size_t i = 0; i < n; ++i) {
    const StorageObject& object = problem.storages[static_cast<std::size_t>(p.storage[i])];
    p.first[i] = section_of(object.live.lower);
    p.last[i] = section_of(object.live.upper);
  }
  // Section totals and memberships.
  std::size_t memberships = 0;
  for (std::size_t i = 0; i < n; ++i) memberships += static_cast<std::size_t>(p.last[i] - p.first[i]);
  if (memberships > kMaxOverlaps) return std::nullopt;
  for (std::size_t i = 0; i < n; ++i) {
    for (Section s = p.first[i]; s < p.last[i]; ++s) {
      p.section_total[static_cast<std::size_t>(s)] += p.size[i];
      ++count[static_cast<std::size_t>(s)];
    }
  }
  p.section_begin.assign(sections + 1, 0);
  for (std::size_t s = 0; s < sections; ++s) p.section_begin[s + 1] = p.section_begin[s] + count[s];
  p.section_items.resize(memberships);
  {
    std::vector<std::size_t> fill(p.section_begin.begin(), p.section_begin.end() - 1);
    for (std::size_t i = 0; i < n; ++i) {
      for (Section s = p.first[i]; s < p.last[i]; ++s)
        p.section_items[fill[static_cast<std::size_t>(s)]++] = static_cast<PackedItem>(i);
    }
  }
  for (Units total_in_section : p.section_total) p.peak = std::max(p.peak, total_in_section);

  // Overlaps: i and j overlap when one starts inside the other's sections.
  std::vector<PackedItem> by_first(n);
  std::iota(by_first.begin(), by_first.end(), 0);
  std::sort(by_first.begin(), by_first.end(), [&](PackedItem a, PackedItem b) {
    if (p.first[static_cast<std::size_t>(a)] != p.first[static_cast<std::size_t>(b)]) {
      return p.first[static_cast<std::size_t>(a)] < p.first[static_cast<std::size_t>(b)];
    }
    return a < b;
  });
  std::vector<std::size_t> degree(n, 0);
  std::size_t pairs = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const auto i = static_cast<std::size_t>(by_first[k]);
    for (std::size_t m = k + 1; m < n; ++m) {
      const auto j = static_cast<std::size_t>(by_first[m]);
      if (p.first[j] >= p.last[i]) break;
      ++degree[i];
      ++degree[j];
      if (++pairs > kMaxOverlaps / 2) return std::nullopt;
    }
  }
  p.overlap_begin.assign(n + 1, 0);
  for (std::size_t i = 0; i < n; ++i) p.overlap_begin[i + 1] = p.overlap_begin[i] + degree[i];
  p.overlaps.resize(p.overlap_begin[n]);
  std::vector<std::size_t> fill(p.overlap_begin.begin(), p.overlap_begin.end() - 1);
  for (std::size_t k = 0; k < n; ++k) {
    const auto i = static_cast<std::size_t>(by_first[k]);
    for (std::size_t m = k + 1; m < n; ++m) {
      const auto j = static_cast<std::size_t>(by_first[m]);
      if (p.first[j] >= p.last[i]) break;
      p.overlaps[fill[i]++] = static_cast<PackedItem>(j);
      p.overlaps[fill[j]++] = static_cast<PackedItem>(i);
    }
  }
  return p;
}

// Rate-limited progress reports (at most ten a second).
struct Reporter {
  const ExactOptions* options = nullptr;
  Bytes best = 0;
  Bytes lower_bound = 0;
  Clock::time_point deadline;
  Clock::time_point last_report{};
  bool reported = false;

  void maybe_report(Clock::time_point now, bool force = false) {
    if (!options->on_progress) return;
    if (!force && reported && now - last_report < std::chrono::milliseconds(100)) return;
    reported = true;
    last_report = now;
    const double left = std::chrono::duration<double>(deadline - now).count();
    options->on_progress({best, lower_bound, std::max(0.0, left)});
  }
};

enum class Outcome : std::uint8_t { kFound, kInfeasible, kNodeLimit, kTimeUp };

// One depth-first search for a placement of every item within `capacity` units.
class Search {
 public:
  Search(const Packing& p, Units capacity, std::string_view heuristic, Clock::time_point deadline,
         std::uint64_t node_limit, Reporter& reporter)
      : p_(p),
        capacity_(capacity),
        heuristic_(heuristic),
        deadline_(deadline),
        node_limit_(node_limit),
        reporter_(reporter) {}

  Outcome run();
  [[nodiscard]] const std::vector<Units>& offsets() const { return offset_; }

 private:
  struct Partition {
    Section lower;  // sections [lower, upper)
    Section upper;
    std::size_t items_begin;  // into item_pool_
    std::size_t items_end;
  };
  enum class FrameKind : std::uint8_t { kNode, kSplit };
  struct Frame {
    FrameKind kind;
    // kNode: a node of the search in one partition.
    std::size_t partition = 0;
    Units last_offset = 0;             // the canonical order: nothing below (last_offset, last_rank)
    Units last_rank = 0;               // ranks start at 1
    std::size_t candidates_begin = 0;  // into candidate_pool_
    std::size_t candidates_end = 0;
    std::size_t next_candidate = 0;
    std::size_t mark = 0;  // the trail before the candidate being tried
    bool hatless = false;  // the candidate being tried overlaps no unplaced item
    // kSplit: independent partitions [first_part, end_part) solved in turn.
    std::size_t first_part = 0;
    std::size_t end_part = 0;
    std::size_t next_part = 0;
    std::size_t items_mark = 0;  // item_pool_ before the split's partitions
    std::size_t parts_mark = 0;  // partitions_ before the split's partitions
    bool restart = true;         // sub-partitions start their own canonical order
  };
  // What a frame hears from the frame above it that was just popped: nothing (the frame is
  // fresh, or a candidate was just placed), that it was solved, or that it failed.
  enum class Returned : std::uint8_t { kNothing, kSolved, kFailed };

  void set(Units& where, Units value) {
    trail_.push_back({&where, where});
    where = value;
  }
  void rollback(std::size_t mark) {
    while (trail_.size() > mark) {
      *trail_.back().first = trail_.back().second;
      trail_.pop_back();
    }
  }
  [[nodiscard]] bool unplaced(PackedItem i) const { return offset_[static_cast<std::size_t>(i)] == kUnplaced; }

  // Fills the candidates of a fresh node; false when its partition is already solved.
  bool make_candidates(Frame& frame);
  // Places `item` at its lowest offset; false when section inference rules the result out
  // (the part make_candidates could not check beforehand).
  bool place(PackedItem item, const Partition& partition, bool& hatless);
  // Pushes the frames that continue the search after `item` was placed.
  void descend(std::size_t frame_index, PackedItem item);
  // Orders a fresh partition's unplaced items by the heuristic, on the current section totals.
  void rank_partition(const Partition& partition);

  // run's steps. Nothing placed yet: the per-item and per-section state, and the chains of
  // items of the same shape.
  void start_empty();
  // The first partitions (split at every boundary no item crosses) under the root split frame.
  void push_root();
  // The top frame is a split: opens its next partition, or pops it when it is done or failed.
  Returned step_split(Returned returned);
  // The top frame is a search node: goes on after `returned`, placing its next candidate.
  Returned step_node(Returned returned);
  // Places the top node's next candidate that fits and pushes what continues from it; false
  // when none is left (or a hatless candidate failed, which fails the rest too).
  bool try_next_candidate();
  Returned pop_node(Returned returned);

  const Packing& p_;
  const Units capacity_;
  const std::string_view heuristic_;
  const Clock::time_point deadline_;
  const std::uint64_t node_limit_;
  Reporter& reporter_;

  std::vector<Units> offset_;            // per item: kUnplaced or its offset
  std::vector<Units> min_offset_;        // per item: the top of the placed items it overlaps
  std::vector<Units> remaining_;         // per section: the sizes of the unplaced items live there
  std::vector<Units> cuts_;              // per section boundary s|s+1: unplaced items live on both sides
  std::vector<Units> rank_;              // per item: its place in the static order of its partition
  std::vector<PackedItem> twin_before_;  // per item: the previous item (by index) of the same shape
  std::vector<std::pair<Units*, Units>> trail_;
  std::vector<Partition> partitions_;
  std::vector<PackedItem> item_pool_;
  std::vector<PackedItem> candidate_pool_;
  std::vector<Frame> frames_;
  std::vector<Section> cut_points_;  // scratch for descend
  std::vector<Section> bounds_;
  std::vector<PackedItem> order_;  // scratch for rank_partition
  std::vector<double> keys_;
  std::vector<std::size_t> index_;
  std::vector<PackedItem> witness_;  // per section: an unplaced item low enough, last time looked
  std::uint64_t nodes_ = 0;
};

void Search::rank_partition(const Partition& part) {
  order_.clear();
  for (std::size_t k = part.items_begin; k < part.items_end; ++k) {
    const PackedItem i = item_pool_[k];
    if (unplaced(i)) order_.push_back(i);
  }
  const std::size_t width = heuristic_.size();
  keys_.resize(order_.size() * width);
  for (std::size_t k = 0; k < order_.size(); ++k) {
    const auto i = static_cast<std::size_t>(order_[k]);
    Units most = 0;
    for (Section s = p_.first[i]; s < p_.last[i]; ++s) most = std::max(most, remaining_[static_cast<std::size_t>(s)]);
    for (std::size_t h = 0; h < width; ++h) {
      double key = 0;
      switch (heuristic_[h]) {
        case 'T': key = static_cast<double>(most); break;
        case 'W': key = static_cast<double>(p_.width[i]); break;
        case 'A': key = static_cast<double>(p_.size[i]) * static_cast<double>(p_.width[i]); break;
        case 'Z': key = static_cast<double>(p_.size[i]); break;
        case 'C': key = static_cast<double>(p_.last[i] - p_.first[i]); break;
        default: break;
      }
      keys_[k * width + h] = key;
    }
  }
  index_.resize(order_.size());
  std::iota(index_.begin(), index_.end(), std::size_t{0});
  std::sort(index_.begin(), index_.end(), [&](std::size_t x, std::size_t y) {
    for (std::size_t h = 0; h < width; ++h) {
      const double kx = keys_[x * width + h];
      const double ky = keys_[y * width + h];
      if (kx != ky) return kx > ky;
    }
    return order_[x] < order_[y];
  });
  for (std::size_t r = 0; r < index_.size(); ++r) {
    set(rank_[static_cast<std::size_t>(order_[index_[r]])], static_cast<Units>(r + 1));
  }
}

bool Search::make_candidates(Frame& frame) {
  const Partition& part = partitions_[frame.partition];
  Units min_height = kUnplaced;
  bool any = false;
  for (std::size_t k = part.items_begin; k < part.items_end; ++k) {
    const auto i = static_cast<std::size_t>(item_pool_[k]);
    if (offset_[i] != kUnplaced) continue;
    any = true;
    min_height = std::min(min_height, min_offset_[i] + p_.size[i]);
  }
  frame.candidates_begin = frame.candidates_end = frame.next_candidate = candidate_pool_.size();
  if (!any) return false;
  // Section inference before placing anything. A section's floor (the top of its placed
  // items) plus its unplaced bytes stays within the capacity: placing an item at m sets the
  // floor of its own sections to m + its size, and nothing in this partition goes below m
  // any more, so every section passes exactly when m + remaining[s] fits. (By induction,
  // the floors never need to be kept.)
  Units most_remaining = 0;
  for (Section s = part.lower; s < part.upper; ++s) {
    most_remaining = std::max(most_remaining, remaining_[static_cast<std::size_t>(s)]);
  }
  const Units highest = most_remaining > capacity_ ? 0 : capacity_ - most_remaining;
  if (most_remaining > capacity_) {
    frame.candidates_end = candidate_pool_.size();
    return true;
  }
  for (std::size_t k = part.items_begin; k < part.items_end; ++k) {
    const PackedItem item = item_pool_[k];
    const auto i = static_cast<std::size_t>(item);
    if (offset_[i] != kUnplaced) continue;
    const Units m = min_offset_[i];
    if (m >= min_height) continue;  // dominated: the lowest top could drop below it
    if (m > highest) continue;
    if (m < frame.last_offset || (m == frame.last_offset && rank_[i] < frame.last_rank)) continue;
    if (m + p_.size[i] > capacity_) continue;
    if (const PackedItem twin = twin_before_[i]; twin >= 0 && unplaced(twin)) continue;
    candidate_pool_.push_back(item);
  }
  frame.candidates_end = candidate_pool_.size();
  std::sort(candidate_pool_.begin() + static_cast<std::ptrdiff_t>(frame.candidates_begin), candidate_pool_.end(),
            [&](PackedItem a, PackedItem b) {
              const Units ma = min_offset_[static_cast<std::size_t>(a)];
              const Units mb = min_offset_[static_cast<std::size_t>(b)];
              if (ma != mb) return ma < mb;
              return rank_[static_cast<std::size_t>(a)] < rank_[static_cast<std::size_t>(b)];
            });
  return true;
}

bool Search::place(PackedItem item, const Partition& part, bool& hatless) {
  const auto c = static_cast<std::size_t>(item);
  const Units offset = min_offset_[c];
  const Units top = offset + p_.size[c];
  set(offset_[c], offset);
  hatless = true;
  // The items it raises all overlap it, so their sections form one range.
  Section raised_lower = std::numeric_limits<Section>::max();
  Section raised_upper = 0;
  for (std::size_t k = p_.overlap_begin[c]; k < p_.overlap_begin[c + 1]; ++k) {
    const auto j = static_cast<std::size_t>(p_.overlaps[k]);
    if (offset_[j] != kUnplaced) continue;
    hatless = false;
    if (min_offset_[j] >= top) continue;
    set(min_offset_[j], top);
    raised_lower = std::min(raised_lower, p_.first[j]);
    raised_upper = std::max(raised_upper, p_.last[j]);
  }
  for (Section s = p_.first[c]; s < p_.last[c]; ++s) {
    const auto si = static_cast<std::size_t>(s);
    set(remaining_[si], remaining_[si] - p_.size[c]);
  }
  for (Section s = p_.first[c]; s + 1 < p_.last[c]; ++s) {
    const auto si = static_cast<std::size_t>(s);
    set(cuts_[si], cuts_[si] - 1);
  }
  // Section inference needs no check here for the top of the placed items (make_candidates
  // let only offsets through that pass it), only for MiniMalloc's unallocated floor: nothing
  // unplaced in a section can go below the lowest offset one of them can take. Where items were raised, look for one
  // that still fits under capacity - remaining; the one found last time usually still does.
  const Section lower = std::max(raised_lower, part.lower);
  const Section upper = std::min(raised_upper, part.upper);
  for (Section s = lower; s < upper; ++s) {
    const auto si = static_cast<std::size_t>(s);
    if (remaining_[si] == 0) continue;
    const Units threshold = capacity_ - remaining_[si];
    const PackedItem cached = witness_[si];
    if (cached >= 0 && unplaced(cached) && min_offset_[static_cast<std::size_t>(cached)] <= threshold) continue;
    bool found = false;
    for (std::size_t k = p_.section_begin[si]; k < p_.section_begin[si + 1]; ++k) {
      const PackedItem j = p_.section_items[k];
      if (unplaced(j) && min_offset_[static_cast<std::size_t>(j)] <= threshold) {
        witness_[si] = j;
        found = true;
        break;
      }
    }
    if (!found) return false;
  }
  return true;
}

void Search::descend(std::size_t frame_index, PackedItem item) {
  const auto c = static_cast<std::size_t>(item);
  const Frame& frame = frames_[frame_index];
  const Partition part = partitions_[frame.partition];
  cut_points_.clear();
  for (Section s = p_.first[c]; s + 1 < p_.last[c]; ++s) {
    if (cuts_[static_cast<std::size_t>(s)] == 0) cut_points_.push_back(s + 1);
  }
  Frame next{};
  next.last_offset = offset_[c];
  next.last_rank = rank_[c];
  if (cut_points_.empty()) {
    next.kind = FrameKind::kNode;
    next.partition = frame.partition;
    frames_.push_back(next);
    return;
  }
  // Independent sub-partitions: every unplaced item lies between two cut points.
  const std::size_t items_mark = item_pool_.size();
  const std::size_t parts_mark = partitions_.size();
  std::vector<Section>& bounds = bounds_;
  bounds.clear();
  bounds.push_back(part.lower);
  bounds.insert(bounds.end(), cut_points_.begin(), cut_points_.end());
  bounds.push_back(part.upper);
  for (std::size_t b = 0; b + 1 < bounds.size(); ++b) {
    const std::size_t begin = item_pool_.size();
    for (std::size_t k = part.items_begin; k < part.items_end; ++k) {
      const PackedItem i = item_pool_[k];
      if (!unplaced(i)) continue;
      const Section first = p_.first[static_cast<std::size_t>(i)];
      if (first >= bounds[b] && first < bounds[b + 1]) item_pool_.push_back(i);
    }
    if (item_pool_.size() > begin) partitions_.push_back({bounds[b], bounds[b + 1], begin, item_pool_.size()});
  }
  next.kind = FrameKind::kSplit;
  next.first_part = parts_mark;
  next.end_part = partitions_.size();
  next.next_part = parts_mark;
  next.items_mark = items_mark;
  next.parts_mark = parts_mark;
  // A single remaining part keeps the canonical order; several start their own.
  next.restart = next.end_part - next.first_part > 1;
  frames_.push_back(next);
}

void Search::start_empty() {
  const std::size_t n = p_.item_count();
  const auto sections = static_cast<std::size_t>(p_.section_count());
  offset_.assign(n, kUnplaced);
  min_offset_.assign(n, 0);
  remaining_ = p_.section_total;
  cuts_.assign(sections > 0 ? sections - 1 : 0, 0);
  for (std::size_t i = 0; i < n; ++i) {
    for (Section s = p_.first[i]; s + 1 < p_.last[i]; ++s) ++cuts_[static_cast<std::size_t>(s)];
  }
  witness_.assign(sections, -1);
  rank_.assign(n, 0);
  // Items of the same shape, chained in index order.
  twin_before_.assign(n, -1);
  std::vector<PackedItem> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](PackedItem a, PackedItem b) {
    const auto x = static_cast<std::size_t>(a);
    const auto y = static_cast<std::size_t>(b);
    if (p_.first[x] != p_.first[y]) return p_.first[x] < p_.first[y];
    if (p_.last[x] != p_.last[y]) return p_.last[x] < p_.last[y];
    if (p_.size[x] != p_.size[y]) return p_.size[x] < p_.size[y];
    return a < b;
  });
  for (std::size_t k = 1; k < n; ++k) {
    const auto x = static_cast<std::size_t>(order[k - 1]);
    const auto y = static_cast<std::size_t>(order[k]);
    if (p_.first[x] == p_.first[y] && p_.last[x] == p_.last[y] && p_.size[x] == p_.size[y]) {
      twin_before_[y] = static_cast<PackedItem>(x);
    }
  }
}

void Search::push_root() {
  const std::size_t n = p_.item_count();
  const auto sections = static_cast<Section>(p_.section_count());
  partitions_.clear();
  item_pool_.clear();
  std::vector<PackedItem> by_first(n);
  std::iota(by_first.begin(), by_first.end(), 0);
  std::sort(by_first.begin(), by_first.end(), [&](PackedItem a, PackedItem b) {
    return p_.first[static_cast<std::size_t>(a)] < p_.first[static_cast<std::size_t>(b)];
  });
  std::size_t k = 0;
  Section lower = 0;
  for (Section s = 0; s < sections; ++s) {
    const bool boundary = s + 1 == sections || cuts_[static_cast<std::size_t>(s)] == 0;
    if (!boundary) continue;
    const std::size_t begin = item_pool_.size();
    while (k < n && p_.first[static_cast<std::size_t>(by_first[k])] <= s) item_pool_.push_back(by_first[k++]);
    if (item_pool_.size() > begin) partitions_.push_back({lower, s + 1, begin, item_pool_.size()});
    lower = s + 1;
  }
  Frame root{};
  root.kind = FrameKind::kSplit;
  root.first_part = 0;
  root.end_part = partitions_.size();
  root.next_part = 0;
  root.restart = true;
  frames_.push_back(root);
}

Search::Returned Search::step_split(Returned returned) {
  Frame& split = frames_.back();
  if (returned == Returned::kFailed || split.next_part == split.end_part) {
    item_pool_.resize(split.items_mark);
    partitions_.resize(split.parts_mark);
    frames_.pop_back();
    return returned == Returned::kFailed ? Returned::kFailed : Returned::kSolved;
  }
  Frame node{};
  node.kind = FrameKind::kNode;
  node.partition = split.next_part++;
  if (split.restart) {
    rank_partition(partitions_[node.partition]);
  } else {
    node.last_offset = split.last_offset;  // the parent's canonical order goes on
    node.last_rank = split.last_rank;
  }
  frames_.push_back(node);
  return Returned::kNothing;
}

Search::Returned Search::pop_node(Returned returned) {
  candidate_pool_.resize(frames_.back().candidates_begin);
  frames_.pop_back();
  return returned;
}

bool Search::try_next_candidate() {
  const std::size_t top = frames_.size() - 1;
  while (frames_[top].next_candidate < frames_[top].candidates_end) {
    Frame& frame = frames_[top];
    const PackedItem item = candidate_pool_[frame.next_candidate++];
    frame.mark = trail_.size();
    bool hatless = false;
    const bool ok = place(item, partitions_[frame.partition], hatless);
    frame.hatless = hatless;
    if (!ok) {
      rollback(frame.mark);
      if (hatless) return false;
      continue;
    }
    descend(top, item);  // pushes frames: `frame` is not used after it
    return true;
  }
  return false;
}

Search::Returned Search::step_node(Returned returned) {
  Frame& node = frames_.back();
  switch (returned) {
    case Returned::kNothing:
      // a partition that is already solved
      if (!make_candidates(node)) return pop_node(Returned::kSolved);
      break;
    case Returned::kSolved: return pop_node(Returned::kSolved);
    case Returned::kFailed:
      rollback(node.mark);
      if (node.hatless) return pop_node(Returned::kFailed);  // its other candidates fail too
      break;
  }
  return try_next_candidate() ? Returned::kNothing : pop_node(Returned::kFailed);
}

Outcome Search::run() {
  start_empty();
  if (p_.lower_bound() > capacity_) return Outcome::kInfeasible;
  if (p_.item_count() == 0) return Outcome::kFound;
  push_root();
  Returned returned = Returned::kNothing;
  while (!frames_.empty()) {
    if (frames_.back().kind == FrameKind::kSplit) {
      returned = step_split(returned);
      continue;
    }
    if (returned == Returned::kNothing) {  // a fresh node
      if ((++nodes_ & 1023) == 1) {        // the clock, now and then
        const auto now = Clock::now();
        if (now >= deadline_) return Outcome::kTimeUp;
        reporter_.maybe_report(now);
      }
      if (nodes_ > node_limit_) return Outcome::kNodeLimit;
    }
    returned = step_node(returned);
  }
  return returned == Returned::kSolved ? Outcome::kFound : Outcome::kInfeasible;
}

// Round robin over static orders (and targets), doubling the node limit each round, as
// MiniMalloc does: the order that suits the problem soon gets enough nodes. `targets` are
// capacities in increasing order; the last is the one asked for, and a placement within any
// of them fits it. Smaller ones are there because a tight capacity can be found much faster
// than a loose one (section inference prunes more); one proved infeasible drops out.
Outcome solve(const Packing& p, std::vector<Units> targets, Clock::time_point deadline, Reporter& reporter,
              std::vector<Units>& offsets) {
  // MiniMalloc's three orders (T: section total, W: width, A: area; larger first).
  static constexpr std::array<std::string_view, 3> kHeuristics{"WAT", "TAW", "TWA"};
  std::uint64_t limit = std::max<std::uint64_t>(1024, 2 * p.item_count());
  while (true) {
    for (std::size_t t = 0; t < targets.size(); ++t) {
      for (std::string_view heuristic : kHeuristics) {
        Search search(p, targets[t], heuristic, deadline, limit, reporter);
        const Outcome outcome = search.run();
        if (outcome == Outcome::kFound) {
          offsets = search.offsets();
          return outcome;
        }
        if (outcome == Outcome::kTimeUp || Clock::now() >= deadline) return Outcome::kTimeUp;
        if (outcome == Outcome::kInfeasible) {
          if (t + 1 == targets.size()) return outcome;
          targets.erase(targets.begin() + static_cast<std::ptrdiff_t>(t));
          --t;
          break;
        }
      }
    }
    if (limit > std::numeric_limits<std::uint64_t>::max() / 4)
      limit = std::numeric_limits<std::uint64_t>::max();
    else
      limit *= 2;
  }
}

double clamp_seconds(double seconds) {
  if (!(seconds > 0)) return 0;  // NaN too
  return std::min(seconds, 1e7);
}

Clock::time_point deadline_after(double seconds) {
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(clamp_seconds(seconds)));
}

// Writes a packing's offsets into `placement` (one chunk for the allocator).
void apply(const Problem& problem, AllocatorId allocator, const Packing& p, const std::vector<Units>& offsets,
           Placement& placement) {
  Bytes high = 0;
  for (std::size_t i = 0; i < p.item_count(); ++i) {
    const auto s = static_cast<std::size_t>(p.storage[i]);
    const Offset offset = offsets[i] * p.alignment;
    placement.storage_address[s] = {0, offset};
    high = std::max(high, offset + problem.storages[s].size);
  }
  for (StorageId loose : p.loose) {
    placement.storage_address[static_cast<std::size_t>(loose)] = {0, 0};
    high = std::max(high, problem.storages[static_cast<std::size_t>(loose)].size);
  }
  placement.chunk_sizes[static_cast<std::size_t>(allocator)] = {high};
}

Bytes packed_size(const Problem& problem, const Packing& p, const std::vector<Units>& offsets) {
  Bytes high = 0;
  for (std::size_t i = 0; i < p.item_count(); ++i) {
    high = std::max(high, offsets[i] * p.alignment + problem.storages[static_cast<std::size_t>(p.storage[i])].size);
  }
  for (StorageId loose : p.loose) high = std::max(high, problem.storages[static_cast<std::size_t>(loose)].size);
  return high;
}

// Searches one allocator; `placement` holds the start and receives anything better. Chunks:
// the search packs one chunk. A chunk may hold up to the max size (or the largest storage
// object, which gets a chunk of its own anyway), and any placement in several chunks can be
// laid end to end in one, so a single chunk loses nothing while the total stays within that.
Status search_allocator(const Problem& problem, AllocatorId allocator, Bytes live_bound, const ExactOptions& options,
                        Span<const double> durations, Placement& placement, bool& changed) {
  const auto a = static_cast<std::size_t>(allocator);
  const Bytes start_total = chunks_total(placement.chunk_sizes[a]);
  const std::string name = "allocator " + std::to_string(allocator);
  if (options.capacity ? start_total <= *options.capacity : start_total <= live_bound) return Status::ok();

  const Clock::time_point deadline = deadline_after(options.time_limit_seconds);
  auto packing = make_packing(problem, allocator, durations);
  if (!packing) {
    if (!options.capacity) return Status::ok();  // too large to search: keep the start
    return {ErrorCode::kDeadlineExceeded, name + ": too many storage objects or overlaps for the exact search"};
  }
  const Packing& p = *packing;
  const Bytes alignment = p.alignment;
  Bytes largest = 0;
  for (const StorageObject& object : problem.storages) {
    if (object.allocator == allocator) largest = std::max(largest, object.size);
  }
  const Bytes chunk_limit = std::max(problem.allocators[a].max_chunk_size, largest);
  const Units lower = p.lower_bound();

  Reporter reporter;
  reporter.options = &options;
  reporter.best = start_total;
  reporter.lower_bound = std::max(live_bound, lower * alignment);  // make_packing keeps this small
  reporter.deadline = deadline;
  reporter.maybe_report(Clock::now(), true);
  std::vector<Units> offsets;

  if (options.capacity) {
    const Bytes capacity = std::min(*options.capacity, chunk_limit);
    const Units target = capacity / alignment;
    // Below the max chunk size, one chunk is as good as several (they could be laid end to
    // end); above it, the search has only looked at one chunk, which proves nothing.
    const std::string why = capacity < *options.capacity
                                ? " in one chunk of at most " + std::to_string(capacity) +
                                      " bytes (the max size); the exact search does not split into chunks"
                                : " in " + std::to_string(capacity) + " bytes";
    if (target < lower) {
      return {ErrorCode::kInfeasible,
              name + ": " + std::to_string(reporter.lower_bound) + " bytes are live at once: no placement fits" + why};
    }
    if (clamp_seconds(options.time_limit_seconds) <= 0) {
      return {ErrorCode::kDeadlineExceeded,
              name + ": no time to search for a placement within " + std::to_string(capacity) + " bytes"};
    }
    std::vector<Units> targets = {target};
    if (lower < target) targets.insert(targets.begin(), lower);  // often quicker to find
    switch (solve(p, targets, deadline, reporter, offsets)) {
      case Outcome::kFound:
        apply(problem, allocator, p, offsets, placement);
        changed = true;
        reporter.best = chunks_total(placement.chunk_sizes[a]);
        reporter.maybe_report(Clock::now(), true);
        return Status::ok();
      case Outcome::kInfeasible: return {ErrorCode::kInfeasible, name + ": no placement fits" + why};
      case Outcome::kNodeLimit:
      case Outcome::kTimeUp: break;
    }
    return {ErrorCode::kDeadlineExceeded,
            name + ": the time ran out before a placement within " + std::to_string(capacity) + " bytes was found"};
  }

  // The smallest size: first the lower bound itself (often reached), then bisection between
  // the smallest size not yet ruled out and the best found. A timed-out size counts as ruled
  // out (not proved), so the search moves on to easier ones.
  Bytes best = start_total;
  Units highest = std::min((best - 1) / alignment, chunk_limit / alignment);  // below `best`
  Units lowest = lower;
  bool first = true;
  while (lowest <= highest) {
    const auto now = Clock::now();
    if (now >= deadline) break;
    const Units target = first ? lowest : lowest + (highest - lowest) / 2;
    const Clock::time_point attempt_deadline = now + (deadline - now) / 2;
    first = false;
    const Outcome outcome = solve(p, {target}, attempt_deadline, reporter, offsets);
    if (outcome == Outcome::kFound) {
      const Bytes size = packed_size(problem, p, offsets);
      if (size < best) {
        apply(problem, allocator, p, offsets, placement);
        changed = true;
        best = size;
        reporter.best = best;
        reporter.maybe_report(Clock::now());
      }
      highest = std::min(highest, (size - 1) / alignment);
      if (size == 0) break;
    } else {
      lowest = target + 1;
    }
  }
  reporter.maybe_report(Clock::now(), true);
  return Status::ok();
}

Result<Placement> exact_search(const Problem& problem, const Placement& start, const ExactOptions& options,
                               Span<const double> durations) {
  if (start.storage_address.size() != problem.storages.size() ||
      start.chunk_sizes.size() != problem.allocators.size()) {
    return invalid_argument("exact search: the start placement covers " + std::to_string(start.storage_address.size()) +
                            " storage objects and " + std::to_string(start.chunk_sizes.size()) +
                            " allocators; the problem has " + std::to_string(problem.storages.size()) + " and " +
                            std::to_string(problem.allocators.size()));
  }
  Placement placement = start;
  const std::vector<Bytes> live = live_lower_bound(problem);
  std::vector<bool> changed(problem.allocators.size(), false);
  for (std::size_t a = 0; a < problem.allocators.size(); ++a) {
    bool allocator_changed = false;
    GALLOC_RETURN_IF_ERROR(search_allocator(problem, static_cast<AllocatorId>(a), live[a], options, durations,
                                            placement, allocator_changed));
    changed[a] = allocator_changed;
  }
  if (std::find(changed.begin(), changed.end(), true) != changed.end()) {
    // Trust no strategy, this one included.
    for (const PlacementIssue& issue : validate_placement(problem, placement)) {
      for (StorageId s : {issue.storage, issue.other}) {
        if (s >= 0 && changed[static_cast<std::size_t>(problem.storages[static_cast<std::size_t>(s)].allocator)]) {
          return internal_error("exact search produced an invalid placement: " + issue.message);
        }
      }
      if (issue.storage < 0 && issue.other < 0) {
        return internal_error("exact search produced an invalid placement: " + issue.message);
      }
    }
  }
  return placement;
}

}  // namespace

Result<Placement> place_exact(const Problem& problem, const Placement& start, const ExactOptions& options) {
  const bool timed = options.durations.size() == problem.storages.size();
  return exact_search(problem, start, options, timed ? Span<const double>(options.durations) : Span<const double>());
}

}  // namespace galloc
