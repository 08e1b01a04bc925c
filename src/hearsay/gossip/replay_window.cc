#include "hearsay/gossip/replay_window.h"

#include <algorithm>

#include "hearsay/common/check.h"

namespace hearsay::gossip {

std::string_view ReplayVerdictName(ReplayVerdict v) {
  switch (v) {
    case ReplayVerdict::kFresh:
      return "fresh";
    case ReplayVerdict::kDuplicate:
      return "duplicate";
    case ReplayVerdict::kTooOld:
      return "too-old";
    case ReplayVerdict::kOldGeneration:
      return "old-generation";
  }
  return "unknown";
}

ReplayVerdict CounterWindow::Check(uint64_t counter) const {
  if (!any_ || counter > highest_) return ReplayVerdict::kFresh;
  if (highest_ - counter >= kReplayWindowSize) return ReplayVerdict::kTooOld;
  const uint64_t word = ring_[(counter / 64) % kWords];
  return (word >> (counter % 64)) & 1 ? ReplayVerdict::kDuplicate : ReplayVerdict::kFresh;
}

void CounterWindow::Accept(uint64_t counter) {
  HEARSAY_CHECK(Check(counter) == ReplayVerdict::kFresh);
  if (!any_) {
    any_ = true;
    highest_ = counter;
  } else if (counter > highest_) {
    // Clear the ring words the window slides onto; they still hold counters from kWords blocks
    // ago. A jump of more than the whole ring clears every word (the current block's word is
    // cleared too in that case, since it is out of the window).
    const uint64_t old_block = highest_ / 64;
    const uint64_t new_block = counter / 64;
    const uint64_t steps = std::min<uint64_t>(new_block - old_block, kWords);
    for (uint64_t i = 1; i <= steps; ++i) ring_[(old_block + i) % kWords] = 0;
    highest_ = counter;
  }
  ring_[(counter / 64) % kWords] |= uint64_t{1} << (counter % 64);
}

ReplayGuard::ReplayGuard(size_t max_senders) : max_senders_(std::max<size_t>(max_senders, 1)) {}

ReplayVerdict ReplayGuard::Check(std::string_view sender, Generation generation, Channel channel,
                                 uint64_t counter) const {
  const size_t lane = static_cast<size_t>(channel);
  HEARSAY_CHECK(lane < kChannels);
  const auto it = index_.find(sender);
  if (it == index_.end()) return ReplayVerdict::kFresh;
  const SenderState& state = *it->second;
  if (generation < state.generation) return ReplayVerdict::kOldGeneration;
  if (generation > state.generation) return ReplayVerdict::kFresh;
  return state.windows[lane].Check(counter);
}

void ReplayGuard::Accept(std::string_view sender, Generation generation, Channel channel,
                         uint64_t counter) {
  HEARSAY_CHECK(Check(sender, generation, channel, counter) == ReplayVerdict::kFresh);
  const size_t lane = static_cast<size_t>(channel);
  auto it = index_.find(sender);
  if (it == index_.end()) {
    if (index_.size() >= max_senders_) {
      index_.erase(std::string_view(order_.back().sender));
      order_.pop_back();
      ++evictions_;
    }
    order_.push_front(SenderState{NodeId(sender), generation, {}});
    index_.emplace(std::string_view(order_.front().sender), order_.begin());
  } else {
    order_.splice(order_.begin(), order_, it->second);
    SenderState& state = order_.front();
    if (generation > state.generation) {
      state.generation = generation;
      state.windows = {};
    }
  }
  order_.front().windows[lane].Accept(counter);
}

}  // namespace hearsay::gossip
