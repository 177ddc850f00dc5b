// ggml_cgraph -> galloc::Graph: the drop-in's conversion of ggml's tensors, ops and types,
// with a map back from galloc's tensor ids to ggml's tensors. Declarations; the definitions
// are in cgraph_conversion.cpp, which amalgamate.sh puts in the same translation unit.
#pragma once

#include "ggml-backend.h"
#include "ggml.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "galloc/graph.hpp"
#include "galloc/status.hpp"

namespace {

using galloc::BufferId;
using galloc::Bytes;
using galloc::TensorId;

// The late-2024 API's ggml_op_can_inplace: a subset of the later one's, which galloc
// follows.
bool late_2024_op_can_inplace(ggml_op op);

// ggml op -> galloc op, by name (the versions number their ops differently). The op only
// matters to galloc for in-place reuse (and NONE, CPY, SET_ROWS, SET, ACC for views), so an op
// galloc does not know becomes CUSTOM, which is never reused in place, as in every ggml
// version.
struct OpTable {
  std::array<galloc::Op, GGML_OP_COUNT> op{};
  [[nodiscard]] galloc::Op of(ggml_op o) const {
    return o < 0 || o >= GGML_OP_COUNT ? galloc::Op::Custom : op[static_cast<std::size_t>(o)];
  }
  OpTable();
};

// A loop over tensors takes the table once: a call per tensor would test the static's guard
// each time, and the compiler does not inline it.
const OpTable& op_table();

galloc::Op op_of(ggml_op op);

// The ops this ggml's ggml-alloc.c reuses in place, for every graph the drop-in converts.
galloc::OpSet make_inplace_ops();

const galloc::OpSet& this_ggml_inplace_ops();

// ggml type -> galloc type. galloc's DataType has ggml's numeric values; a type galloc does
// not know (whisper.rn 0.4.0-rc.10's Q4_0_4_4 family, say) maps to a known type with the
// same block size and block bytes, which is all the allocator reads from a type.
struct TypeTable {
  std::array<std::optional<galloc::DataType>, GGML_TYPE_COUNT> type{};
  [[nodiscard]] std::optional<galloc::DataType> of(ggml_type t) const {
    return t < 0 || t >= GGML_TYPE_COUNT ? std::nullopt : type[static_cast<std::size_t>(t)];
  }
  TypeTable();
};

const TypeTable& type_table();

// ------------------------------------------------------------------ graph conversion

// ggml tensor -> galloc id: open addressing on the pointer, like ggml's own hash set.
class TensorIds {
 public:
  void clear(std::size_t expected);
  // The id of `t`, or `next` (inserted) when `t` is new.
  [[gnu::always_inline]] TensorId find_or_insert(const ggml_tensor* t, TensorId next);
  [[nodiscard]] TensorId at(const ggml_tensor* t) const;

 private:
  struct Slot {
    const ggml_tensor* tensor = nullptr;
    TensorId id = galloc::kNoTensor;
  };
  [[nodiscard]] std::size_t index(const ggml_tensor* t) const;
  [[gnu::noinline]] void grow();
  std::vector<Slot> slots_ = std::vector<Slot>(64);
  std::size_t size_ = 0;
};

// What the allocator's last alloc_graph set on a leaf or a source outside the lists
// (tensor_alloc). In a shared arena such a tensor that still carries it is the allocator's own
// earlier placement, not memory that exists: it is placed again, as a fresh tensor would be.
// Told by value, so a record of a tensor that is gone is never followed. Nodes and views need no
// record (read_from_arena, forget_placement_in_arena).
struct OwnPlacement {
  void* data = nullptr;
  ggml_backend_buffer_t buffer = nullptr;
  std::uint64_t conversion = 0;  // Converted::conversion when the alloc wrote it
};

// A galloc graph and, per galloc tensor id, the ggml tensor it stands for.
struct Converted {
  Converted();

  galloc::Graph graph;
  std::vector<ggml_tensor*> ggml;
  TensorIds ids;

  // graph.tensors keeps its elements (and their names' storage): the conversion overwrites them
  // expected: the leafs and nodes; the last graph's tensor count (sources included) sizes the
  // id table too, so converting the same graph again never rehashes
  void clear(std::size_t expected);

  // Per tensor of the last completed convert_graph, the pointers its edges' ids came from
  // (src[0..GGML_MAX_SRC), then view_src): the same lists and the same edges give the same ids.
  // Only leafs and nodes (the first `listed` ids) have their sources followed; of the tensors
  // they read, only the view source (see convert_graph).
  using Edges = std::array<const ggml_tensor*, GGML_MAX_SRC + 1>;
  std::vector<Edges> edges;
  std::size_t listed = 0;
  bool edges_valid = false;
  // Tensors that the graph reaches only as a view's source (no leaf, node or node source) and
  // that have no memory yet: memory that exists elsewhere (another graph's output, as
  // whisper.cpp's encoder reads the conv graph's), resolved when alloc_graph meets the view.
  std::vector<TensorId> memory_elsewhere;
  // The tensors whose memory (a view's: its root's) lies in the shared arenas' buffers, as
  // the last conversion found them; none: alloc need not look.
  std::vector<TensorId> in_arena;
  // The tensors whose `data` fill_memory_details set (every other one's is nullptr), unless
  // data_anywhere: fill_details and a conversion of another topology may leave data on any.
  std::vector<TensorId> with_data;
  bool data_anywhere = true;
  // Per tensor id, for an allocator in a shared arena (track_own): what its last alloc_graph
  // set on the tensor. Conversions keep it by tensor across a change of topology.
  bool track_own = false;
  std::vector<OwnPlacement> own;
  // Counts the conversions that looked in the arenas: a record is the last alloc's while its
  // `conversion` is this one, so no conversion clears records (or reads those of tensors
  // outside the arenas, such as a graph llama.cpp built again).
  std::uint64_t conversion = 1;
  // Whether the last alloc_graph allocated this conversion's graph (see allocated_again).
  bool allocated = false;

  [[gnu::always_inline]] TensorId add(ggml_tensor* t);

  // The ggml tensor behind a tensor of `graph` (nullptr for a tensor of another graph).
  [[nodiscard]] ggml_tensor* ggml_of(const galloc::Tensor& tensor) const;
};

// has_memory follows what each caller of upstream treats as "already allocated".
enum class MemoryRule {
  kGraph,    // ggml_gallocr_is_allocated: data != NULL || buffer != NULL
  kContext,  // ggml_backend_alloc_ctx_tensors_from_buft: data != NULL
};

galloc::Status type_error(const ggml_tensor* t);

// false (and type_error's message) for a type galloc cannot represent; the message is only
// built then, so the check stays a table lookup on every alloc
inline bool set_type(const ggml_tensor* t, galloc::Tensor& g, const TypeTable& types);

bool has_memory(const ggml_tensor* t, MemoryRule rule);

// A graph of the same tensors as the last one (built again in the same context) has the same
// names at the same ids: comparing costs less than assigning.
[[gnu::always_inline]] inline void copy_name(const ggml_tensor* t, std::string& name);

// What convert_graph fills besides the structure. kFill: fill_details, names included;
// kFillButNames: the same with the names left empty (only messages and GALLOC_DUMP read them,
// and copying them is half of fill_details: a reserve leaves them out and fills them when it
// has something to say; empty, no message names a tensor of an earlier graph); kSkip: neither.
enum class Details { kFill, kFillButNames, kSkip };

// What only planning (and GALLOC_DUMP) reads: name, shape, view offset and data. The
// reservation check of GraphAllocator::alloc reads none of them (it asks the buffer type for
// each tensor's size, which asks ggml about the ggml tensor), so alloc_graph fills them only
// when it has to reserve again.
void fill_details(Converted& out, Details details = Details::kFill);

// The buffer where the memory of `t` lies (a view's: its root's); null when it has none yet.
[[gnu::always_inline]] inline ggml_backend_buffer_t memory_buffer(const ggml_tensor* t);

// The last two buffers found not to be a shared arena's: a llama.cpp graph meets its weights'
// and its KV cache's in turn.
using BuffersOutside = std::array<ggml_backend_buffer_t, 2>;

// Whether `buffer` is one of the buffers [begin, end). `outside` remembers the last two
// buffers found not to be one. Inlined: it runs for every tensor of every alloc_graph in an
// arena, and most answer at the first test (a node not allocated yet, a weight, the cache).
[[gnu::always_inline]] inline bool in_buffers(ggml_backend_buffer_t buffer, const ggml_backend_buffer_t* begin,
                                              const ggml_backend_buffer_t* end, BuffersOutside& outside);

// What a shared arena reads at alloc (GraphAllocator::existing_memory), which alloc_graph's
// conversion otherwise skips: shape, view offset and data of the tensors in
// Converted::in_arena. The rest (weights, caches) keeps no data: it is none of the arena's
// business, and a buffer type without real addresses could make it look like the arena's.
// Only the tensors whose data the last call set are cleared, so the usual graph, with a few
// tensors in the arena or none, costs a few stores.
void fill_memory_details(Converted& out);

galloc::Status fill_tensors(Converted& out, MemoryRule rule, bool with_sources);

// Leafs get the first ids, then nodes, in list order; then the tensors they read (their
// sources and view sources) and those tensors' view sources, in the order they are found. The
// same graph topology gives the same ids. The sources of a tensor that is no leaf or node are
// not followed: they may be a whole other graph (whisper's cross graph reads the encoder's
// output, whose sources are the encoder's 200 nodes), and ggml-alloc reads them only for an
// input tensor with an op it reuses in place, which llama.cpp, whisper.cpp and ggml-backend's
// scheduler do not make (their inputs are new tensors).
// Each tensor's structure (type, op, sources, view source, flags, memory) is written as its
// sources are found, one hash lookup per edge; kSkip leaves the details to fill_details
// except, for the tensors in `arena_buffers` (a shared arena's), fill_memory_details'.
// kUnchanged: the arenas are as they were when the last conversion (of the same allocator)
// found none of the graph's tensors in them, so a graph of the same topology has none there
// either and is not searched; a graph of another topology always is.
enum class Arenas { kSearch, kUnchanged };
galloc::Status convert_graph(const ggml_cgraph* cgraph, Converted& out, Details details = Details::kFill,
                             const std::vector<ggml_backend_buffer_t>& arena_buffers = {},
                             Arenas arenas = Arenas::kSearch);

// Whether `cgraph` has the last conversion's leaf and node lists (the ids' first tensors).
inline bool same_lists(const ggml_cgraph* cgraph, const Converted& out);

// Whether tensor `t` has the edges the last conversion found: its sources (a leaf's or
// node's, `listed`) and its view source.
[[gnu::always_inline]] inline bool same_edges(const ggml_tensor* t, const Converted::Edges& edges, bool listed);

// In a shared arena, before the memory of `t` is looked at, where `t` has a buffer of the
// arenas (the allocator's own placements all do): a view is initialised again from its source
// (which may be the allocator's own, placed again, or another member's output, moved), and a
// tensor that still carries what this allocator's last alloc gave it (`own`, a record of
// `conversion`) is placed again.
[[gnu::always_inline]] inline void forget_placement_in_arena(ggml_tensor* t, const OwnPlacement& own,
                                                             std::uint64_t conversion);

// In a shared arena, where `t` (tensor id `id` of a graph with `n_leafs` leafs and `listed`
// leafs and nodes) has its memory in the arena's buffers: whether it is what the graph reads
// there (another member's output, or a view of it). A node is computed by the graph, so its
// old bytes are nobody's input: it is placed again, whoever left it there (a member that read
// it may have moved it).
[[gnu::always_inline]] inline bool read_from_arena(ggml_tensor* t, std::size_t id, std::size_t n_leafs,
                                                   std::size_t listed);

// A graph with the last conversion's topology (the same leaf and node lists, the same
// source and view source pointers in every tensor) gets the same ids, so only the fields
// that are not edges are read again; without the hash lookups this is most of the gap to
// upstream's alloc_graph, which rebuilds a ggml graph of the same shape every time.
// false (and nothing of `out` to rely on but its ids) when the topology differs. With kArena
// (the allocator is in a shared arena) it places the allocator's own earlier tensors again
// and, with `search`, counts the tensors with memory of their own in `arena_buffers` (a
// view's root is a tensor of the graph too); only when there are any does
// fill_memory_details write theirs: usually there are none. A separate instance keeps the
// loop of the usual case as tight as it was.
// Defined in cgraph_conversion.cpp, whose convert_graph makes both instances.
template <bool kArena>
bool reconvert_same_topology(const ggml_cgraph* cgraph, Converted& out,
                             const std::vector<ggml_backend_buffer_t>& arena_buffers, bool search,
                             galloc::Status& status);

// Whether `cgraph` is the graph of the last conversion (the same lists and edges), allocated
// by the last alloc_graph (Converted::allocated), with every tensor still holding memory (a
// view: a buffer, or a source without one): the usual ggml loop, one graph allocated again
// and again. Upstream then places nothing, and neither would the walk: the tensors the
// graph reads all have memory, which it keeps, as upstream does.
bool allocated_again(const ggml_cgraph* cgraph, const Converted& out);

// Sets has_memory on the tensors the graph reaches only as a view's source and that have no
// memory (Converted::memory_elsewhere). Leafs and nodes have the first ids.
void mark_memory_elsewhere(Converted& out);

// The tensors of a context, in context order (their ids are 0..n-1), plus the view sources
// they reach (which may live in another context). No nodes or leafs.
galloc::Status convert_context(ggml_context* ctx, Converted& out, std::size_t& n_context);

}  // namespace
