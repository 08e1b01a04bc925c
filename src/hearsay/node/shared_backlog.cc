#include "hearsay/node/shared_backlog.h"

#include <algorithm>
#include <cmath>

namespace hearsay::node {
namespace {

// `ms` rounded up to a grid of an eighth of its power of two (at least 64 ms): a backlog that
// drains changes its published figure every eighth of its size, not at every publish tick, so a
// list costs a few load versions over its life, and peers' figures run at most 1/8 high.
double RoundUpToGrid(double ms) {
  const double step = std::max(64.0, std::exp2(std::floor(std::log2(std::max(ms, 1.0))) - 3));
  return std::ceil(ms / step) * step;
}

}  // namespace

std::vector<gossip::BacklogEntry> ListBacklog(std::span<const BacklogSource> sources,
                                              const SharedBacklogOptions& options) {
  std::vector<gossip::BacklogEntry> out;
  if (!options.enabled) return out;
  for (const BacklogSource& s : sources) {
    if (s.sent_before_report <= s.reported_requests || !(s.work_ms >= 1)) continue;
    out.push_back(
        gossip::BacklogEntry{.member = s.member,
                             .requests = static_cast<uint32_t>(
                                 std::min<size_t>(s.requests, size_t{gossip::kMaxBacklogRequests})),
                             .work_ms = static_cast<uint32_t>(std::min(
                                 RoundUpToGrid(s.work_ms), double(gossip::kMaxBacklogWorkMs)))});
  }
  const size_t keep = std::min(options.max_entries, gossip::kMaxBacklogEntries);
  if (out.size() > keep) {
    std::partial_sort(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(keep), out.end(),
                      [](const gossip::BacklogEntry& a, const gossip::BacklogEntry& b) {
                        return a.work_ms > b.work_ms;
                      });
    out.resize(keep);
  }
  std::sort(out.begin(), out.end(),
            [](const gossip::BacklogEntry& a, const gossip::BacklogEntry& b) {
              return a.member < b.member;
            });
  return out;
}

void SharedBacklog::AddOwn(const NodeId& self, std::span<const gossip::BacklogEntry> list,
                           Duration age) {
  const double aged = ToMillis(age);
  for (const gossip::BacklogEntry& e : list) {
    const double left = double(e.work_ms) - aged;
    if (e.member != self && left > 0) work_[e.member].own += left;
  }
}

void SharedBacklog::Add(const NodeId& reporter, std::span<const gossip::BacklogEntry> list,
                        Duration age, double weight) {
  const double aged = ToMillis(age);
  weight = std::clamp(weight, 0.0, 1.0);
  for (const gossip::BacklogEntry& e : list) {
    if (e.member == reporter) continue;
    const double left = double(e.work_ms) - aged;
    if (left > 0 && weight > 0) AddShare(work_[e.member], weight * left);
  }
}

void SharedBacklog::AddShare(Shares& s, double ms) const {
  s.peers += ms;
  // Insertion into the few largest, largest first.
  for (size_t i = 0; i <= trimmed_; ++i) {
    if (ms > s.top[i]) std::swap(ms, s.top[i]);
  }
}

double SharedBacklog::Find(const NodeId& member) const {
  auto it = work_.find(member);
  if (it == work_.end()) return 0;
  const Shares& s = it->second;
  // This node's own evidence against the member (its own list naming it, or answers short of
  // the member's claims): every share counts. Without it the largest trimmed_ shares count up to
  // the next largest.
  if (s.own > 0 || s.doubted) return s.own + s.peers;
  const double cap = s.top[trimmed_];
  double over = 0;
  for (size_t i = 0; i < trimmed_; ++i) over += std::max(0.0, s.top[i] - cap);
  return s.own + std::max(0.0, s.peers - over);
}

}  // namespace hearsay::node
