// Fuzz target: sequences of C API calls decoded from bytes, over a few slots of graphs, buffer
// types and allocators, with NULL handles, NULL out-pointers, unknown type and op names, and
// tensor, buffer and source ids out of range. No call may crash, every failure must come with a
// message, and everything is freed at the end (LeakSanitizer checks). The harness keeps the
// API's own rules that C cannot check: buffer types outlive the allocators that use them, id
// arrays are as long as the graph's node and leaf lists, `sizes` holds one entry per type.
// The exact strategy is left out: through the C API it searches for its default second.
#include <array>
#include <string>
#include <vector>

#include "fuzz_support.hpp"
#include "galloc/galloc.h"

using galloc::fuzz::require;

namespace {

constexpr int kSlots = 4;

struct Slots {
  std::array<galloc_graph*, kSlots> graphs{};
  std::array<galloc_buffer_type*, kSlots> types{};
  std::array<galloc_allocator*, kSlots> allocators{};
  std::array<int32_t, kSlots> allocator_types{};                       // n_types of each allocator
  std::array<std::array<galloc_buffer_type*, kSlots>, kSlots> uses{};  // types each allocator uses

  bool type_in_use(galloc_buffer_type* type) const {
    for (int a = 0; a < kSlots; ++a) {
      if (!allocators[a]) continue;
      for (galloc_buffer_type* used : uses[a]) {
        if (used == type) return true;
      }
    }
    return false;
  }
  ~Slots() {
    for (auto*& a : allocators) galloc_allocator_free(a);
    for (auto*& g : graphs) galloc_graph_free(g);
    for (auto*& t : types) galloc_buffer_type_free(t);
  }
};

void check_status(galloc_status status, const char* call) {
  require(status >= GALLOC_OK && status <= GALLOC_ERROR_INTERNAL, std::string(call) + ": unknown status");
  require(status != GALLOC_ERROR_INTERNAL, std::string(call) + ": internal error: " + galloc_last_error());
  if (status != GALLOC_OK) require(galloc_last_error()[0] != '\0', std::string(call) + ": failed without a message");
  require(galloc_status_name(status) != nullptr, "status name is NULL");
}

int32_t tensor_id(galloc::fuzz::ByteReader& in, int32_t n) {
  const std::uint8_t b = in.u8();
  if (b < 200 && n > 0) return static_cast<int32_t>(b % n);
  if (b < 210) return -1;
  if (b < 220) return n;
  return static_cast<int32_t>(in.u16()) - 32768;
}

galloc_tensor_desc random_desc(galloc::fuzz::ByteReader& in, int32_t n_tensors) {
  static const char* kTypes[] = {"f32", "f32", "f16", "i8", "i32", "q4_0", "q8_K", "bogus", "", nullptr};
  static const char* kOps[] = {"NONE", "ADD",      "MUL",      "SCALE", "MUL_MAT", "VIEW", "RESHAPE",
                               "CPY",  "SET_ROWS", "SOFT_MAX", "CONT",  "PERMUTE", "nope", nullptr};
  // Dimensions 0 and 1 stay small (CPU buffer types really allocate); 2 and 3 are 1 or absurd
  // (more than ASan's 1 TiB, or overflowing): those must fail as statuses, quickly.
  static const int64_t kNe[] = {1, 1, 2, 3, 7, 16, 33, 64, 100, 0, -1, 1000};
  static const int64_t kHuge[] = {1, 1, 1, 0, int64_t{1} << 40, INT64_MAX, -1};
  static const size_t kNb[] = {0, 1, 4, 64, 4096, size_t{1} << 41, SIZE_MAX};
  static const char* kNames[] = {nullptr, "x", "a tensor with a long name", ""};
  galloc_tensor_desc d = galloc_tensor_desc_default();
  d.name = in.pick(kNames);
  d.type = in.pick(kTypes);
  d.op = in.pick(kOps);
  const std::uint8_t shape = in.u8();
  for (int i = 0; i < 2; ++i) d.ne[i] = (shape >> i) & 1 ? in.pick(kNe) : 1;
  for (int i = 2; i < GALLOC_MAX_DIMS; ++i) d.ne[i] = (shape >> i) & 1 ? in.pick(kHuge) : 1;
  if (shape & 0x80) {
    for (auto& nb : d.nb) nb = in.pick(kNb);
  }
  const int n_src = in.u8() % 4;
  for (int s = 0; s < n_src; ++s) d.src[s] = tensor_id(in, n_tensors);
  if (in.u8() % 4 == 0) {
    d.view_src = tensor_id(in, n_tensors);
    d.view_offs = in.u8() % 2 ? 0 : in.pick(kNb);
  }
  d.flags = in.u8() % 16;
  d.has_memory = in.u8() % 5 == 0;
  return d;
}

int32_t tensor_count(const galloc_graph* graph, int32_t* nodes = nullptr, int32_t* leafs = nullptr) {
  int32_t n = 0, n_nodes = 0, n_leafs = 0;
  if (graph) galloc_graph_counts(graph, &n, &n_nodes, &n_leafs);
  if (nodes) *nodes = n_nodes;
  if (leafs) *leafs = n_leafs;
  return n;
}

// An id array for reserve/measure: NULL, or one id per node (leaf), mostly in range.
std::vector<int32_t> buffer_ids(galloc::fuzz::ByteReader& in, int32_t count, int32_t n_types) {
  std::vector<int32_t> ids(static_cast<std::size_t>(count));
  for (auto& id : ids) {
    const std::uint8_t b = in.u8();
    id = b < 230 ? static_cast<int32_t>(b % std::max(n_types, 1)) : static_cast<int32_t>(b) - 240;
  }
  return ids;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  galloc::fuzz::ByteReader in(data, size);
  Slots s;
  static const char* kStrategies[] = {nullptr, "ggml", "greedy", "best", "bogus", ""};
  for (int step = 0; step < 256 && !in.empty(); ++step) {
    const int slot = in.u8() % kSlots;
    switch (in.u8() % 18) {
      case 0:
        galloc_graph_free(s.graphs[slot]);
        s.graphs[slot] = galloc_graph_new();
        require(s.graphs[slot] != nullptr, "galloc_graph_new returned NULL");
        break;
      case 1:
        galloc_graph_free(s.graphs[slot]);
        s.graphs[slot] = nullptr;
        break;
      case 2:
      case 3:
      case 4: {
        galloc_graph* g = s.graphs[slot];
        const galloc_tensor_desc d = random_desc(in, tensor_count(g));
        int32_t id = -7;
        const bool with_out = in.u8() % 4 != 0;
        const bool with_desc = in.u8() % 16 != 0;
        const galloc_tensor_desc* desc = with_desc ? &d : nullptr;
        int32_t* out = with_out ? &id : nullptr;
        const std::uint8_t which = in.u8() % 3;
        galloc_status st = which == 0   ? galloc_graph_add_tensor(g, desc, out)
                           : which == 1 ? galloc_graph_add_node(g, desc, out)
                                        : galloc_graph_add_leaf(g, desc, out);
        check_status(st, "galloc_graph_add_*");
        if (st == GALLOC_OK && with_out) require(id == tensor_count(g) - 1, "add returned a wrong id");
        if (!g || !with_desc) require(st != GALLOC_OK, "add with NULL graph or desc succeeded");
        break;
      }
      case 5: {
        int32_t a = 0, b = 0, c = 0;
        const std::uint8_t mask = in.u8();
        check_status(galloc_graph_counts(s.graphs[slot], mask & 1 ? &a : nullptr, mask & 2 ? &b : nullptr,
                                         mask & 4 ? &c : nullptr),
                     "galloc_graph_counts");
        break;
      }
      case 6: {
        void* data_ptr = nullptr;
        const bool with_out = in.u8() % 8 != 0;
        check_status(galloc_graph_tensor_data(s.graphs[slot], tensor_id(in, tensor_count(s.graphs[slot])),
                                              with_out ? &data_ptr : nullptr),
                     "galloc_graph_tensor_data");
        break;
      }
      case 7:
      case 8: {
        if (s.types[slot] && s.type_in_use(s.types[slot])) break;
        galloc_buffer_type_free(s.types[slot]);
        static const size_t kAlign[] = {1, 4, 8, 16, 64, 4096, 0, 3, 48};
        static const size_t kMax[] = {0, 0, 16, 64, 256, 4096, 1 << 20};
        const size_t alignment = in.pick(kAlign);
        const size_t max_size = in.pick(kMax);
        s.types[slot] = (in.u8() & 1) ? galloc_buffer_type_new_cpu(alignment, max_size)
                                      : galloc_buffer_type_new_null(alignment, max_size, in.u8() % 6);
        if (!galloc::is_power_of_two(alignment)) {
          require(s.types[slot] == nullptr, "a buffer type with alignment " + std::to_string(alignment) + " was made");
        } else {
          require(s.types[slot] != nullptr, "a buffer type was not made: " + std::string(galloc_last_error()));
        }
        break;
      }
      case 9:
        if (s.type_in_use(s.types[slot])) break;
        galloc_buffer_type_free(s.types[slot]);
        s.types[slot] = nullptr;
        break;
      case 10: {
        galloc_allocator_free(s.allocators[slot]);
        s.allocators[slot] = nullptr;
        std::array<galloc_buffer_type*, kSlots> list{};
        const int n = in.u8() % (kSlots + 1);
        for (int i = 0; i < n; ++i) list[static_cast<std::size_t>(i)] = s.types[in.u8() % kSlots];
        const std::uint8_t how = in.u8();
        const int32_t n_types = how % 8 == 0 ? -1 : n;
        galloc_allocator* a = reinterpret_cast<galloc_allocator*>(0x1);
        galloc_status st = galloc_allocator_new(how % 16 == 1 ? nullptr : list.data(), n_types, in.pick(kStrategies),
                                                how % 32 == 2 ? nullptr : &a);
        check_status(st, "galloc_allocator_new");
        if (how % 32 == 2) break;
        if (st != GALLOC_OK) {
          require(a == nullptr, "a failed galloc_allocator_new left a handle");
          break;
        }
        s.allocators[slot] = a;
        s.allocator_types[slot] = n_types;
        s.uses[slot] = list;
        break;
      }
      case 11:
        galloc_allocator_free(s.allocators[slot]);
        s.allocators[slot] = nullptr;
        break;
      case 12:
      case 13: {
        galloc_allocator* a = s.allocators[slot];
        galloc_graph* g = s.graphs[in.u8() % kSlots];
        int32_t n_nodes = 0, n_leafs = 0;
        tensor_count(g, &n_nodes, &n_leafs);
        const std::uint8_t how = in.u8();
        std::vector<int32_t> node_ids = buffer_ids(in, n_nodes, a ? s.allocator_types[slot] : 1);
        std::vector<int32_t> leaf_ids = buffer_ids(in, n_leafs, a ? s.allocator_types[slot] : 1);
        const int32_t* nodes = how & 1 ? node_ids.data() : nullptr;
        const int32_t* leafs = how & 2 ? leaf_ids.data() : nullptr;
        if (how & 4) {
          std::vector<size_t> sizes(static_cast<std::size_t>(a ? s.allocator_types[slot] : 1) + 1);
          check_status(galloc_allocator_measure(a, g, nodes, leafs, how & 8 ? nullptr : sizes.data()),
                       "galloc_allocator_measure");
        } else {
          check_status(galloc_allocator_reserve(a, g, nodes, leafs), "galloc_allocator_reserve");
        }
        break;
      }
      case 14:
        check_status(galloc_allocator_alloc(s.allocators[slot], s.graphs[in.u8() % kSlots]), "galloc_allocator_alloc");
        break;
      case 15: {
        size_t out = 0;
        const int32_t id = static_cast<int32_t>(in.u8() % 8) - 2;
        check_status(galloc_allocator_buffer_size(s.allocators[slot], id, in.u8() % 8 ? &out : nullptr),
                     "galloc_allocator_buffer_size");
        break;
      }
      case 16: {
        int32_t buffer = 0, chunk = 0;
        size_t offset = 0;
        const std::uint8_t mask = in.u8();
        check_status(
            galloc_allocator_tensor_placement(s.allocators[slot], tensor_id(in, 64), mask & 1 ? &buffer : nullptr,
                                              mask & 2 ? &chunk : nullptr, mask & 4 ? &offset : nullptr),
            "galloc_allocator_tensor_placement");
        break;
      }
      case 17:
        // Any int: galloc_status spans int (GALLOC_STATUS_MIN/MAX_ENUM_), as a C caller's may.
        require(galloc_status_name(static_cast<galloc_status>(
                    static_cast<std::int32_t>(static_cast<std::uint32_t>(in.u64())))) != nullptr,
                "galloc_status_name returned NULL");
        require(galloc_last_error() != nullptr, "galloc_last_error returned NULL");
        break;
    }
  }
  return 0;
}
