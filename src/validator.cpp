#include "galloc/validator.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <tuple>

#include "galloc/extents.hpp"

namespace galloc {

namespace {

// One rectangle of address × time: bytes [begin, end) of a storage, live over [from, to).
struct Extent {
  Step from;
  Step to;
  Offset begin;
  Offset end;
  StorageId storage;
};

std::string storage_label(const Problem& problem, StorageId s) {
  const StorageObject& storage = problem.storages[static_cast<std::size_t>(s)];
  return "storage " + std::to_string(s) + " (first tensor " + std::to_string(storage.first_tensor) + ", " +
         std::to_string(storage.size) + " bytes, steps [" + std::to_string(storage.live.lower) + ", " +
         std::to_string(storage.live.upper) + "))";
}

}  // namespace

std::vector<PlacementIssue> validate_placement(const Problem& problem, const Placement& placement) {
  std::vector<PlacementIssue> issues;
  if (placement.storage_address.size() != problem.storages.size() ||
      placement.chunk_sizes.size() != problem.allocators.size()) {
    issues.push_back({PlacementIssueKind::kMissingAddress, -1, -1,
                      "placement covers " + std::to_string(placement.storage_address.size()) + " storage objects and " +
                          std::to_string(placement.chunk_sizes.size()) + " allocators; the problem has " +
                          std::to_string(problem.storages.size()) + " and " +
                          std::to_string(problem.allocators.size())});
    return issues;
  }

  // Extents grouped by (allocator, chunk).
  std::map<std::pair<AllocatorId, ChunkId>, std::vector<Extent>> groups;
  std::vector<Bytes> largest(problem.allocators.size(), 0);
  std::vector<StorageExtent> parts;
  for (std::size_t i = 0; i < problem.storages.size(); ++i) {
    const auto s = static_cast<StorageId>(i);
    const StorageObject& storage = problem.storages[i];
    const ChunkAddress address = placement.storage_address[i];
    const auto a = static_cast<std::size_t>(storage.allocator);
    const auto& chunks = placement.chunk_sizes[a];
    largest[a] = std::max(largest[a], storage.size);
    if (address.chunk < 0 || static_cast<std::size_t>(address.chunk) >= chunks.size()) {
      issues.push_back({PlacementIssueKind::kMissingAddress, s, -1,
                        storage_label(problem, s) + " is in chunk " + std::to_string(address.chunk) + " of " +
                            std::to_string(chunks.size())});
      continue;
    }
    if (address.offset % problem.allocators[a].alignment != 0) {
      issues.push_back({PlacementIssueKind::kBadAlignment, s, -1,
                        storage_label(problem, s) + " at offset " + std::to_string(address.offset) +
                            " is not aligned to " + std::to_string(problem.allocators[a].alignment)});
    }
    if (address.offset + storage.size > chunks[static_cast<std::size_t>(address.chunk)]) {
      issues.push_back({PlacementIssueKind::kOutOfChunk, s, -1,
                        storage_label(problem, s) + " at offset " + std::to_string(address.offset) +
                            " ends past chunk " + std::to_string(address.chunk) + " (" +
                            std::to_string(chunks[static_cast<std::size_t>(address.chunk)]) + " bytes)"});
    }
    auto& extents = groups[{storage.allocator, address.chunk}];
    auto add = [&](const StorageExtent& part) {
      if (!part.empty()) {
        extents.push_back({part.steps.lower, part.steps.upper, part.bytes.lower, part.bytes.upper, s});
      }
    };
    // The tails, then the head (parts[0]): which overlaps the sweep reports depends on the order.
    split_at_tail_frees(storage, address.offset, parts);
    for (std::size_t k = 1; k < parts.size(); ++k) add(parts[k]);
    add(parts[0]);
  }

  for (std::size_t a = 0; a < problem.allocators.size(); ++a) {
    const Bytes limit = problem.allocators[a].max_chunk_size;
    const auto& chunks = placement.chunk_sizes[a];
    for (std::size_t c = 0; c < chunks.size(); ++c) {
      if (chunks[c] > limit && chunks[c] > largest[a]) {
        issues.push_back({PlacementIssueKind::kChunkTooLarge, -1, -1,
                          "allocator " + std::to_string(a) + " chunk " + std::to_string(c) + " has " +
                              std::to_string(chunks[c]) + " bytes, above the max size " + std::to_string(limit) +
                              " and larger than any single storage object"});
      }
    }
  }

  // Sweep over time; the live extents of a chunk are kept by start address, so a new extent
  // only has to be checked against its neighbours.
  // No structured bindings here: the lambda below captures them, which clang 14 (the fuzz
  // build) cannot do.
  for (auto& group : groups) {
    const auto& key = group.first;
    auto& extents = group.second;
    std::vector<std::pair<Step, std::size_t>> starts;
    std::vector<std::pair<Step, std::size_t>> ends;
    for (std::size_t i = 0; i < extents.size(); ++i) {
      if (extents[i].to <= extents[i].from || extents[i].end <= extents[i].begin) continue;
      starts.emplace_back(extents[i].from, i);
      ends.emplace_back(extents[i].to, i);
    }
    std::sort(starts.begin(), starts.end());
    std::sort(ends.begin(), ends.end());
    std::multimap<Offset, std::size_t> active;
    std::vector<std::multimap<Offset, std::size_t>::iterator> where(extents.size(), active.end());
    std::size_t next_end = 0;
    for (const auto& [time, index] : starts) {
      while (next_end < ends.size() && ends[next_end].first <= time) {
        const std::size_t done = ends[next_end++].second;
        if (where[done] != active.end()) active.erase(where[done]);
        where[done] = active.end();
      }
      const Extent& e = extents[index];
      auto it = active.insert({e.begin, index});
      where[index] = it;
      auto report = [&](std::size_t other_index) {
        const Extent& o = extents[other_index];
        if (o.storage == e.storage) return;
        if (o.begin < e.end && e.begin < o.end) {
          issues.push_back({PlacementIssueKind::kOverlap, e.storage, o.storage,
                            storage_label(problem, e.storage) + " overlaps " + storage_label(problem, o.storage) +
                                " in chunk " + std::to_string(key.second) + " of allocator " +
                                std::to_string(key.first)});
        }
      };
      if (it != active.begin()) report(std::prev(it)->second);
      if (auto next = std::next(it); next != active.end()) report(next->second);
    }
  }
  return issues;
}

}  // namespace galloc
