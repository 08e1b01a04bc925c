#include "hearsay/node/decision_record.h"

#include <cmath>
#include <nlohmann/json.hpp>

namespace hearsay::node {
namespace {

// Times to the microsecond: enough for any comparison, and short lines.
double Ms(double ms) { return std::round(ms * 1000) / 1000; }

nlohmann::json ToJson(const CandidateRecord& c) {
  nlohmann::json j = {{"node", c.node},
                      {"self", c.is_self},
                      {"usable", c.usable},
                      {"one_way_delay_ms", Ms(c.one_way_delay_ms)},
                      {"queued", c.queued},
                      {"running", c.running},
                      {"queued_prefill_tokens", c.queued_prefill_tokens},
                      {"reported_wait_ms", Ms(c.reported_wait_ms)},
                      {"load_age_ms", Ms(c.load_age_ms)},
                      {"overloaded", c.overloaded},
                      {"cached_tokens", c.cached_tokens},
                      {"cached_tokens_max", c.cached_tokens_max},
                      {"cache_exact", c.cache_exact},
                      {"cost_scale", c.cost_scale}};
  if (c.priced) {
    const bool skipped = !std::isfinite(c.price.cost_ms);
    j["price"] = skipped ? nlohmann::json(nullptr)
                         : nlohmann::json{{"delay_ms", Ms(c.price.delay_ms)},
                                          {"wait_ms", Ms(c.price.wait_ms)},
                                          {"credit_tokens", Ms(c.price.credit_tokens)},
                                          {"prefill_ms", Ms(c.price.prefill_ms)},
                                          {"work_ms", Ms(c.price.work_ms)},
                                          {"interference_ms", Ms(c.price.interference_ms)},
                                          {"cost_ms", Ms(c.price.cost_ms)}};
  }
  return j;
}

}  // namespace

nlohmann::json ToJson(const RouteRecord& r) {
  nlohmann::json attempts = nlohmann::json::array();
  for (const RouteAttempt& a : r.attempts) {
    nlohmann::json candidates = nlohmann::json::array();
    for (const CandidateRecord& c : a.candidates) candidates.push_back(ToJson(c));
    attempts.push_back({{"at_ms", Ms(a.at_ms)},
                        {"candidates", std::move(candidates)},
                        {"chosen", a.chosen},
                        {"reason", a.reason},
                        {"expected_ttft_ms", Ms(a.expected_ttft_ms)},
                        {"fallback_ttft_ms", Ms(a.fallback_ttft_ms)},
                        {"estimated_cached_tokens", a.estimated_cached_tokens},
                        {"result", a.result}});
  }
  nlohmann::json j = {{"kind", "route"},
                      {"entry", r.entry},
                      {"request", r.request},
                      {"policy", r.policy},
                      {"arrived_ms", Ms(r.arrived_ms)},
                      {"prompt_tokens", r.prompt_tokens},
                      {"attempts", std::move(attempts)},
                      {"served_by", r.served_by},
                      {"cached_tokens", r.cached_tokens},
                      {"ttft_ms", Ms(r.ttft_ms)},
                      {"e2e_ms", Ms(r.e2e_ms)}};
  if (!r.error.empty()) j["error"] = r.error;
  return j;
}

nlohmann::json ToJson(const ServeRecord& r) {
  return {{"kind", "serve"},
          {"node", r.node},
          {"entry", r.entry},
          {"request", r.request},
          {"forwarded", r.forwarded},
          {"prompt_tokens", r.prompt_tokens},
          {"cached_tokens", r.cached_tokens},
          {"queued_ms", Ms(r.queued_ms)},
          {"prefill_ms", Ms(r.prefill_ms)},
          {"bounced", r.bounced},
          {"own_estimate_ms", Ms(r.own_estimate_ms)},
          {"bounce_above_ms", Ms(r.bounce_above_ms)}};
}

}  // namespace hearsay::node
