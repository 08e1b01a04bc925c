#include "hearsay/net/status_board.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace hearsay::net {
namespace {

// The q-quantile (0..1) of `values` (nearest rank); `values` is sorted in place.
double Quantile(std::vector<double>& values, double q) {
  std::sort(values.begin(), values.end());
  const size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(values.size())));
  return values[std::clamp<size_t>(rank, 1, values.size()) - 1];
}

nlohmann::json OrNull(double v) { return v < 0 ? nlohmann::json(nullptr) : nlohmann::json(v); }

}  // namespace

void StatusBoard::OnRoute(const node::RouteRecord& r) {
  if (next_ != nullptr) next_->OnRoute(r);
  Decision d;
  d.request = r.request;
  d.prompt_tokens = r.prompt_tokens;
  d.served_by = r.served_by;
  d.actual_cached_tokens = r.cached_tokens;
  d.ttft_ms = r.ttft_ms;
  d.attempts = r.attempts.size();
  d.error = r.error;
  if (!r.attempts.empty()) {
    // The decision that stood: the last attempt's.
    const node::RouteAttempt& a = r.attempts.back();
    d.chosen = a.chosen;
    d.reason = a.reason;
    d.expected_cached_tokens = a.estimated_cached_tokens;
    d.expected_ttft_ms = a.expected_ttft_ms;
    d.runner_up_expected_ttft_ms = a.fallback_ttft_ms;
    // The runner-up: the cheapest other priced candidate.
    const node::CandidateRecord* runner_up = nullptr;
    for (const node::CandidateRecord& c : a.candidates) {
      if (!c.priced || !c.usable || c.node == a.chosen) continue;
      if (runner_up == nullptr || c.price.cost_ms < runner_up->price.cost_ms) runner_up = &c;
    }
    if (runner_up != nullptr) {
      d.runner_up = runner_up->node;
      d.runner_up_expected_ttft_ms = runner_up->price.cost_ms;
    }
  }
  decisions_.push_front(std::move(d));
  if (decisions_.size() > kDecisions) decisions_.pop_back();
}

void StatusBoard::OnServe(const node::ServeRecord& r) {
  if (next_ != nullptr) next_->OnServe(r);
}

void StatusBoard::OnClientFirstToken(std::string_view served_by, uint32_t prompt_tokens,
                                     uint32_t cached_tokens, double ttft_ms) {
  const TimePoint now = clock_.Now();
  routed_.push_back({now, std::string(served_by), prompt_tokens, cached_tokens, ttft_ms});
  Prune(now);
}

void StatusBoard::OnClientFailed() {
  const TimePoint now = clock_.Now();
  routed_.push_back({now, std::string(), 0, 0, -1});
  Prune(now);
}

void StatusBoard::OnServedForPeer(std::string_view entry) {
  const TimePoint now = clock_.Now();
  served_for_peers_.push_back({now, std::string(entry)});
  Prune(now);
}

void StatusBoard::SampleRouting(uint64_t forwards_bounced, uint64_t forward_failures) {
  const TimePoint now = clock_.Now();
  routing_.push_back({now, forwards_bounced, forward_failures});
  Prune(now);
}

void StatusBoard::CountSuspicion() { suspicions_.push_back(clock_.Now()); }

void StatusBoard::SampleGossip(uint64_t bytes_sent, uint64_t bytes_received) {
  const TimePoint now = clock_.Now();
  gossip_.push_back({now, bytes_sent, bytes_received});
  Prune(now);
}

void StatusBoard::PruneSamples(std::deque<CounterSample>& s, TimePoint cut) {
  // Keep one sample at or before the cut, so a change spans the whole window.
  while (s.size() > 1 && s[1].at <= cut) s.pop_front();
}

std::pair<nlohmann::json, nlohmann::json> StatusBoard::Delta(const std::deque<CounterSample>& s,
                                                             bool per_second) {
  if (s.size() < 2) return {nullptr, nullptr};
  const double seconds = ToSeconds(s.back().at - s.front().at);
  if (seconds <= 0) return {nullptr, nullptr};
  const double scale = per_second ? 1 / seconds : 1;
  return {static_cast<double>(s.back().a - s.front().a) * scale,
          static_cast<double>(s.back().b - s.front().b) * scale};
}

void StatusBoard::Prune(TimePoint now) {
  const TimePoint cut = now - kWindow;
  while (!routed_.empty() && routed_.front().at < cut) routed_.pop_front();
  while (!served_for_peers_.empty() && served_for_peers_.front().at < cut) {
    served_for_peers_.pop_front();
  }
  while (!suspicions_.empty() && suspicions_.front() < cut) suspicions_.pop_front();
  PruneSamples(gossip_, cut);
  PruneSamples(routing_, cut);
}

nlohmann::json StatusBoard::RenderRouting() {
  Prune(clock_.Now());
  uint64_t local = 0, forwarded = 0, failed = 0;
  uint64_t prompt = 0, cached = 0;
  std::vector<double> ttft;
  std::map<std::string, uint64_t> served_by;
  for (const Routed& e : routed_) {
    if (e.served_by.empty()) {
      ++failed;
      continue;
    }
    ++served_by[e.served_by];
    (e.served_by == self_ ? local : forwarded) += 1;
    prompt += e.prompt_tokens;
    cached += e.cached_tokens;
    if (e.ttft_ms >= 0) ttft.push_back(e.ttft_ms);
  }
  std::map<std::string, uint64_t> for_peers;
  for (const ServedForPeer& s : served_for_peers_) ++for_peers[s.entry];
  nlohmann::json j = {
      {"window_s", std::chrono::duration_cast<std::chrono::seconds>(kWindow).count()},
      {"requests", routed_.size()},
      {"served_local", local},
      {"forwarded", forwarded},
      {"failed", failed},
      {"prompt_tokens", prompt},
      {"cached_tokens", cached},
      {"bounces", Delta(routing_, false).first},
      {"retries", Delta(routing_, false).second},
      {"served_by", served_by},
      {"served_for_peers", for_peers}};
  j["hit_rate"] = prompt > 0 ? nlohmann::json(static_cast<double>(cached) / prompt) : nullptr;
  j["ttft_p50_ms"] = ttft.empty() ? nlohmann::json(nullptr) : nlohmann::json(Quantile(ttft, 0.5));
  j["ttft_p99_ms"] = ttft.empty() ? nlohmann::json(nullptr) : nlohmann::json(Quantile(ttft, 0.99));
  return j;
}

nlohmann::json StatusBoard::RenderDecisions() const {
  auto text_or_null = [](const std::string& s) {
    return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s);
  };
  nlohmann::json out = nlohmann::json::array();
  for (const Decision& d : decisions_) {
    nlohmann::json j = {{"request", d.request},
                        {"prompt_tokens", d.prompt_tokens},
                        {"served_by", text_or_null(d.served_by)},
                        {"actual_cached_tokens", d.actual_cached_tokens},
                        {"ttft_ms", OrNull(d.ttft_ms)},
                        {"attempts", d.attempts}};
    if (d.attempts > 0) {
      j["chosen"] = d.chosen;
      j["reason"] = d.reason;
      j["expected_cached_tokens"] = d.expected_cached_tokens;
      j["expected_ttft_ms"] = OrNull(d.expected_ttft_ms);
      j["runner_up"] = text_or_null(d.runner_up);
      j["runner_up_expected_ttft_ms"] = OrNull(d.runner_up_expected_ttft_ms);
    }
    if (!d.error.empty()) j["error"] = d.error;
    out.push_back(std::move(j));
  }
  return out;
}

nlohmann::json StatusBoard::RenderGossip() {
  Prune(clock_.Now());
  const auto [sent, received] = Delta(gossip_, true);
  return {{"suspicions", suspicions_.size()},
          {"bytes_sent_per_s", sent},
          {"bytes_received_per_s", received}};
}

}  // namespace hearsay::net
