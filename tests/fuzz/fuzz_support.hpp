// Helpers shared by the fuzz targets: a reader that turns fuzzer bytes into values (zeros once
// the bytes run out), a check that reports and aborts, and a decoder from bytes to a graph with
// buffer types and buffer ids, valid or not.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "galloc/galloc.hpp"

namespace galloc::fuzz {

// Reports a broken invariant and aborts, so libFuzzer saves the input as a crash.
[[noreturn]] inline void die(const std::string& message) {
  std::fprintf(stderr, "\nfuzz invariant broken: %s\n", message.c_str());
  std::abort();
}
inline void require(bool condition, const std::string& message) {
  if (!condition) die(message);
}

class ByteReader {
 public:
  ByteReader(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  [[nodiscard]] bool empty() const { return pos_ >= size_; }
  std::uint8_t u8() { return pos_ < size_ ? data_[pos_++] : 0; }
  std::uint16_t u16() { return static_cast<std::uint16_t>(u8() | (u8() << 8)); }
  std::uint64_t u64() {
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(u8()) << (8 * i);
    return v;
  }
  template <typename T, std::size_t N>
  const T& pick(const T (&table)[N]) {
    return table[u8() % N];
  }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

// A graph decoded from bytes, with its buffer types and ids. Nothing is checked: ids may be
// out of range, shapes may overflow, views may reach past their source, ops and types may be
// values ggml does not define, alignments may not be powers of two.
struct DecodedCase {
  Graph graph;
  std::vector<std::unique_ptr<NullBufferType>> owned;
  std::vector<const BufferType*> per_id;
  std::vector<BufferId> node_buffer_ids;
  std::vector<BufferId> leaf_buffer_ids;
  bool ids_in_range = true;      // every buffer id list is empty or one valid id per node/leaf
  bool alignments_valid = true;  // every buffer type's alignment is a power of two

  [[nodiscard]] BufferAssignment assignment() const { return {node_buffer_ids, leaf_buffer_ids}; }
};

// Whether every view that the graph uses (leafs, nodes, nodes' sources) has a root that the
// planner allocates (a leaf, a node, a node's source) or that has memory already. analyze_lifetimes
// rejects a graph where this fails (kInvalidArgument), as validate_graph cannot tell.
inline bool views_have_roots(const Graph& g) {
  std::vector<char> allocated(g.tensors.size(), 0);
  auto mark = [&](TensorId id) {
    if (id != kNoTensor && !g[id].is_view()) allocated[static_cast<std::size_t>(id)] = 1;
  };
  for (TensorId id : g.leafs) mark(id);
  for (TensorId id : g.nodes) {
    mark(id);
    for (TensorId src : g[id].src) mark(src);
  }
  auto ok = [&](TensorId id) {
    if (id == kNoTensor || !g[id].is_view()) return true;
    const TensorId root = g[id].view_src;
    return g[root].has_memory || allocated[static_cast<std::size_t>(root)] != 0;
  };
  for (TensorId id : g.leafs) {
    if (!ok(id)) return false;
  }
  for (TensorId id : g.nodes) {
    if (!ok(id)) return false;
    for (TensorId src : g[id].src) {
      if (!ok(src)) return false;
    }
  }
  return true;
}

inline DecodedCase decode_case(ByteReader& in, std::size_t max_tensors = 96) {
  static const Bytes kMaxSizes[] = {kUnlimited, kUnlimited, kUnlimited, 0, 1, 16, 64, 100, 4096, Bytes{1} << 20};
  static const DataType kTypes[] = {DataType::F32,
                                    DataType::F32,
                                    DataType::F16,
                                    DataType::I8,
                                    DataType::I32,
                                    DataType::Q4_0,
                                    DataType::Q8_K,
                                    static_cast<DataType>(99),
                                    static_cast<DataType>(-1),
                                    DataType::BF16};
  static const std::int64_t kNe[] = {1,
                                     1,
                                     1,
                                     2,
                                     3,
                                     7,
                                     16,
                                     33,
                                     64,
                                     100,
                                     0,
                                     -1,
                                     std::numeric_limits<std::int64_t>::max(),
                                     std::int64_t{1} << 31,
                                     std::int64_t{1} << 40,
                                     256};
  static const Bytes kNb[] = {0, 1, 2, 4, 7, 64, 256, Bytes{1} << 62, kUnlimited};
  static const Bytes kOffsets[] = {0, 0, 4, 8, 64, 100, Bytes{1} << 63, kUnlimited - 3};

  DecodedCase c;
  const int n_types = 1 + in.u8() % 3;
  for (int i = 0; i < n_types; ++i) {
    const std::uint8_t a = in.u8();
    const Bytes alignment = (a & 0xC0) == 0xC0 ? static_cast<Bytes>(a & 0x3F) : Bytes{1} << (a % 13);
    if (!is_power_of_two(alignment)) c.alignments_valid = false;
    auto type = std::make_unique<NullBufferType>(alignment, in.pick(kMaxSizes), "t" + std::to_string(i));
    if (in.u8() % 4 == 0) type->set_alloc_padding(in.u8());
    c.owned.push_back(std::move(type));
  }
  const int n_ids = 1 + in.u8() % 4;
  for (int i = 0; i < n_ids; ++i) c.per_id.push_back(c.owned[in.u8() % c.owned.size()].get());

  const std::size_t n_tensors = in.u8() % (max_tensors + 1);
  for (std::size_t i = 0; i < n_tensors && !in.empty(); ++i) {
    const std::uint8_t kind = in.u8();
    Tensor t;
    t.name = "t" + std::to_string(i);
    t.type = in.pick(kTypes);
    for (auto& n : t.ne) n = (kind & 0x80) ? in.pick(kNe) : (in.u8() % 4 == 0 ? in.pick(kNe) : 1);
    t.nb = contiguous_strides(t.type, t.ne);
    if ((kind & 0x40) != 0) {
      for (auto& b : t.nb) b = in.pick(kNb);
    }
    const std::uint8_t op = in.u8();
    t.op = static_cast<Op>(op % (static_cast<int>(Op::Count) + 3));
    const int n_src = in.u8() % 4;
    for (int s = 0; s < n_src; ++s) {
      const std::uint8_t b = in.u8();
      if (b < 220) {
        t.src[static_cast<std::size_t>(s)] = i == 0 ? kNoTensor : static_cast<TensorId>(i - 1 - b % i);
      } else {
        t.src[static_cast<std::size_t>(s)] = static_cast<TensorId>(static_cast<std::int16_t>(in.u16()));
      }
    }
    const std::uint8_t view = in.u8();
    if (view >= 160 && i > 0) {
      TensorId source = static_cast<TensorId>(i - 1 - view % i);
      if (view >= 250) source = static_cast<TensorId>(static_cast<std::int16_t>(in.u16()));
      const bool source_known = source >= 0 && static_cast<std::size_t>(source) < c.graph.tensors.size();
      // Mostly as ggml makes them (view_src the root, offsets added), sometimes raw.
      if (source_known && c.graph[source].is_view() && (view & 1)) {
        t.view_src = c.graph[source].view_src;
        t.view_offs = c.graph[source].view_offs + in.pick(kOffsets);
      } else {
        t.view_src = source;
        t.view_offs = in.pick(kOffsets);
      }
      if (t.src[0] == kNoTensor) t.src[0] = source;
      if (t.view_src >= 0 && static_cast<std::size_t>(t.view_src) < c.graph.tensors.size()) {
        t.has_memory = c.graph[t.view_src].has_memory;  // as ggml: a view of weights has data
      }
    }
    t.flags = (kind >> 2) & 0x0F;
    if ((kind & 0x03) == 0 && !t.is_view()) t.has_memory = (in.u8() & 1) != 0;
    switch (kind & 0x03) {
      case 0: c.graph.add(std::move(t)); break;
      case 1: c.graph.add_leaf(std::move(t)); break;
      default: c.graph.add_node(std::move(t)); break;
    }
  }
  // Occasionally list a tensor twice or a missing one.
  const std::uint8_t lists = in.u8();
  if (lists == 0xFE && !c.graph.nodes.empty()) c.graph.nodes.push_back(c.graph.nodes.front());
  if (lists == 0xFF) c.graph.leafs.push_back(static_cast<TensorId>(c.graph.tensors.size() + 3));

  if (n_ids > 1 || (lists & 1)) {
    const bool sloppy = (lists & 2) != 0;
    for (std::size_t i = 0; i < c.graph.nodes.size(); ++i) {
      c.node_buffer_ids.push_back(static_cast<BufferId>(in.u8() % (sloppy ? n_ids + 2 : n_ids)) -
                                  (sloppy && (lists & 4) ? 1 : 0));
    }
    for (std::size_t i = 0; i < c.graph.leafs.size(); ++i) {
      c.leaf_buffer_ids.push_back(static_cast<BufferId>(in.u8() % (sloppy ? n_ids + 2 : n_ids)));
    }
    if ((lists & 8) && !c.node_buffer_ids.empty()) c.node_buffer_ids.pop_back();
  }
  auto in_range = [&](const std::vector<BufferId>& ids, std::size_t expected) {
    if (ids.empty()) return true;
    if (ids.size() != expected) return false;
    for (BufferId b : ids) {
      if (b < 0 || b >= n_ids) return false;
    }
    return true;
  };
  c.ids_in_range =
      in_range(c.node_buffer_ids, c.graph.nodes.size()) && in_range(c.leaf_buffer_ids, c.graph.leafs.size());
  return c;
}

}  // namespace galloc::fuzz
