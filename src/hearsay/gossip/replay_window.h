// Anti-replay state for gossip envelopes: which (sender, generation, counter) were already seen.
//
// Every envelope carries its sender's generation (unique per start, increasing across restarts)
// and a counter that the sender increments per message, separately on each channel. As in
// IPsec and WireGuard, a receiver keeps per sender the latest generation and, per channel, a
// sliding bitmap of the last kReplayWindowSize counters below the highest one accepted:
//   - a counter above the highest is fresh (the window slides forward);
//   - a counter within the window is fresh once; its second arrival is a duplicate;
//   - a counter at or below highest - kReplayWindowSize is too old (it may be a replay);
//   - a higher generation resets the sender's state (it restarted); a lower one is rejected.
// So messages reordered by up to kReplayWindowSize counters are accepted exactly once.
//
// Memory is bounded: at most max_senders senders are tracked; a new sender beyond that evicts
// the least recently accepted one. The trade-off: an evicted sender's recent messages could be
// replayed once each after eviction. That is harmless for gossip because every merge is
// idempotent and monotone (state carries versions and old versions lose), so a replayed message
// re-delivers what the receiver already merged or something older. Set max_senders above the
// cluster size so eviction happens only under heavy churn of node ids.
//
// The envelope calls Check before decryption (to reject replays cheaply) and Accept only after
// the message authenticated, so unauthenticated bytes never change this state.
//
// Thread-safety: none; owned by one envelope Opener on the core's thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <list>
#include <string>
#include <string_view>
#include <unordered_map>

#include "hearsay/common/ids.h"
#include "hearsay/env/transport.h"

namespace hearsay::gossip {

// How many counters below the highest accepted one are still accepted (once each).
inline constexpr uint64_t kReplayWindowSize = 1024;

enum class ReplayVerdict {
  kFresh,          // never seen: accept
  kDuplicate,      // already accepted
  kTooOld,         // below the window: cannot tell, so rejected
  kOldGeneration,  // the sender has since restarted with a higher generation
};

// "fresh", "duplicate", "too-old" or "old-generation".
std::string_view ReplayVerdictName(ReplayVerdict v);

// A sliding window over one counter space.
//
// Invariants:
//   - if !any_, every ring bit is zero;
//   - for every counter c in the window (highest_ - kReplayWindowSize, highest_], bit c % kBits
//     is set iff c was accepted; ring words that hold no window counter may be stale and are
//     cleared before the window slides onto them.
class CounterWindow {
 public:
  // kFresh, kDuplicate or kTooOld for `counter`; does not change the window.
  ReplayVerdict Check(uint64_t counter) const;
  // Records `counter` as seen. Check(counter) must be kFresh (a broken invariant otherwise).
  void Accept(uint64_t counter);

  // True until the first Accept.
  bool empty() const { return !any_; }
  // The highest accepted counter (0 when empty).
  uint64_t highest() const { return highest_; }

 private:
  // One spare word so the window's 1024 counters never share a ring word with counters that
  // slid out of it.
  static constexpr size_t kWords = kReplayWindowSize / 64 + 1;
  static constexpr uint64_t kBits = kWords * 64;

  std::array<uint64_t, kWords> ring_{};
  uint64_t highest_ = 0;
  bool any_ = false;
};

// Per-sender replay state for every sender, bounded in number.
//
// Invariants:
//   - order_.size() == index_.size() <= max_senders_;
//   - index_ maps each tracked sender (a view of the string held in its order_ node) to that node;
//   - order_ runs from most to least recently accepted.
class ReplayGuard {
 public:
  // Tracks at most `max_senders` senders (at least 1).
  explicit ReplayGuard(size_t max_senders);
  ReplayGuard(const ReplayGuard&) = delete;
  ReplayGuard& operator=(const ReplayGuard&) = delete;
  // Moves keep index_ valid: list nodes, and the strings the views point into, do not move.
  ReplayGuard(ReplayGuard&&) = default;
  ReplayGuard& operator=(ReplayGuard&&) = default;

  // The verdict for a message from `sender`; does not change any state.
  ReplayVerdict Check(std::string_view sender, Generation generation, Channel channel,
                      uint64_t counter) const;
  // Records an authenticated message. Check(...) must be kFresh for it (broken invariant
  // otherwise). May evict the least recently accepted sender.
  void Accept(std::string_view sender, Generation generation, Channel channel, uint64_t counter);

  // The number of senders tracked now.
  size_t size() const { return index_.size(); }
  size_t max_senders() const { return max_senders_; }
  // How many senders were evicted to make room, ever.
  uint64_t evictions() const { return evictions_; }

 private:
  static constexpr size_t kChannels = 2;

  struct SenderState {
    NodeId sender;
    Generation generation = 0;
    std::array<CounterWindow, kChannels> windows;
  };

  std::list<SenderState> order_;
  std::unordered_map<std::string_view, std::list<SenderState>::iterator> index_;
  size_t max_senders_;
  uint64_t evictions_ = 0;
};

}  // namespace hearsay::gossip
