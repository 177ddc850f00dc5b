// The search structures behind DynamicAllocator's indexed mode (src/dynamic_allocator.cpp):
// they answer upstream's two block searches in O(log n) instead of a scan.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "galloc/types.hpp"

namespace galloc::detail {

// Free blocks + chunks above which DynamicAllocator's search trees replace its scans.
inline constexpr std::size_t kIndexThreshold = 128;

// A max segment tree over chunk ids: per chunk, the size of its largest inner block (0 for
// none). Finds the highest chunk whose largest inner block reaches a size: the chunk upstream's
// first loop settles on.
class HighestFitTree {
 public:
  void resize(std::size_t chunks) {
    if (chunks <= leaves_) return;
    std::size_t leaves = std::max<std::size_t>(leaves_, 16);
    while (leaves < chunks) leaves *= 2;
    std::vector<Bytes> grown(2 * leaves, 0);
    for (std::size_t i = 0; i < leaves_; ++i) grown[leaves + i] = max_[leaves_ + i];
    max_ = std::move(grown);
    leaves_ = leaves;
    for (std::size_t node = leaves_ - 1; node >= 1; --node) pull(node);
  }

  void set(std::size_t chunk, Bytes largest) {
    std::size_t node = leaves_ + chunk;
    max_[node] = largest;
    for (node /= 2; node >= 1; node /= 2) pull(node);
  }

  // The highest chunk with a value >= threshold, or -1. threshold >= 1, so chunks without
  // inner blocks (0) never match.
  [[nodiscard]] std::int64_t highest_at_least(Bytes threshold) const {
    if (leaves_ == 0 || max_[1] < threshold) return -1;
    std::size_t node = 1;
    while (node < leaves_) node = max_[2 * node + 1] >= threshold ? 2 * node + 1 : 2 * node;
    return static_cast<std::int64_t>(node - leaves_);
  }

 private:
  void pull(std::size_t node) { max_[node] = std::max(max_[2 * node], max_[2 * node + 1]); }

  std::size_t leaves_ = 0;
  std::vector<Bytes> max_;  // node 1 is the root; leaves at [leaves_, 2 * leaves_)
};

// The last block of every chunk that has one, ordered by (distance, chunk), where distance is
// high water - the block's offset (wrapping like upstream's size_t arithmetic). Each node
// carries the largest block size in its subtree, so "the first chunk at or after a distance
// whose last block holds a size" is one descent. A treap with one node per chunk id; the
// priorities are a hash of the id, so the shape is deterministic.
class TailTree {
 public:
  static constexpr int kNone = -1;

  void resize(std::size_t chunks) {
    while (nodes_.size() < chunks) {
      Node node;
      node.priority = mix(nodes_.size());
      nodes_.push_back(node);
    }
  }

  [[nodiscard]] bool contains(int chunk) const { return node(chunk).linked; }
  [[nodiscard]] Bytes distance(int chunk) const { return node(chunk).distance; }
  [[nodiscard]] Bytes size(int chunk) const { return node(chunk).size; }

  void insert(int chunk, Bytes distance, Bytes size) {
    Node& n = node(chunk);
    n.distance = distance;
    n.size = size;
    n.max_size = size;
    n.left = n.right = kNone;
    n.linked = true;
    root_ = insert(root_, chunk);
  }

  void erase(int chunk) {
    root_ = erase(root_, chunk);
    node(chunk).linked = false;
  }

  // The first chunk in (distance, chunk) order with distance >= `from` and a last block of
  // at least `size` bytes, or kNone.
  [[nodiscard]] int first_from(Bytes from, Bytes size) const { return first_from(root_, from, size); }
  // The last chunk in that order with distance < `before` and a last block of at least
  // `size` bytes, or kNone.
  [[nodiscard]] int last_before(Bytes before, Bytes size) const { return last_before(root_, before, size); }
  // The last chunk in that order with a last block of at least `size` bytes, or kNone.
  [[nodiscard]] int last(Bytes size) const { return last_in(root_, size); }

 private:
  struct Node {
    Bytes distance = 0;
    Bytes size = 0;
    Bytes max_size = 0;  // over the subtree
    std::uint64_t priority = 0;
    int left = kNone;
    int right = kNone;
    bool linked = false;
  };

  static std::uint64_t mix(std::uint64_t x) {  // splitmix64
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
  }

  Node& node(int i) { return nodes_[static_cast<std::size_t>(i)]; }
  [[nodiscard]] const Node& node(int i) const { return nodes_[static_cast<std::size_t>(i)]; }
  [[nodiscard]] bool reaches(int i, Bytes size) const { return i != kNone && node(i).max_size >= size; }

  [[nodiscard]] bool less(int a, int b) const {
    const Node& x = node(a);
    const Node& y = node(b);
    return x.distance != y.distance ? x.distance < y.distance : a < b;
  }

  void pull(int i) {
    Node& n = node(i);
    n.max_size = n.size;
    if (n.left != kNone) n.max_size = std::max(n.max_size, node(n.left).max_size);
    if (n.right != kNone) n.max_size = std::max(n.max_size, node(n.right).max_size);
  }

  // Splits t into the nodes ordered before `key` and the rest.
  void split(int t, int key, int& before, int& rest) {
    if (t == kNone) {
      before = rest = kNone;
      return;
    }
    if (less(t, key)) {
      split(node(t).right, key, node(t).right, rest);
      before = t;
    } else {
      split(node(t).left, key, before, node(t).left);
      rest = t;
    }
    pull(t);
  }

  int merge(int a, int b) {
    if (a == kNone) return b;
    if (b == kNone) return a;
    if (node(a).priority > node(b).priority) {
      node(a).right = merge(node(a).right, b);
      pull(a);
      return a;
    }
    node(b).left = merge(a, node(b).left);
    pull(b);
    return b;
  }

  int insert(int t, int key) {
    if (t == kNone) return key;
    if (node(key).priority > node(t).priority) {
      split(t, key, node(key).left, node(key).right);
      pull(key);
      return key;
    }
    if (less(key, t)) {
      node(t).left = insert(node(t).left, key);
    } else {
      node(t).right = insert(node(t).right, key);
    }
    pull(t);
    return t;
  }

  int erase(int t, int key) {
    if (t == kNone) return kNone;
    if (t == key) return merge(node(t).left, node(t).right);
    if (less(key, t)) {
      node(t).left = erase(node(t).left, key);
    } else {
      node(t).right = erase(node(t).right, key);
    }
    pull(t);
    return t;
  }

  // The first node of subtree t (in order) whose size reaches `size`.
  [[nodiscard]] int first_in(int t, Bytes size) const {
    if (!reaches(t, size)) return kNone;
    while (true) {
      const Node& n = node(t);
      if (reaches(n.left, size)) {
        t = n.left;
      } else if (n.size >= size) {
        return t;
      } else {
        t = n.right;
      }
    }
  }

  [[nodiscard]] int last_in(int t, Bytes size) const {
    if (!reaches(t, size)) return kNone;
    while (true) {
      const Node& n = node(t);
      if (reaches(n.right, size)) {
        t = n.right;
      } else if (n.size >= size) {
        return t;
      } else {
        t = n.left;
      }
    }
  }

  // Walks the search path of `from`; at most one first_in / last_in descent succeeds, so
  // both are O(depth).
  [[nodiscard]] int first_from(int t, Bytes from, Bytes size) const {
    if (!reaches(t, size)) return kNone;
    const Node& n = node(t);
    if (n.distance < from) return first_from(n.right, from, size);
    const int left = first_from(n.left, from, size);
    if (left != kNone) return left;
    if (n.size >= size) return t;
    return first_in(n.right, size);
  }

  [[nodiscard]] int last_before(int t, Bytes before, Bytes size) const {
    if (!reaches(t, size)) return kNone;
    const Node& n = node(t);
    if (n.distance >= before) return last_before(n.left, before, size);
    const int right = last_before(n.right, before, size);
    if (right != kNone) return right;
    if (n.size >= size) return t;
    return last_in(n.left, size);
  }

  std::vector<Node> nodes_;
  int root_ = kNone;
};

}  // namespace galloc::detail
