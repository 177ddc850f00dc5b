#include "galloc/extents.hpp"

#include <algorithm>

namespace galloc {

void split_at_tail_frees(const StorageObject& storage, Offset offset, std::vector<StorageExtent>& out) {
  out.assign(storage.tail_frees.size() + 1, {});
  // Each tail free ends, at its step, the bytes from its begin up to where the previous one
  // began; what no tail free takes is the head.
  Offset end = offset + storage.size;
  for (std::size_t k = 0; k < storage.tail_frees.size(); ++k) {
    const TailFree& tail = storage.tail_frees[k];
    const Offset begin = offset + tail.begin;
    if (begin < end) out[k + 1] = {{storage.live.lower, tail.step}, {begin, end}};
    end = std::min(end, begin);
  }
  out[0] = {storage.live, {offset, std::max(offset, end)}};
}

}  // namespace galloc
