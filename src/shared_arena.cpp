#include "galloc/shared_arena.hpp"

#include <algorithm>
#include <functional>

#include "shared_arena_state.hpp"

namespace galloc {

namespace {

// std::erase_if, which the drop-in's C++17 cannot use.
template <typename Vector, typename Predicate>
void erase_where(Vector& v, Predicate predicate) {
  v.erase(std::remove_if(v.begin(), v.end(), predicate), v.end());
}

// A member's entry in a per-member list, made empty if it has none.
template <typename T>
T* entry_of(std::vector<std::pair<SharedArena::MemberId, T>>& list, SharedArena::MemberId member) {
  for (auto& [id, value] : list) {
    if (id == member) return &value;
  }
  list.emplace_back(member, T{});
  return &list.back().second;
}

// The same, or null when it has none.
template <typename T>
const T* find_entry(const std::vector<std::pair<SharedArena::MemberId, T>>& list, SharedArena::MemberId member) {
  for (const auto& [id, value] : list) {
    if (id == member) return &value;
  }
  return nullptr;
}

}  // namespace

Bytes SharedArena::State::size() const {
  std::lock_guard lock(mutex_);
  Bytes total = 0;
  for (const auto& chunk : chunks_) total += chunk->size();
  return total;
}

std::vector<Bytes> SharedArena::State::chunk_sizes() const {
  std::lock_guard lock(mutex_);
  std::vector<Bytes> sizes;
  for (const auto& chunk : chunks_) sizes.push_back(chunk->size());
  return sizes;
}

std::size_t SharedArena::State::member_count() const {
  std::lock_guard lock(mutex_);
  return members_.size();
}

std::vector<const Buffer*> SharedArena::State::buffers() const {
  std::lock_guard lock(mutex_);
  std::vector<const Buffer*> result;
  for (const auto& chunk : chunks_) result.push_back(chunk.get());
  for (const auto& chunk : retired_) result.push_back(chunk.get());
  return result;
}

void SharedArena::State::set_checked(bool checked) {
  std::lock_guard lock(mutex_);
  checked_ = checked;
  generation_.fetch_add(1, std::memory_order_release);
}

SharedArena::MemberId SharedArena::State::add_member(std::string who) {
  std::lock_guard lock(mutex_);
  const MemberId id = next_member_++;
  members_.emplace_back(id, std::move(who));
  return id;
}

void SharedArena::State::remove_member(MemberId member) {
  std::lock_guard lock(mutex_);
  generation_.fetch_add(1, std::memory_order_release);
  erase_where(owned_, [member](const Owned& o) { return o.owner == member; });
  erase_where(members_, [member](const auto& m) { return m.first == member; });
  erase_where(last_placed_, [member](const auto& m) { return m.first == member; });
  erase_where(pending_moves_, [member](const auto& m) { return m.first == member; });
  erase_where(repeatable_places_, [member](const auto& m) { return m.first == member; });
}

bool SharedArena::State::in_last_placement(MemberId member, const Owned& piece) const {
  const std::vector<Owned>* regions = find_entry(last_placed_, member);
  if (regions == nullptr) return false;
  return std::any_of(regions->begin(), regions->end(), [&piece](const Owned& r) {
    return r.chunk == piece.chunk && r.begin <= piece.begin && piece.end <= r.end;
  });
}

std::string SharedArena::State::describe(MemberId member) const {
  for (const auto& [id, who] : members_) {
    if (id == member) return who;
  }
  return "member " + std::to_string(member);
}

void SharedArena::State::forget_chunk(const Buffer* chunk) {
  chunks_epoch_.fetch_add(1, std::memory_order_release);
  // Nobody holds its memory any more; last_placed_ keeps its regions, so that holds() says so.
  erase_where(owned_, [chunk](const Owned& o) { return o.chunk == chunk; });
}

Status SharedArena::State::grow_chunk(std::size_t chunk, Bytes size, bool keep_old) {
  chunks_epoch_.fetch_add(1, std::memory_order_release);
  Bytes old_size = 0;
  std::unique_ptr<Buffer> kept;
  if (chunk < chunks_.size()) {
    old_size = chunks_[chunk]->size();
    if (keep_old) {
      kept = std::move(chunks_[chunk]);
    } else {
      // Free before allocating, as ggml does: never the old and the new chunk at once.
      forget_chunk(chunks_[chunk].get());
      chunks_[chunk].reset();
    }
  }
  auto fresh = type_.allocate(size);
  if (!fresh) {
    std::string what = "shared arena '" + name_ + "': failed to allocate chunk " + std::to_string(chunk) + " of " +
                       std::to_string(size) + " bytes (" + fresh.status().message() + ")";
    if (kept) {
      chunks_[chunk] = std::move(kept);
      return {fresh.status().code(), what + "; the arena is unchanged"};
    }
    if (chunk < chunks_.size()) {
      auto again = type_.allocate(old_size);
      if (again) {
        chunks_[chunk] = std::move(again).value();
        return {fresh.status().code(), what + "; its previous size was allocated again, its contents are gone"};
      }
      // Chunks stay contiguous from 0: this one and those after it go.
      for (std::size_t c = chunk + 1; c < chunks_.size(); ++c) forget_chunk(chunks_[c].get());
      chunks_.resize(chunk);
      return {fresh.status().code(), what +
                                         "; its previous size could not be allocated again either, so the arena "
                                         "holds " +
                                         std::to_string(chunk) + " chunks and grows again on the next alloc"};
    }
    return {fresh.status().code(), what};
  }
  if (kept) retired_.push_back(std::move(kept));
  if (chunk < chunks_.size()) {
    chunks_[chunk] = std::move(fresh).value();
  } else {
    chunks_.push_back(std::move(fresh).value());
  }
  growths_.fetch_add(1, std::memory_order_relaxed);
  return Status::ok();
}

AddressRange SharedArena::State::current(MemberId member, AddressRange read) const {
  for (const auto& [id, moves] : pending_moves_) {
    if (id != member) continue;
    for (const Move& move : moves) {
      if (read.begin >= move.from.begin && read.end <= move.from.end) {
        return {move.to + (read.begin - move.from.begin), move.to + (read.end - move.from.begin)};
      }
    }
  }
  return read;
}

void SharedArena::State::compose(std::vector<Move>& moves, const std::vector<Move>& later) {
  // An earlier move whose bytes moved again now ends where they are; later moves of bytes that
  // had not moved before follow (the graph's addresses were theirs).
  std::vector<bool> used(later.size(), false);
  for (Move& move : moves) {
    for (std::size_t i = 0; i < later.size(); ++i) {
      if (move.to >= later[i].from.begin && move.to < later[i].from.end) {
        move.to = later[i].to + (move.to - later[i].from.begin);
        move.buffer = later[i].buffer;
        used[i] = true;
        break;
      }
    }
  }
  for (std::size_t i = 0; i < later.size(); ++i) {
    if (!used[i]) moves.push_back(later[i]);
  }
}

Status SharedArena::State::kept_reads(MemberId member, const std::vector<AddressRange>& reads, std::vector<Owned>& kept,
                                      bool skip_stale) const {
  kept.clear();
  for (const AddressRange& graph_read : reads) {
    if (graph_read.begin == graph_read.end) continue;
    const AddressRange read = current(member, graph_read);
    const std::optional<Owned> piece = locate(read);
    if (!piece) continue;  // not arena memory: weights, a KV cache
    const Owned* owner = owner_of(*piece);
    // The member's own last placement, taken over since: it is placed again, not read (as in
    // a buffer of its own, its earlier tensors are not kept).
    if (owner == nullptr && (skip_stale || in_last_placement(member, *piece))) continue;
    if (owner == nullptr) {
      kept.clear();
      return failed_precondition(
          "shared arena '" + name_ + "': " + describe(member) + " reads " + std::to_string(piece->end - piece->begin) +
          " bytes at offset " + std::to_string(piece->begin) +
          " of the arena that no single member holds any more: another member's alloc has taken them over since "
          "they were written, or their member was freed. Members of one arena must run one after another, and a "
          "graph's output stays valid only until the alloc of the member that reads it");
    }
    // The member's own earlier tensors are not kept: a buffer of its own would not keep them.
    if (owner->owner == member) continue;
    kept.push_back({piece->chunk, piece->begin, piece->end, owner->owner});
  }
  std::sort(kept.begin(), kept.end(), [](const Owned& a, const Owned& b) {
    return a.chunk != b.chunk ? std::less<const Buffer*>()(a.chunk, b.chunk) : a.begin < b.begin;
  });
  // Merged in place: `merged` pieces lie at the front.
  std::size_t merged = 0;
  for (const Owned& k : kept) {
    // Overlapping pieces lie in one owned range, so have one owner; touching ones may not.
    if (merged > 0) {
      Owned& last = kept[merged - 1];
      if (last.chunk == k.chunk && (k.begin < last.end || (k.begin == last.end && k.owner == last.owner))) {
        last.end = std::max(last.end, k.end);
        continue;
      }
    }
    kept[merged++] = k;
  }
  kept.resize(merged);
  return Status::ok();
}

bool SharedArena::State::read_pieces(Buffer& buffer, const std::vector<Owned>& pieces,
                                     std::vector<std::vector<std::byte>>& bytes) {
  bytes.assign(pieces.size(), {});
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    bytes[i].resize(pieces[i].end - pieces[i].begin);
    if (!buffer.read(pieces[i].begin, bytes[i].size(), bytes[i].data())) return false;
  }
  return true;
}

void SharedArena::State::write_at_end(Buffer& target, std::byte* from_base, const std::vector<Owned>& pieces,
                                      const std::vector<std::vector<std::byte>>& bytes, std::vector<Move>& moves) {
  const Bytes alignment = std::max<Bytes>(type_.alignment(), 1);
  Bytes to = target.size() / alignment * alignment;
  std::vector<Move> done;
  for (std::size_t i = pieces.size(); i-- > 0;) {
    to -= align_up(bytes[i].size(), alignment);
    target.write(to, bytes[i].size(), bytes[i].data());
    // The bytes are still their writer's, at their new place.
    take_over({&target, to, to + bytes[i].size(), pieces[i].owner});
    done.push_back({{from_base + pieces[i].begin, from_base + pieces[i].end}, target.base() + to, &target});
  }
  compose(moves, done);
}

bool SharedArena::State::move_to_end(std::size_t chunk, const std::vector<Owned>& keep, std::vector<Move>& moves) {
  Buffer& buffer = *chunks_[chunk];
  std::vector<std::vector<std::byte>> bytes;
  if (!read_pieces(buffer, keep, bytes)) return false;
  write_at_end(buffer, buffer.base(), keep, bytes, moves);
  return true;
}

Result<bool> SharedArena::State::regrow_keeping(std::size_t chunk, Bytes size, const std::vector<Owned>& keep,
                                                std::vector<Move>& moves) {
  Buffer& old = *chunks_[chunk];
  std::vector<std::vector<std::byte>> bytes;
  if (!read_pieces(old, keep, bytes)) return false;
  std::byte* old_base = old.base();
  const Bytes old_size = old.size();
  // Free, then allocate: the bytes being kept wait in host memory meanwhile.
  if (Status grown = grow_chunk(chunk, size, /*keep_old=*/false); !grown) {
    // grow_chunk allocated the old size again if it could: put the kept bytes back there.
    if (chunk < chunks_.size() && chunks_[chunk]->size() == old_size) {
      Buffer& again = *chunks_[chunk];
      std::vector<Move> back;
      for (std::size_t i = 0; i < keep.size(); ++i) {
        again.write(keep[i].begin, bytes[i].size(), bytes[i].data());
        take_over({&again, keep[i].begin, keep[i].end, keep[i].owner});
        back.push_back({{old_base + keep[i].begin, old_base + keep[i].end}, again.base() + keep[i].begin, &again});
      }
      compose(moves, back);
      return Status{grown.code(), grown.message() + " (the tensors being read are in it)"};
    }
    return grown;
  }
  write_at_end(*chunks_[chunk], old_base, keep, bytes, moves);
  return true;
}

Status SharedArena::State::reserve(MemberId member, const std::vector<Bytes>& needs,
                                   const std::vector<AddressRange>& reads, Bytes carried, bool keep_reads) {
  std::lock_guard lock(mutex_);
  generation_.fetch_add(1, std::memory_order_release);
  const Bytes alignment = std::max<Bytes>(type_.alignment(), 1);
  std::vector<Owned> kept;
  // Without keep_reads (a reserve between runs) a stale read is the alloc's to report.
  GALLOC_RETURN_IF_ERROR(kept_reads(member, reads, kept, /*skip_stale=*/!keep_reads));
  carried = align_up(carried, alignment);
  for (const Owned& k : kept) carried += align_up(k.end - k.begin, alignment);
  std::vector<Move>& pending = *entry_of(pending_moves_, member);
  for (std::size_t c = 0; c < needs.size(); ++c) {
    const Bytes want = std::max(needs[c], std::min(needs[c] + carried, type_.max_size()));
    if (c < chunks_.size() && chunks_[c]->size() >= want) continue;
    std::vector<Owned> in_chunk;
    if (c < chunks_.size()) {
      for (const Owned& k : kept) {
        if (k.chunk == chunks_[c].get()) in_chunk.push_back(k);
      }
    }
    if (!in_chunk.empty()) {
      auto regrown = regrow_keeping(c, want, in_chunk, pending);
      if (!regrown) return regrown.status();
      if (*regrown) continue;
    }
    GALLOC_RETURN_IF_ERROR(grow_chunk(c, want, /*keep_old=*/!in_chunk.empty()));
  }
  return Status::ok();
}

Status SharedArena::State::place(MemberId member, const std::vector<Bytes>& needs,
                                 const std::vector<AddressRange>& reads, MemberPlacement& placement) {
  std::lock_guard lock(mutex_);
  generation_.fetch_add(1, std::memory_order_release);
  if (repeat_last_place(member, needs, reads, placement)) return Status::ok();
  // Only a place that finds no moves pending, no retired chunk and no poisoning to do, and
  // changes no chunk, can be repeated; it is noted as it goes.
  RepeatablePlace& last = *entry_of(repeatable_places_, member);
  last.valid = false;
  const std::uint64_t chunks_epoch = chunks_epoch_.load(std::memory_order_relaxed);
  const bool repeatable = may_repeat(member);
  if (repeatable) last.owned_before = owned_;
  // What the member reads from the arena must still be its writer's; it is kept.
  std::vector<Owned>& kept = kept_;
  GALLOC_RETURN_IF_ERROR(kept_reads(member, reads, kept));
  placement.chunks.clear();
  placement.moves.clear();
  placement.moves.swap(*entry_of(pending_moves_, member));
  free_retired_chunks(kept);
  std::vector<Owned>& regions = regions_;  // the member's last placement once all is done
  regions.clear();
  for (std::size_t c = 0; c < needs.size(); ++c) {
    const Bytes need = needs[c];
    if (c >= chunks_.size()) GALLOC_RETURN_IF_ERROR(grow_chunk(c, need, false));
    auto offset = offset_in_chunk(c, need, kept, placement.moves);
    if (!offset) return offset.status();
    Buffer* target = chunks_[c].get();
    const Owned region{target, *offset, *offset + need, member};
    if (checked_) poison_others(*target, region);
    if (need > 0) {
      take_over(region);
      regions.push_back(region);
    }
    placement.chunks.push_back({target, target->base() + *offset});
  }
  entry_of(last_placed_, member)->swap(regions);
  placement.generation = generation_.load(std::memory_order_relaxed);
  placement.reusable = placement.moves.empty() && retired_.empty();
  if (repeatable && placement.reusable && chunks_epoch_.load(std::memory_order_relaxed) == chunks_epoch) {
    last.needs = needs;
    last.reads = reads;
    last.owned_after = owned_;
    last.chunks = placement.chunks;
    last.chunks_epoch = chunks_epoch;
    last.valid = true;
  }
  return Status::ok();
}

void SharedArena::State::free_retired_chunks(const std::vector<Owned>& kept) {
  for (auto it = retired_.begin(); it != retired_.end();) {
    const Buffer* chunk = it->get();
    if (std::any_of(kept.begin(), kept.end(), [chunk](const Owned& k) { return k.chunk == chunk; })) {
      ++it;
      continue;
    }
    forget_chunk(chunk);
    it = retired_.erase(it);
  }
}

std::optional<Bytes> SharedArena::State::lowest_clear_offset(std::size_t chunk, Bytes need,
                                                             const std::vector<Owned>& in_chunk) {
  const Bytes alignment = std::max<Bytes>(type_.alignment(), 1);
  const Bytes size = chunks_[chunk]->size();
  auto clear = [&](Bytes offset) {
    if (offset + need > size) return false;
    return std::none_of(in_chunk.begin(), in_chunk.end(),
                        [&](const Owned& k) { return k.begin < offset + need && offset < k.end; });
  };
  if (clear(0)) return Bytes{0};
  std::vector<Bytes>& candidates = shifts_;
  candidates.clear();
  for (const Owned& k : in_chunk) candidates.push_back(align_up(k.end, alignment));
  if (size >= need) candidates.push_back((size - need) / alignment * alignment);
  std::sort(candidates.begin(), candidates.end());
  for (Bytes candidate : candidates) {
    if (clear(candidate)) return candidate;
  }
  return std::nullopt;
}

Result<Bytes> SharedArena::State::offset_in_chunk(std::size_t chunk, Bytes need, const std::vector<Owned>& kept,
                                                  std::vector<Move>& moves) {
  const Bytes alignment = std::max<Bytes>(type_.alignment(), 1);
  std::vector<Owned>& in_chunk = in_chunk_;
  in_chunk.clear();
  for (const Owned& k : kept) {
    if (k.chunk == chunks_[chunk].get()) in_chunk.push_back(k);
  }
  Bytes kept_bytes = 0;
  for (const Owned& k : in_chunk) kept_bytes += align_up(k.end - k.begin, alignment);
  // Members start as low as they can, so that they reuse the same pages (what the process
  // really touches) rather than spreading over the chunk: at offset 0, or else at the lowest
  // offset clear of what they read, which copies nothing (the chunk is as large as the
  // largest member, so this stays within pages the largest touches whenever it fits). Only
  // when no such offset exists is what they read moved to the chunk's end (host memory).
  if (const std::optional<Bytes> offset = lowest_clear_offset(chunk, need, in_chunk)) return *offset;
  const Bytes size = chunks_[chunk]->size();
  if (!in_chunk.empty() && need + kept_bytes <= size && move_to_end(chunk, in_chunk, moves)) return Bytes{0};
  // No room at all: a larger chunk, what is read carried over to its end (or, where the
  // memory cannot be read from here, left in the old chunk, retired until nothing reads it).
  const Bytes want = std::max({size, need + kept_bytes, need});
  if (!in_chunk.empty() && want <= type_.max_size()) {
    auto carried_over = regrow_keeping(chunk, want, in_chunk, moves);
    if (!carried_over) return carried_over.status();
    if (*carried_over) return Bytes{0};
  }
  GALLOC_RETURN_IF_ERROR(grow_chunk(chunk, std::max(need, std::min(want, type_.max_size())),
                                    /*keep_old=*/!in_chunk.empty()));
  return Bytes{0};
}

void SharedArena::State::poison_others(Buffer& chunk, const Owned& region) {
  for (const Owned& o : owned_) {
    if (o.chunk != &chunk || o.owner == region.owner) continue;
    const Bytes begin = std::max(o.begin, region.begin);
    const Bytes end = std::min(o.end, region.end);
    if (begin < end) chunk.fill(begin, end - begin, std::byte{0xFF});
  }
}

bool SharedArena::State::repeat_last_place(MemberId member, const std::vector<Bytes>& needs,
                                           const std::vector<AddressRange>& reads, MemberPlacement& placement) {
  // A place is a function of what it is given and of the arena's chunks, who holds what in
  // them, the member's pending moves, the retired chunks and the mode; may_repeat requires the
  // last three empty and off, and the rest is compared here.
  if (!may_repeat(member)) return false;
  const RepeatablePlace* last = find_entry(repeatable_places_, member);
  if (last == nullptr || !last->valid || last->chunks_epoch != chunks_epoch_.load(std::memory_order_relaxed)) {
    return false;
  }
  auto same_range = [](const AddressRange& a, const AddressRange& b) { return a.begin == b.begin && a.end == b.end; };
  auto same_owned = [](const Owned& a, const Owned& b) {
    return a.chunk == b.chunk && a.begin == b.begin && a.end == b.end && a.owner == b.owner;
  };
  if (last->needs != needs ||
      !std::equal(reads.begin(), reads.end(), last->reads.begin(), last->reads.end(), same_range) ||
      !std::equal(owned_.begin(), owned_.end(), last->owned_before.begin(), last->owned_before.end(), same_owned)) {
    return false;
  }
  owned_ = last->owned_after;
  placement.chunks = last->chunks;
  placement.moves.clear();
  placement.generation = generation_.load(std::memory_order_relaxed);
  placement.reusable = true;
  return true;
}

bool SharedArena::State::may_repeat(MemberId member) const {
  const std::vector<Move>* pending = find_entry(pending_moves_, member);
  return !checked_ && retired_.empty() && (pending == nullptr || pending->empty());
}

std::optional<SharedArena::State::Owned> SharedArena::State::locate(AddressRange range) const {
  auto within = [&range](const std::unique_ptr<Buffer>& chunk) -> std::optional<Owned> {
    std::byte* base = chunk->base();
    if (range.begin < base || range.end > base + chunk->size()) return std::nullopt;
    return Owned{chunk.get(), static_cast<Bytes>(range.begin - base), static_cast<Bytes>(range.end - base), 0};
  };
  for (const auto& chunk : chunks_) {
    if (auto found = within(chunk)) return found;
  }
  for (const auto& chunk : retired_) {
    if (auto found = within(chunk)) return found;
  }
  return std::nullopt;
}

const SharedArena::State::Owned* SharedArena::State::owner_of(const Owned& piece) const {
  for (const Owned& o : owned_) {
    if (o.chunk == piece.chunk && o.begin <= piece.begin && piece.end <= o.end) return &o;
  }
  return nullptr;
}

void SharedArena::State::take_over(const Owned& region) {
  std::vector<Owned>& rest = rest_;
  rest.clear();
  for (const Owned& o : owned_) {
    if (o.chunk != region.chunk || o.end <= region.begin || region.end <= o.begin) {
      rest.push_back(o);
      continue;
    }
    if (o.begin < region.begin) rest.push_back({o.chunk, o.begin, region.begin, o.owner});
    if (region.end < o.end) rest.push_back({o.chunk, region.end, o.end, o.owner});
  }
  rest.push_back(region);
  owned_.swap(rest);
}

bool SharedArena::State::holds(MemberId member) const {
  std::lock_guard lock(mutex_);
  auto entry =
      std::find_if(last_placed_.begin(), last_placed_.end(), [member](const auto& m) { return m.first == member; });
  if (entry == last_placed_.end()) return false;
  for (const Owned& region : entry->second) {
    const Owned* owner = owner_of(region);
    if (owner == nullptr || owner->owner != member) return false;
  }
  return true;
}

// The public functions: each forwards to the state.

SharedArena::SharedArena(const BufferType& type, std::string name)
    : state_(std::make_unique<State>(type, std::move(name))) {}

SharedArena::~SharedArena() = default;

const std::string& SharedArena::name() const { return state_->name_; }

const BufferType& SharedArena::type() const { return state_->type_; }

Bytes SharedArena::size() const { return state_->size(); }

std::vector<Bytes> SharedArena::chunk_sizes() const { return state_->chunk_sizes(); }

std::size_t SharedArena::member_count() const { return state_->member_count(); }

std::vector<const Buffer*> SharedArena::buffers() const { return state_->buffers(); }

std::uint64_t SharedArena::growth_count() const { return state_->growths_.load(std::memory_order_relaxed); }

std::uint64_t SharedArena::generation() const { return state_->generation_.load(std::memory_order_acquire); }

std::uint64_t SharedArena::buffers_epoch() const { return state_->chunks_epoch_.load(std::memory_order_acquire); }

void SharedArena::set_checked(bool checked) { state_->set_checked(checked); }

SharedArena::MemberId SharedArena::add_member(std::string who) { return state_->add_member(std::move(who)); }

void SharedArena::remove_member(MemberId member) { state_->remove_member(member); }

Status SharedArena::reserve(MemberId member, const std::vector<Bytes>& needs, const std::vector<AddressRange>& reads,
                            Bytes carried, bool keep_reads) {
  return state_->reserve(member, needs, reads, carried, keep_reads);
}

Result<SharedArena::MemberPlacement> SharedArena::place(MemberId member, const std::vector<Bytes>& needs,
                                                        const std::vector<AddressRange>& reads) {
  MemberPlacement placement;
  GALLOC_RETURN_IF_ERROR(state_->place(member, needs, reads, placement));
  return placement;
}

Status SharedArena::place(MemberId member, const std::vector<Bytes>& needs, const std::vector<AddressRange>& reads,
                          MemberPlacement& placement) {
  return state_->place(member, needs, reads, placement);
}

bool SharedArena::holds(MemberId member) const { return state_->holds(member); }

}  // namespace galloc
