// Helpers shared by the files that implement gossip::Node (node*.cc); not part of its API.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>

#include "hearsay/gossip/node.h"

namespace hearsay::gossip::node_internal {

// Orders members (id-sorted vectors of MemberRec*) against an id, for std::lower_bound.
inline constexpr auto kIdBefore = [](const auto* member, const NodeId& id) {
  return member->id < id;
};

inline uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

inline uint64_t HashId(const NodeId& id) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : id) h = (h ^ c) * 0x100000001b3ULL;
  return Mix(h);
}

inline bool IsLive(MemberState s) { return s == MemberState::kAlive || s == MemberState::kSuspect; }

}  // namespace hearsay::gossip::node_internal

namespace hearsay::gossip {

// Runs `fn` after `d`, unless the node has left (or is destroyed) by then.
template <typename F>
TimerId Node::AfterFn(Duration d, F fn) {
  std::weak_ptr<int> token = alive_token_;
  return scheduler_.RunAfter(d, [token, fn = std::move(fn)]() mutable {
    if (token.expired()) return;
    fn();
  });
}

}  // namespace hearsay::gossip
