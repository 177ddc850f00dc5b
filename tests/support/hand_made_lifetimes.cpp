#include "support/hand_made_lifetimes.hpp"

#include <algorithm>

namespace galloc::testing {

GraphProblem make_lifetimes(const std::vector<TimedBuffer>& buffers, std::vector<AllocatorSpec> allocators) {
  GraphProblem lifetimes;
  lifetimes.allocators = std::move(allocators);
  for (std::size_t a = 0; a < lifetimes.allocators.size(); ++a) {
    lifetimes.buffer_allocator.push_back(static_cast<AllocatorId>(a));
  }
  struct Point {
    Step time;
    int kind;  // 0 free, 1 allocate
    std::size_t buffer;
  };
  std::vector<Point> points;
  for (std::size_t b = 0; b < buffers.size(); ++b) {
    points.push_back({buffers[b].lower, 1, b});
    points.push_back({buffers[b].upper, 0, b});
  }
  std::sort(points.begin(), points.end(), [](const Point& x, const Point& y) {
    if (x.time != y.time) return x.time < y.time;
    if (x.kind != y.kind) return x.kind < y.kind;
    return x.buffer < y.buffer;
  });
  lifetimes.storages.resize(buffers.size());
  for (std::size_t b = 0; b < buffers.size(); ++b) {
    lifetimes.storages[b].allocator = buffers[b].allocator;
    lifetimes.storages[b].size = buffers[b].size;
  }
  for (std::size_t i = 0; i < points.size(); ++i) {
    StorageObject& storage = lifetimes.storages[points[i].buffer];
    LifetimeEvent event;
    event.storage = static_cast<StorageId>(points[i].buffer);
    event.size = storage.size;
    event.kind = points[i].kind == 1 ? LifetimeEvent::Kind::kAllocate : LifetimeEvent::Kind::kFree;
    (points[i].kind == 1 ? storage.live.lower : storage.live.upper) = static_cast<Step>(i);
    lifetimes.events.push_back(event);
  }
  return lifetimes;
}

}  // namespace galloc::testing
