// A compute buffer shared by graph allocators whose graphs never run at the same time.
//
// whisper.cpp keeps four graphs per state (conv, encode, cross, decode), each with its own
// allocator, so a process holds the sum of four compute buffers although only one graph runs
// at a time. Allocators that join one SharedArena take their buffers from it instead: the
// arena's chunks are as large as the largest member needs (plus what it reads from another
// member, below), not the sum.
//
//   auto arena = std::make_shared<galloc::SharedArena>(cpu, "whisper");
//   galloc::GraphAllocator conv({&cpu}), encode({&cpu});
//   conv.join(0, arena);  encode.join(0, arena);      // before their first reserve
//   conv.reserve(conv_graph);  encode.reserve(encode_graph);
//   conv.alloc(conv_graph);    /* compute conv */
//   encode.alloc(encode_graph); /* compute encode: it may read conv's output */
//
// The contract:
//   - Members of one arena never compute at the same time. A member's tensors are valid from
//     its alloc until another member's alloc, except the tensors the next member reads (memory
//     that exists, lying in the arena, such as whisper's conv output read by the encoder):
//     those stay valid until that member has run.
//   - A member may allocate its graph again (the same graph, or one rebuilt), reserve again, and
//     leave (GraphAllocator's destructor) at any time between other members' runs. Its own
//     earlier placement is never memory that exists for it: what it reads that lies only in its
//     own last placement is placed again, as in a buffer of its own (an adapter whose tensors
//     keep their addresses between allocs, as ggml's do, must say which are its own; the ggml
//     drop-in does).
//   - Where members go: as low as they can, so that they reuse the same pages: at offset 0, or
//     the lowest offset clear of what they read (copying nothing). Where no offset is clear, what
//     the member reads is moved to the chunk's end (host memory: Buffer::read and write); the
//     moved tensors' data is updated in the reader's graph and, through AllocSink::moved, in an
//     adapter's tensors. A reserve sizes the arena for the member's need plus the bytes it
//     reads that have no address yet or lie in the arena.
//   - What a member reads is recognised by address, so the arena's buffers must have real,
//     distinct addresses (not NullBufferType's fake one) when members read memory that exists.
//   - Every alloc checks what it reads from the arena: a tensor lying in memory that a later
//     member's alloc has partly taken over, or that spans two members' memory, fails the alloc
//     with a status instead of computing on stale bytes. A tensor that a later member's memory
//     covers whole cannot be told from that member's own output by its address; the checked
//     mode catches that case too (below).
//   - Checked mode (set_checked, for tests and debugging): each alloc fills the memory it takes
//     over from other members with 0xFF bytes (NaN as f32 and f16; where Buffer::fill can
//     write it, which is host memory), so a member that computes
//     after another member's alloc reads poison and its results are visibly wrong; and
//     GraphAllocator::check_allocation reports whether a member's tensors are still its own.
//   - Arenas are independent: members of different arenas may run at the same time on different
//     threads. One arena's bookkeeping is guarded by a mutex, so members may join and leave from
//     any thread.
//   - Growing frees the old chunk before allocating the larger one (never both at once, as
//     ggml). What the growing member reads of other members' memory is copied to the new
//     chunk's end (host memory) or, where memory cannot be read from here, read where it lies
//     in the old chunk, retired until nothing reads it; this holds for a reserve called
//     directly as for one an alloc makes. Everything else the old chunk held is gone: a reserve
//     between one member's alloc and the alloc of a third member that reads its output ends that
//     output (reserve before the sequence starts, as whisper.cpp and llama.cpp do, or let alloc
//     reserve). The arena cannot tell freed memory by its address; the ggml drop-in, which keeps
//     a freed chunk's handle, fails such a reader's alloc. Members place their own tensors again
//     at their next alloc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "galloc/buffer.hpp"
#include "galloc/status.hpp"
#include "galloc/types.hpp"

namespace galloc {

// A byte range [begin, end) of memory, by address.
struct AddressRange {
  std::byte* begin = nullptr;
  std::byte* end = nullptr;
};

class SharedArena {
 public:
  using MemberId = std::uint64_t;

  // Buffers come from `type`, which must outlive the arena. `name` appears in messages.
  SharedArena(const BufferType& type, std::string name);
  ~SharedArena();
  SharedArena(const SharedArena&) = delete;
  SharedArena& operator=(const SharedArena&) = delete;

  [[nodiscard]] const std::string& name() const;
  [[nodiscard]] const BufferType& type() const;
  // Bytes of the arena's current chunks (retired chunks not counted).
  [[nodiscard]] Bytes size() const;
  [[nodiscard]] std::vector<Bytes> chunk_sizes() const;
  [[nodiscard]] std::size_t member_count() const;
  // The arena's buffers now (current chunks, then retired ones), for an adapter that tells
  // memory the arena holds by its buffer rather than by address.
  [[nodiscard]] std::vector<const Buffer*> buffers() const;
  // How many times a chunk was allocated larger; an adapter logs the size when this changes.
  [[nodiscard]] std::uint64_t growth_count() const;
  // Changes with every reserve, place, member leaving and mode change, and nothing else: a
  // member whose placement is MemberPlacement::reusable and that finds the generation still
  // MemberPlacement::generation may keep that placement instead of placing again (the arena is as
  // it left it). No lock is taken.
  [[nodiscard]] std::uint64_t generation() const;
  // Changes whenever buffers() may answer otherwise (a chunk allocated, retired or freed), and
  // far less often than generation(): an adapter keeps what it learnt of buffers() while this
  // stands. No lock is taken.
  [[nodiscard]] std::uint64_t buffers_epoch() const;
  void set_checked(bool checked);

  // ---- for GraphAllocator (its members); the contract above is stated in their terms.

  // A new member's id; `who` names it in messages.
  MemberId add_member(std::string who);
  // Forgets a member: the memory it last held is no longer anyone's (reading it later fails).
  void remove_member(MemberId member);
  // Where bytes the graph knows at `from` are now: in `buffer`, at `to`.
  struct Move {
    AddressRange from;
    std::byte* to = nullptr;
    Buffer* buffer = nullptr;
  };
  // Makes chunk i at least needs[i] bytes, plus room for what the member reads: `carried`
  // bytes that have no address yet, and those of `reads` (as for place) that lie in the arena.
  // Nothing is placed. A grown chunk's contents are gone, and so is what members held there,
  // except the ranges of `reads` that are another member's: they are moved into the new chunk
  // (reported by the member's next place) or their chunk is retired. With `keep_reads` (an
  // alloc about to read them) a read of memory no member holds any more fails the reserve;
  // without, it is left for the alloc to report.
  Status reserve(MemberId member, const std::vector<Bytes>& needs, const std::vector<AddressRange>& reads = {},
                 Bytes carried = 0, bool keep_reads = false);
  // Places `member`'s chunks of needs[i] bytes. `reads` are the memory-that-exists ranges of the
  // member's graph; those in the arena must be another member's valid memory, and they are
  // kept, where they lie or moved.
  struct PlacedChunk {
    Buffer* buffer = nullptr;
    std::byte* base = nullptr;  // the member's offset 0
  };
  struct MemberPlacement {
    std::vector<PlacedChunk> chunks;  // per chunk
    std::vector<Move> moves;          // what the member reads that is elsewhere now (first match)
    std::uint64_t generation = 0;     // the arena's, right after this place
    // Placing again with the same needs and nothing to read would give the same (nothing was
    // moved and no retired chunk waits to be freed).
    bool reusable = false;
  };
  Result<MemberPlacement> place(MemberId member, const std::vector<Bytes>& needs,
                                const std::vector<AddressRange>& reads);
  // The same into `placement`, whose vectors keep their capacity: GraphAllocator places its
  // member on every alloc that follows another member's. Given what the member's last place
  // was given, in the arena as that place found it (whisper's encoder after its conv graph,
  // every time), it repeats that place's outcome without working it out again.
  Status place(MemberId member, const std::vector<Bytes>& needs, const std::vector<AddressRange>& reads,
               MemberPlacement& placement);
  // True if `member`'s memory from its last place is still all its own.
  [[nodiscard]] bool holds(MemberId member) const;

 private:
  // The chunks, who holds what in them, and the repeat cache (src/shared_arena_state.hpp).
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace galloc
