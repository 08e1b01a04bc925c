#include "hearsay/engine/slot_cache.h"

#include <algorithm>
#include <string>
#include <utility>

#include "hearsay/common/check.h"

namespace hearsay::engine {
namespace {

size_t CommonPrefix(std::span<const TokenId> a, std::span<const TokenId> b) {
  const size_t n = std::min(a.size(), b.size());
  return static_cast<size_t>(std::mismatch(a.begin(), a.begin() + n, b.begin()).first - a.begin());
}

// A fraction as llama-server computes it (float), so ties and thresholds fall as there.
float Fraction(size_t part, size_t whole) {
  return static_cast<float>(part) / static_cast<float>(whole);
}

}  // namespace

SlotCache::SlotCache(prefix::BlockKeyer keyer, const SlotCacheOptions& options)
    : keyer_(std::move(keyer)), options_(options) {
  HEARSAY_CHECK(options_.slots >= 1);
  slots_.resize(options_.slots);
  idle_ = options_.slots;
}

SlotCache::Take SlotCache::Acquire(std::span<const TokenId> prompt,
                                   std::vector<prefix::BlockEvent>* events) {
  HEARSAY_CHECK(!prompt.empty() && idle_ > 0);
  bool save = false;
  const uint32_t index = PickSlot(prompt, &save);
  Slot& slot = slots_[index];
  if (save && options_.capacity_tokens > 0) SwapThroughCache(slot, prompt, events);
  const size_t cached = std::min(CommonPrefix(slot.seq.tokens, prompt), prompt.size() - 1);
  Truncate(slot.seq, cached, events);
  slot.busy = true;
  --idle_;
  if (options_.save_idle_slots && options_.capacity_tokens > 0) {
    for (const Slot& s : slots_) {
      if (!s.busy && !s.seq.tokens.empty()) Save(s.seq, events);
    }
  }
  return {index, cached};
}

uint32_t SlotCache::PickSlot(std::span<const TokenId> prompt, bool* save) const {
  // The idle slot most similar to the prompt, above the threshold.
  uint32_t best = UINT32_MAX;
  if (options_.similarity > 0) {
    float best_sim = 0;
    for (uint32_t i = 0; i < slots_.size(); ++i) {
      const Slot& s = slots_[i];
      if (s.busy || s.seq.tokens.empty()) continue;
      const float sim = Fraction(CommonPrefix(s.seq.tokens, prompt), prompt.size());
      if (sim > best_sim && sim > options_.similarity) {
        best_sim = sim;
        best = i;
      }
    }
    if (best != UINT32_MAX) {
      const float keep = best_sim * static_cast<float>(prompt.size()) /
                         static_cast<float>(slots_[best].seq.tokens.size());
      *save = keep < 0.5f;
      return best;
    }
  }
  // Else the least recently released (a slot never used counts as oldest; ties: the last one).
  bool found = false;
  uint64_t oldest = 0;
  for (uint32_t i = 0; i < slots_.size(); ++i) {
    const Slot& s = slots_[i];
    if (s.busy) continue;
    if (!found || s.last_release <= oldest) {
      oldest = s.last_release;
      best = i;
      found = true;
    }
  }
  HEARSAY_CHECK(found);
  *save = true;
  return best;
}

void SlotCache::SwapThroughCache(Slot& slot, std::span<const TokenId> prompt,
                                 std::vector<prefix::BlockEvent>* events) {
  if (!slot.seq.tokens.empty()) Save(slot.seq, events);
  // The cached sequence that keeps more of itself and covers more of the prompt than the slot's.
  const size_t own = CommonPrefix(slot.seq.tokens, prompt);
  float best_keep = slot.seq.tokens.empty() ? -1.0f : Fraction(own, slot.seq.tokens.size());
  float best_sim = Fraction(own, prompt.size());
  auto best = cache_.end();
  for (auto it = cache_.begin(); it != cache_.end(); ++it) {
    const size_t common = CommonPrefix(it->tokens, prompt);
    const float keep = Fraction(common, it->tokens.size());
    const float sim = Fraction(common, prompt.size());
    if (keep < 0.25f) continue;  // llama-server: "don't trash large prompts"
    if (best_keep < keep && best_sim < sim) {
      best_keep = keep;
      best_sim = sim;
      best = it;
    }
  }
  if (best == cache_.end()) return;
  // The loaded sequence's blocks are counted already (it was cached): drop the slot's own, then
  // move it over without touching its counts.
  DropRefs(slot.seq, 0, events);
  cached_tokens_ -= best->tokens.size();
  slot.seq = std::move(*best);
  cache_.erase(best);
}

void SlotCache::Save(const Sequence& seq, std::vector<prefix::BlockEvent>* events) {
  const size_t len = seq.tokens.size();
  if (len > options_.capacity_tokens) return;  // over the limit: not saved
  for (const Sequence& c : cache_) {
    if (CommonPrefix(c.tokens, seq.tokens) == len) return;  // already contained
  }
  // Add the new sequence's counts before dropping any, so shared blocks do not flap.
  cache_.push_back(seq);
  cached_tokens_ += len;
  AddRefs(cache_.back(), 0, events);
  for (auto it = cache_.begin(); it + 1 != cache_.end();) {
    it =
        CommonPrefix(it->tokens, seq.tokens) == it->tokens.size() ? DropCached(it, events) : it + 1;
  }
  // The new sequence fits alone (len <= capacity): the oldest go first until it does.
  while (cached_tokens_ > options_.capacity_tokens) DropCached(cache_.begin(), events);
}

std::deque<SlotCache::Sequence>::iterator SlotCache::DropCached(
    std::deque<Sequence>::iterator it, std::vector<prefix::BlockEvent>* events) {
  DropRefs(*it, 0, events);
  cached_tokens_ -= it->tokens.size();
  return cache_.erase(it);
}

void SlotCache::Extend(uint32_t slot, std::span<const TokenId> sequence,
                       std::vector<prefix::BlockEvent>* events) {
  HEARSAY_CHECK(slot < slots_.size() && slots_[slot].busy);
  Sequence& seq = slots_[slot].seq;
  HEARSAY_CHECK(sequence.size() >= seq.tokens.size());
  HEARSAY_CHECK(std::equal(seq.tokens.begin(), seq.tokens.end(), sequence.begin()));
  const size_t first = seq.keys.size();
  seq.tokens.assign(sequence.begin(), sequence.end());
  keyer_.AppendKeysFrom(seq.tokens, first, first == 0 ? 0 : seq.keys.back(), &seq.keys);
  AddRefs(seq, first, events);
}

void SlotCache::Release(uint32_t slot, uint64_t tick) {
  HEARSAY_CHECK(slot < slots_.size() && slots_[slot].busy);
  Slot& s = slots_[slot];
  s.busy = false;
  HEARSAY_CHECK(tick > 0);
  s.last_release = tick;
  ++idle_;
}

size_t SlotCache::Peek(std::span<const TokenId> prompt) const {
  size_t best = 0;
  for (const Slot& s : slots_) best = std::max(best, CommonPrefix(s.seq.tokens, prompt));
  for (const Sequence& c : cache_) best = std::max(best, CommonPrefix(c.tokens, prompt));
  return best;
}

void SlotCache::AppendHeldBlocks(std::vector<prefix::BlockEvent>* out) const {
  const size_t from = out->size();
  for (const auto& [key, h] : held_) {
    out->push_back({prefix::BlockEvent::Kind::kAdded, key, h.index});
  }
  std::sort(out->begin() + static_cast<std::ptrdiff_t>(from), out->end(),
            [](const prefix::BlockEvent& a, const prefix::BlockEvent& b) {
              return a.block_index != b.block_index ? a.block_index < b.block_index : a.key < b.key;
            });
}

uint64_t SlotCache::slot_tokens() const {
  uint64_t n = 0;
  for (const Slot& s : slots_) n += s.seq.tokens.size();
  return n;
}

size_t SlotCache::Header(const Sequence& seq) const {
  return !seq.tokens.empty() && prefix::IsNamespaceToken(seq.tokens[0]) ? 1 : 0;
}

void SlotCache::AddRefs(const Sequence& seq, size_t first,
                        std::vector<prefix::BlockEvent>* events) {
  const size_t header = Header(seq);
  for (size_t i = std::max(first, header); i < seq.keys.size(); ++i) {
    Held& h = held_[seq.keys[i]];
    if (h.refs++ != 0) continue;
    h.index = static_cast<uint32_t>(i - header);
    if (events != nullptr) {
      events->push_back({prefix::BlockEvent::Kind::kAdded, seq.keys[i], h.index});
    }
  }
}

void SlotCache::DropRefs(const Sequence& seq, size_t first,
                         std::vector<prefix::BlockEvent>* events) {
  const size_t header = Header(seq);
  for (size_t i = seq.keys.size(); i > std::max(first, header); --i) {
    auto it = held_.find(seq.keys[i - 1]);
    HEARSAY_CHECK(it != held_.end() && it->second.refs > 0);
    if (--it->second.refs != 0) continue;
    if (events != nullptr) {
      events->push_back({prefix::BlockEvent::Kind::kRemoved, it->first, it->second.index});
    }
    held_.erase(it);
  }
}

void SlotCache::Truncate(Sequence& seq, size_t len, std::vector<prefix::BlockEvent>* events) {
  if (len >= seq.tokens.size()) return;
  const size_t blocks = keyer_.FullBlocks(len);
  DropRefs(seq, blocks, events);
  seq.keys.resize(std::min(seq.keys.size(), blocks));
  seq.tokens.resize(len);
}

Status SlotCache::CheckInvariants() const {
  std::unordered_map<prefix::BlockKey, uint32_t> want;
  uint64_t cached = 0;
  auto count = [&](const Sequence& seq) -> Status {
    if (seq.keys != keyer_.Keys(seq.tokens)) return InternalError("a sequence's keys are stale");
    for (size_t i = Header(seq); i < seq.keys.size(); ++i) ++want[seq.keys[i]];
    return OkStatus();
  };
  uint32_t idle = 0;
  for (const Slot& s : slots_) {
    HEARSAY_RETURN_IF_ERROR(count(s.seq));
    if (!s.busy) ++idle;
  }
  for (const Sequence& c : cache_) {
    HEARSAY_RETURN_IF_ERROR(count(c));
    cached += c.tokens.size();
  }
  if (idle != idle_) return InternalError("idle slot count is off");
  if (cached != cached_tokens_) return InternalError("cached token count is off");
  if (cached_tokens_ > options_.capacity_tokens) {
    return InternalError("the host cache is over its capacity");
  }
  if (want.size() != held_.size()) return InternalError("held block count is off");
  for (const auto& [key, refs] : want) {
    auto it = held_.find(key);
    if (it == held_.end() || it->second.refs != refs) {
      return InternalError("block " + std::to_string(key) + " has the wrong reference count");
    }
  }
  return OkStatus();
}

}  // namespace hearsay::engine
