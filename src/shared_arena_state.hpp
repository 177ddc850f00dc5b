// SharedArena's state and the work on it: the chunks, who holds which bytes of them, each
// member's last placement and pending moves, and the repeat cache that lets a member's place
// repeat its last outcome. Private to the library; SharedArena's public functions forward here.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "galloc/buffer.hpp"
#include "galloc/shared_arena.hpp"
#include "galloc/status.hpp"
#include "galloc/types.hpp"

namespace galloc {

struct SharedArena::State {
  State(const BufferType& type, std::string name) : type_(type), name_(std::move(name)) {}

  // The public functions of the same names.
  [[nodiscard]] Bytes size() const;
  [[nodiscard]] std::vector<Bytes> chunk_sizes() const;
  [[nodiscard]] std::size_t member_count() const;
  [[nodiscard]] std::vector<const Buffer*> buffers() const;
  void set_checked(bool checked);
  MemberId add_member(std::string who);
  void remove_member(MemberId member);
  Status reserve(MemberId member, const std::vector<Bytes>& needs, const std::vector<AddressRange>& reads,
                 Bytes carried, bool keep_reads);
  Status place(MemberId member, const std::vector<Bytes>& needs, const std::vector<AddressRange>& reads,
               MemberPlacement& placement);
  [[nodiscard]] bool holds(MemberId member) const;

  // Bytes [begin, end) of one chunk, held by one member. Kept by chunk, not by address, so
  // that buffers without real addresses (NullBufferType) keep their chunks apart.
  struct Owned {
    const Buffer* chunk = nullptr;
    Bytes begin = 0;
    Bytes end = 0;
    MemberId owner = 0;
  };
  // The rest requires mutex_.
  // Grows chunk `chunk` to `size`, freeing the old one first, or retiring it (kept until
  // nothing kept lies in it) with `keep_old`.
  Status grow_chunk(std::size_t chunk, Bytes size, bool keep_old);
  // Grows chunk `chunk` to `size`, carrying the pieces of `keep` (in it, ascending, disjoint)
  // over to the new chunk's end: appends their moves. False, with nothing changed, when the
  // old chunk cannot be read from here.
  Result<bool> regrow_keeping(std::size_t chunk, Bytes size, const std::vector<Owned>& keep, std::vector<Move>& moves);
  // Whether `piece` lies within `member`'s last placement.
  [[nodiscard]] bool in_last_placement(MemberId member, const Owned& piece) const;
  // Copies the pieces of `keep` (in chunk `chunk`, ascending) to the chunk's end, packed: appends
  // their moves. False, with nothing changed, when the chunk cannot be read from here.
  bool move_to_end(std::size_t chunk, const std::vector<Owned>& keep, std::vector<Move>& moves);
  // The bytes of `pieces` (in `buffer`); false when the buffer cannot be read from here.
  static bool read_pieces(Buffer& buffer, const std::vector<Owned>& pieces, std::vector<std::vector<std::byte>>& bytes);
  // Writes `bytes` (of `pieces`, ascending, which lay at `from_base`) packed at `target`'s end,
  // still their owners', and appends their moves.
  void write_at_end(Buffer& target, std::byte* from_base, const std::vector<Owned>& pieces,
                    const std::vector<std::vector<std::byte>>& bytes, std::vector<Move>& moves);
  // Another member's memory that `member` reads, by chunk and offsets, in ascending order with
  // overlaps merged; an error for a read of memory no single member holds.
  // With `skip_stale`, such a read is left out instead.
  Status kept_reads(MemberId member, const std::vector<AddressRange>& reads, std::vector<Owned>& kept,
                    bool skip_stale = false) const;
  // Where a read of the graph's addresses lies now, after the member's pending moves.
  [[nodiscard]] AddressRange current(MemberId member, AddressRange read) const;
  static void compose(std::vector<Move>& moves, const std::vector<Move>& later);
  void take_over(const Owned& region);
  void forget_chunk(const Buffer* chunk);
  // place's steps. Frees the retired chunks in which nothing `kept` lies.
  void free_retired_chunks(const std::vector<Owned>& kept);
  // The offset of `need` bytes in chunk `chunk`: the lowest that overlaps nothing kept there,
  // or else 0, after what is kept was moved to the chunk's end or the chunk was grown.
  Result<Bytes> offset_in_chunk(std::size_t chunk, Bytes need, const std::vector<Owned>& kept,
                                std::vector<Move>& moves);
  // The lowest offset where `need` bytes fit in chunk `chunk` clear of `in_chunk`: 0, or just
  // above one of them, or at the chunk's top.
  std::optional<Bytes> lowest_clear_offset(std::size_t chunk, Bytes need, const std::vector<Owned>& in_chunk);
  // Checked mode: what `region` (in `chunk`) takes of other members' memory is filled with
  // 0xFF, so that a stale read of it shows.
  void poison_others(Buffer& chunk, const Owned& region);
  // The chunk (current or retired) that holds `range` whole, with the range as offsets in it.
  [[nodiscard]] std::optional<Owned> locate(AddressRange range) const;
  // The one owned piece that holds `piece` whole; null when none does.
  [[nodiscard]] const Owned* owner_of(const Owned& piece) const;
  [[nodiscard]] std::string describe(MemberId member) const;
  // What a member's last place was given and found, for repeating it (place, below).
  struct RepeatablePlace {
    std::vector<Bytes> needs;
    std::vector<AddressRange> reads;
    std::vector<Owned> owned_before;  // owned_ as the place found it
    std::vector<Owned> owned_after;   // and as it left it
    std::vector<PlacedChunk> chunks;
    std::uint64_t chunks_epoch = 0;  // chunks_epoch_ then
    bool valid = false;
  };
  // Whether a place of `member` now may be repeated or recorded for repeating: no poisoning to
  // do (checked mode), no retired chunk, no moves pending for it.
  [[nodiscard]] bool may_repeat(MemberId member) const;
  // True, with `placement` filled, when `member`'s last place was given the same and found the
  // arena as it is now: the place would come out the same.
  bool repeat_last_place(MemberId member, const std::vector<Bytes>& needs, const std::vector<AddressRange>& reads,
                         MemberPlacement& placement);

  const BufferType& type_;
  std::string name_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Buffer>> chunks_;
  std::vector<std::unique_ptr<Buffer>> retired_;  // old chunks still holding tensors being read
  std::vector<Owned> owned_;                      // who holds which memory, disjoint ranges
  std::vector<std::pair<MemberId, std::string>> members_;
  std::vector<std::pair<MemberId, std::vector<Owned>>> last_placed_;     // per member
  std::vector<std::pair<MemberId, std::vector<Move>>> pending_moves_;    // a reserve's, for the next place
  std::vector<std::pair<MemberId, RepeatablePlace>> repeatable_places_;  // per member, when it can repeat
  // Bumped (holding mutex_) before chunks_ or retired_ changes: buffers_epoch().
  std::atomic<std::uint64_t> chunks_epoch_{0};
  // Working lists of place and take_over (so also under mutex_), kept for their capacity.
  std::vector<Owned> kept_;
  std::vector<Owned> in_chunk_;
  std::vector<Owned> rest_;
  std::vector<Owned> regions_;
  std::vector<Bytes> shifts_;
  MemberId next_member_ = 1;
  std::atomic<std::uint64_t> growths_{0};
  std::atomic<std::uint64_t> generation_{1};  // bumped while holding mutex_
  bool checked_ = false;
};

}  // namespace galloc
