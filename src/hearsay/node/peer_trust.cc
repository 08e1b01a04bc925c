#include "hearsay/node/peer_trust.h"

#include <algorithm>
#include <cmath>

namespace hearsay::node {
namespace {

// The median of `v` (reordered); v must not be empty.
double Median(std::vector<double>& v) {
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const double upper = v[mid];
  if (v.size() % 2 == 1) return upper;
  const double lower = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lower + upper) / 2;
}

}  // namespace

PeerTrust::PeerTrust(PeerTrustOptions options) : options_(options) {
  options_.max_samples = std::max<size_t>(options_.max_samples, 1);
  options_.max_members = std::max<size_t>(options_.max_members, 1);
}

void PeerTrust::Sent(const NodeId& member, uint64_t request, TimePoint now, double expected_ttft_ms,
                     double work_ms) {
  if (request == 0 || expected_ttft_ms < 1) return;
  if (!ledgers_.contains(member) && ledgers_.size() >= options_.max_members) EvictOldest();
  Ledger& l = ledgers_[member];
  l.view.member = member;
  l.last = now;
  l.outstanding.push_back({request, now, expected_ttft_ms, std::max(work_ms, 0.0)});
  while (l.outstanding.size() > options_.max_outstanding) l.outstanding.pop_front();
  Weigh(l, now);
  if (options_.enabled) l.view.hidden_wait_ms = HiddenWaitMs(l);
}

void PeerTrust::Abandon(const NodeId& member, uint64_t request) {
  auto it = ledgers_.find(member);
  if (it == ledgers_.end() || request == 0) return;
  std::erase_if(it->second.outstanding,
                [request](const Outstanding& o) { return o.request == request; });
}

void PeerTrust::Record(const NodeId& member, TimePoint now, uint32_t claimed_cached,
                       uint32_t actual_cached, double expected_ttft_ms, double actual_ttft_ms,
                       uint64_t request) {
  if (!ledgers_.contains(member) && ledgers_.size() >= options_.max_members) EvictOldest();
  Ledger& l = ledgers_[member];
  l.view.member = member;
  if (request != 0) {
    std::erase_if(l.outstanding, [request](const Outstanding& o) { return o.request == request; });
  }
  Sample s;
  s.at = now;
  s.claimed = claimed_cached;
  s.actual = actual_cached;
  // An expectation under a millisecond says nothing about a member's load.
  if (expected_ttft_ms >= 1 && actual_ttft_ms >= 0) {
    s.ratio = actual_ttft_ms / expected_ttft_ms;
    s.excess_ms = actual_ttft_ms - expected_ttft_ms;
  }
  l.samples.push_back(s);
  l.last = now;
  while (l.samples.size() > options_.max_samples) l.samples.pop_front();
  DropOld(l, now);
  Weigh(l, now);
  Summarize(l);
  Judge();
}

void PeerTrust::Expire(TimePoint now) {
  for (auto& [id, l] : ledgers_) {
    const size_t samples = l.samples.size();
    const bool was_overdue = !l.overdue.empty();
    DropOld(l, now);
    Weigh(l, now);
    // The summary reads only the samples and the overdue ratios: unchanged, it stands.
    if (l.samples.size() != samples || was_overdue || !l.overdue.empty()) Summarize(l);
  }
  Judge();
}

void PeerTrust::Weigh(Ledger& l, TimePoint now) const {
  l.overdue.clear();
  l.overdue_ms = 0;
  double expected_ms = 0;
  double work_ms = 0;
  TimePoint oldest = now;
  for (const Outstanding& o : l.outstanding) {
    const double elapsed = ToMillis(now - o.at);
    if (elapsed > o.expected_ms) {
      l.overdue.push_back(elapsed / o.expected_ms);
      l.overdue_ms = std::max(l.overdue_ms, elapsed - o.expected_ms);
    }
    expected_ms += o.expected_ms;
    work_ms += o.work_ms;
    oldest = std::min(oldest, o.at);
  }
  // This node's own requests there, queued ahead of the next one: at most the time since the
  // oldest was sent has been worked off.
  l.backlog_ms = std::max(0.0, expected_ms - ToMillis(now - oldest));
  l.work_ms = std::max(0.0, work_ms - ToMillis(now - oldest));
}

double PeerTrust::HiddenWaitMs(const Ledger& l) {
  return std::max({l.overdue_ms, l.backlog_ms, l.mean_excess_ms});
}

PeerTrustView PeerTrust::Of(const NodeId& member) const {
  auto it = ledgers_.find(member);
  if (it == ledgers_.end()) return PeerTrustView{.member = member};
  return it->second.view;
}

PeerTrust::OutstandingWork PeerTrust::Unanswered(const NodeId& member, TimePoint sent_by) const {
  auto it = ledgers_.find(member);
  if (it == ledgers_.end()) return {};
  const Ledger& l = it->second;
  OutstandingWork w{.requests = l.outstanding.size(), .work_ms = l.work_ms};
  for (const Outstanding& o : l.outstanding) w.sent_by += o.at <= sent_by ? 1 : 0;
  return w;
}

void PeerTrust::MembersWithUnanswered(std::vector<NodeId>& out) const {
  for (const auto& [id, l] : ledgers_) {
    if (!l.outstanding.empty()) out.push_back(id);
  }
}

std::vector<PeerTrustView> PeerTrust::All() const {
  std::vector<PeerTrustView> out;
  out.reserve(ledgers_.size());
  for (const auto& [id, l] : ledgers_) out.push_back(l.view);
  std::sort(out.begin(), out.end(),
            [](const PeerTrustView& a, const PeerTrustView& b) { return a.member < b.member; });
  return out;
}

void PeerTrust::DropOld(Ledger& l, TimePoint now) const {
  while (!l.samples.empty() && now - l.samples.front().at > options_.window) l.samples.pop_front();
}

void PeerTrust::Summarize(Ledger& l) const {
  uint64_t claimed = 0;
  uint64_t actual = 0;
  std::vector<double> ratios;
  ratios.reserve(l.samples.size());
  double excess_ms = 0;
  for (const Sample& s : l.samples) {
    if (s.claimed > 0) {
      claimed += s.claimed;
      actual += std::min(s.actual, s.claimed);
    }
    if (s.ratio >= 0) {
      ratios.push_back(s.ratio);
      excess_ms += s.excess_ms;
    }
  }
  l.mean_excess_ms = ratios.empty() ? 0 : std::max(0.0, excess_ms / double(ratios.size()));
  ratios.insert(ratios.end(), l.overdue.begin(), l.overdue.end());
  l.delivery = claimed > 0 ? double(actual) / double(claimed) : 1.0;
  l.ttft_ratio = ratios.empty() ? -1 : Median(ratios);
  l.view.samples = l.samples.size() + l.overdue.size();
  l.view.delivery = l.delivery;
  l.view.ttft_ratio = l.ttft_ratio;
}

void PeerTrust::Judge() {
  // The baseline: the typical judged member (each member one vote, so the members that attract
  // the most traffic do not outvote the rest). Under two judged members there is nothing to
  // compare with, so claims are held to the absolute standard (delivery 1, ratio 1).
  scratch_.clear();
  for (const auto& [id, l] : ledgers_) {
    if (l.view.samples >= options_.min_samples) scratch_.push_back(l.delivery);
  }
  base_delivery_ = std::clamp(scratch_.size() >= 2 ? Median(scratch_) : 1.0,
                              std::min(options_.min_base_delivery, 1.0), 1.0);
  scratch_.clear();
  for (const auto& [id, l] : ledgers_) {
    if (l.view.samples >= options_.min_samples && l.ttft_ratio >= 0) {
      scratch_.push_back(l.ttft_ratio);
    }
  }
  base_ratio_ = std::clamp(scratch_.size() >= 2 ? Median(scratch_) : 1.0, 1.0,
                           std::max(options_.max_base_ratio, 1.0));

  const double lo = std::clamp(options_.floor, 0.0, 1.0);
  for (auto& [id, l] : ledgers_) {
    PeerTrustView& v = l.view;
    v.cache_trust = 1;
    v.time_trust = 1;
    v.hidden_wait_ms = options_.enabled ? HiddenWaitMs(l) : 0;
    if (!options_.enabled || l.view.samples == 0) continue;
    const double weight =
        std::min(1.0, double(l.view.samples) / double(std::max<size_t>(options_.full_samples, 1)));
    const double cache_bar = options_.cache_tolerance * base_delivery_;
    if (cache_bar > 0) {
      v.cache_trust = std::pow(std::clamp(l.delivery / cache_bar, lo, 1.0), weight);
    }
    if (l.ttft_ratio > 0) {
      v.time_trust = std::pow(
          std::clamp(options_.ttft_tolerance * base_ratio_ / l.ttft_ratio, lo, 1.0), weight);
    }
  }
}

void PeerTrust::EvictOldest() {
  auto oldest = ledgers_.end();
  for (auto it = ledgers_.begin(); it != ledgers_.end(); ++it) {
    if (oldest == ledgers_.end() || it->second.last < oldest->second.last) oldest = it;
  }
  if (oldest != ledgers_.end()) ledgers_.erase(oldest);
}

}  // namespace hearsay::node
