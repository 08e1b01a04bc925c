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

void SharedBacklog::Add(const NodeId& reporter, std::span<const gossip::BacklogEntry> list,
                        Duration age, double weight) {
  const double aged = ToMillis(age);
  weight = std::clamp(weight, 0.0, 1.0);
  for (const gossip::BacklogEntry& e : list) {
    if (e.member == reporter) continue;
    const double left = double(e.work_ms) - aged;
    if (left > 0 && weight > 0) work_[e.member] += weight * left;
  }
}

double SharedBacklog::Find(const NodeId& member) const {
  auto it = work_.find(member);
  return it == work_.end() ? 0 : it->second;
}

}  // namespace hearsay::node
