#include "galloc/shared_arena.hpp"

#include <algorithm>

namespace galloc {

SharedArena::SharedArena(const BufferType& type, std::string name) : type_(type), name_(std::move(name)) {}

SharedArena::~SharedArena() = default;

Bytes SharedArena::size() const {
  std::lock_guard lock(mutex_);
  Bytes total = 0;
  for (const auto& chunk : chunks_) total += chunk->size();
  return total;
}

std::vector<Bytes> SharedArena::chunk_sizes() const {
  std::lock_guard lock(mutex_);
  std::vector<Bytes> sizes;
  for (const auto& chunk : chunks_) sizes.push_back(chunk->size());
  return sizes;
}

std::size_t SharedArena::member_count() const {
  std::lock_guard lock(mutex_);
  return members_.size();
}

std::uint64_t SharedArena::growth_count() const {
  std::lock_guard lock(mutex_);
  return growths_;
}

void SharedArena::set_checked(bool checked) {
  std::lock_guard lock(mutex_);
  checked_ = checked;
}

bool SharedArena::checked() const {
  std::lock_guard lock(mutex_);
  return checked_;
}

SharedArena::MemberId SharedArena::add_member(std::string who) {
  std::lock_guard lock(mutex_);
  const MemberId id = next_member_++;
  members_.emplace_back(id, std::move(who));
  return id;
}

void SharedArena::remove_member(MemberId member) {
  std::lock_guard lock(mutex_);
  std::erase_if(owned_, [member](const Owned& o) { return o.owner == member; });
  std::erase_if(members_, [member](const auto& m) { return m.first == member; });
  std::erase_if(last_placed_, [member](const auto& m) { return m.first == member; });
}

std::string SharedArena::describe(MemberId member) const {
  for (const auto& [id, who] : members_) {
    if (id == member) return who;
  }
  return "member " + std::to_string(member);
}

void SharedArena::forget_chunk(const Buffer* chunk) {
  std::erase_if(owned_, [chunk](const Owned& o) { return o.chunk == chunk; });
  for (auto& [id, regions] : last_placed_) {
    std::erase_if(regions, [chunk](const Owned& o) { return o.chunk == chunk; });
  }
}

Status SharedArena::grow_chunk(std::size_t chunk, Bytes size, bool keep_old) {
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
      return {fresh.status().code(), what + "; its previous size could not be allocated again either, so the arena "
                                            "holds " + std::to_string(chunk) + " chunks and grows again on the next alloc"};
    }
    return {fresh.status().code(), what};
  }
  if (kept) retired_.push_back(std::move(kept));
  if (chunk < chunks_.size()) {
    chunks_[chunk] = std::move(fresh).value();
  } else {
    chunks_.push_back(std::move(fresh).value());
  }
  ++growths_;
  return Status::ok();
}

Status SharedArena::reserve(MemberId member, const std::vector<Bytes>& needs, const std::vector<AddressRange>& reads) {
  std::lock_guard lock(mutex_);
  for (std::size_t c = 0; c < needs.size(); ++c) {
    if (c < chunks_.size() && chunks_[c]->size() >= needs[c]) continue;
    bool keep_old = false;
    for (const AddressRange& read : reads) {
      const std::optional<Owned> piece = locate(read);
      const Owned* owner = piece ? owner_of(*piece) : nullptr;
      if (c < chunks_.size() && owner != nullptr && owner->owner != member && piece->chunk == chunks_[c].get()) {
        keep_old = true;
      }
    }
    GALLOC_RETURN_IF_ERROR(grow_chunk(c, needs[c], keep_old));
  }
  return Status::ok();
}

std::optional<SharedArena::Owned> SharedArena::locate(AddressRange range) const {
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

const SharedArena::Owned* SharedArena::owner_of(const Owned& piece) const {
  for (const Owned& o : owned_) {
    if (o.chunk == piece.chunk && o.begin <= piece.begin && piece.end <= o.end) return &o;
  }
  return nullptr;
}

void SharedArena::take_over(const Owned& region) {
  std::vector<Owned> rest;
  for (const Owned& o : owned_) {
    if (o.chunk != region.chunk || o.end <= region.begin || region.end <= o.begin) {
      rest.push_back(o);
      continue;
    }
    if (o.begin < region.begin) rest.push_back({o.chunk, o.begin, region.begin, o.owner});
    if (region.end < o.end) rest.push_back({o.chunk, region.end, o.end, o.owner});
  }
  rest.push_back(region);
  owned_ = std::move(rest);
}

Result<std::vector<SharedArena::Placed>> SharedArena::place(MemberId member, const std::vector<Bytes>& needs,
                                                            const std::vector<AddressRange>& reads) {
  std::lock_guard lock(mutex_);
  // What the member reads from the arena must still be its writer's; another member's output
  // is kept, the member's own earlier tensors are not (a private buffer would not keep them).
  std::vector<Owned> kept;
  for (const AddressRange& read : reads) {
    if (read.begin == read.end) continue;
    const std::optional<Owned> piece = locate(read);
    if (!piece) continue;  // not arena memory: weights, a KV cache
    const Owned* owner = owner_of(*piece);
    if (owner == nullptr) {
      return failed_precondition(
          "shared arena '" + name_ + "': " + describe(member) + " reads " + std::to_string(piece->end - piece->begin) +
          " bytes at offset " + std::to_string(piece->begin) +
          " of the arena that no single member holds any more: another member's alloc has taken them over since "
          "they were written, or their member was freed. Members of one arena must run one after another, and a "
          "graph's output stays valid only until the alloc of the member that reads it");
    }
    if (owner->owner == member) continue;
    kept.push_back({piece->chunk, piece->begin, piece->end, owner->owner});
  }
  // Retired chunks are freed once nothing kept lies in them.
  for (auto it = retired_.begin(); it != retired_.end();) {
    const Buffer* chunk = it->get();
    if (std::any_of(kept.begin(), kept.end(), [chunk](const Owned& k) { return k.chunk == chunk; })) {
      ++it;
      continue;
    }
    forget_chunk(chunk);
    it = retired_.erase(it);
  }

  const Bytes alignment = std::max<Bytes>(type_.alignment(), 1);
  std::vector<Placed> placed;
  std::vector<Owned> regions;
  for (std::size_t c = 0; c < needs.size(); ++c) {
    const Bytes need = needs[c];
    if (c >= chunks_.size()) GALLOC_RETURN_IF_ERROR(grow_chunk(c, need, false));
    const Buffer* chunk = chunks_[c].get();
    std::vector<const Owned*> in_chunk;
    for (const Owned& k : kept) {
      if (k.chunk == chunk) in_chunk.push_back(&k);
    }
    // A member that reads nothing here goes flush with the chunk's end, so that its outputs
    // lie high and the next member, which may read them, finds room below. A member that
    // reads takes the lowest offset that clears what it reads: 0, just past a kept range, or
    // flush with the end.
    const bool fits = chunk->size() >= need;
    const Bytes top = fits ? (chunk->size() - need) / alignment * alignment : 0;
    auto clear = [&](Bytes shift) {
      if (shift + need > chunk->size()) return false;
      return std::none_of(in_chunk.begin(), in_chunk.end(),
                          [&](const Owned* k) { return k->begin < shift + need && shift < k->end; });
    };
    std::optional<Bytes> shift;
    if (in_chunk.empty()) {
      if (fits) shift = top;
    } else {
      std::vector<Bytes> candidates{0};
      for (const Owned* k : in_chunk) candidates.push_back(align_up(k->end, alignment));
      if (fits) candidates.push_back(top);
      std::sort(candidates.begin(), candidates.end());
      for (Bytes candidate : candidates) {
        if (clear(candidate)) {
          shift = candidate;
          break;
        }
      }
    }
    if (!shift) {
      // No room: a chunk large enough for next time. If what is read lies at the top (its
      // writer read nothing, so it went flush with the end), that is the member plus what it
      // reads. Failing that, the smaller of: the member below what is read once its writer
      // moves up by the growth, and the member past it where it lies now. Never past the
      // type's max size. What is kept stays in the old chunk, retired until an alloc reads
      // nothing from it; this time the member goes at the start of the new chunk.
      const Bytes size = chunk->size();
      Bytes kept_bytes = 0, kept_begin = size, kept_end = 0;
      for (const Owned* k : in_chunk) {
        kept_bytes += align_up(k->end - k->begin, alignment);
        kept_begin = std::min(kept_begin, k->begin);
        kept_end = std::max(kept_end, align_up(k->end, alignment));
      }
      Bytes want = need + kept_bytes;
      if (want <= size) want = std::min(size + need - std::min(kept_begin, need), kept_end + need);
      want = std::max(need, std::min(std::max(want, size), type_.max_size()));
      GALLOC_RETURN_IF_ERROR(grow_chunk(c, want, /*keep_old=*/!in_chunk.empty()));
      shift = 0;
    }
    Buffer* target = chunks_[c].get();
    const Owned region{target, *shift, *shift + need, member};
    if (checked_) {
      for (const Owned& o : owned_) {
        if (o.chunk != target || o.owner == member) continue;
        const Bytes begin = std::max(o.begin, region.begin);
        const Bytes end = std::min(o.end, region.end);
        if (begin < end) target->fill(begin, end - begin, std::byte{0xFF});
      }
    }
    if (need > 0) {
      take_over(region);
      regions.push_back(region);
    }
    placed.push_back({target, target->base() + *shift});
  }
  auto entry = std::find_if(last_placed_.begin(), last_placed_.end(), [member](const auto& m) { return m.first == member; });
  if (entry == last_placed_.end()) {
    last_placed_.emplace_back(member, std::move(regions));
  } else {
    entry->second = std::move(regions);
  }
  return placed;
}

bool SharedArena::holds(MemberId member) const {
  std::lock_guard lock(mutex_);
  auto entry = std::find_if(last_placed_.begin(), last_placed_.end(), [member](const auto& m) { return m.first == member; });
  if (entry == last_placed_.end()) return false;
  for (const Owned& region : entry->second) {
    const Owned* owner = owner_of(region);
    if (owner == nullptr || owner->owner != member) return false;
  }
  return true;
}

}  // namespace galloc
