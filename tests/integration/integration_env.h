// Shared helpers of the integration tests: where the built `hearsay` is, how to start a cluster
// (failing the test with the harness's message and log tails), and request bodies.
//
// Thread-safety: the helpers are free functions over values; the request helpers may be called
// from load-generating threads.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "hearsay/launch/local_cluster.h"
#include "hearsay/testkit/blocking_http.h"
#include "hearsay/testkit/metrics_text.h"
#include "hearsay/testutil/eventually.h"

namespace hearsay::integration {

using namespace std::chrono_literals;
using launch::LocalCluster;
using launch::LocalClusterOptions;
using nlohmann::json;
using testkit::HttpResponse;

// The model a `--engine sim` node serves (DaemonConfig::model's default).
inline constexpr const char* kModel = "hearsay-sim";
// Tokens per prefix-cache block (DaemonConfig::block_size's default).
inline constexpr int kBlockTokens = 16;
// Metric names the tests read (docs/operations.md explains every metric).
// Requests by route decision at the entry node, label decision = local | forwarded | retried.
inline constexpr const char* kRequestsMetric = "hearsay_requests_total";
// Requests this node served for a peer (they arrived with the hop marker).
inline constexpr const char* kPeerServedMetric = "hearsay_peer_requests_served_total";
// Bound on one ordinary HTTP call to a node.
inline constexpr auto kCallTimeout = 20s;

inline LocalClusterOptions ClusterOptions(size_t nodes, std::string policy = "hearsay") {
  LocalClusterOptions o;
  o.hearsay_binary = HEARSAY_BINARY;
  o.nodes = nodes;
  o.policy = std::move(policy);
  o.ready_timeout = 40s;
  return o;
}

// A cluster for tests that assert a request goes to its prefix's holder. With the default
// preset the cache saves ~19 ms of prefill on a 640-token prompt, so on a starved machine, where
// the measured RTT passes ~40 ms, serving locally is rightly the cheaper choice and the holder
// loses the request. The consumer preset's slower prefill (0.25 ms per token) makes the saving
// ~160 ms, far above any loopback RTT.
inline LocalClusterOptions HolderRoutingOptions(size_t nodes) {
  LocalClusterOptions o = ClusterOptions(nodes);
  o.engine_preset = "consumer";
  return o;
}

// Starts a cluster; on failure records the harness's message (with the nodes' log tails) as a
// test failure and returns null.
inline std::unique_ptr<LocalCluster> StartCluster(const LocalClusterOptions& options) {
  Result<std::unique_ptr<LocalCluster>> c = LocalCluster::Start(options);
  if (!c.ok()) {
    ADD_FAILURE() << c.status().ToString();
    return nullptr;
  }
  return std::move(c).value();
}

// `words` distinct-looking words: a prompt of about that many tokens (the sim tokenizer makes one
// token per word). `tag` makes prompts of different tests and runs distinct.
inline std::string Words(const std::string& tag, int words) {
  std::string out;
  for (int i = 0; i < words; ++i) {
    out += (i == 0 ? "" : " ") + tag + "w" + std::to_string(i % 89) + "q" + std::to_string(i);
  }
  return out;
}

inline std::string CompletionBody(const std::string& prompt, int max_tokens, bool stream = false) {
  json body = {{"model", kModel}, {"prompt", prompt}, {"max_tokens", max_tokens}};
  if (stream) {
    body["stream"] = true;
    body["stream_options"] = {{"include_usage", true}};
  }
  return body.dump();
}

inline Result<HttpResponse> PostCompletion(const std::string& address, const std::string& body) {
  return testkit::HttpPostJson(address, "/v1/completions", body, kCallTimeout);
}

// The parsed JSON of a response body (a null json on a parse error, which then fails the
// caller's field checks with the body in the message).
inline json BodyJson(const HttpResponse& r) {
  return json::parse(r.body, nullptr, /*allow_exceptions=*/false);
}

// usage.prompt_tokens_details.cached_tokens of a completion response, or -1 if absent.
inline int64_t CachedTokens(const json& response) {
  const json* usage = response.contains("usage") ? &response["usage"] : nullptr;
  if (usage == nullptr || !usage->contains("prompt_tokens_details")) return -1;
  const json& details = (*usage)["prompt_tokens_details"];
  if (!details.contains("cached_tokens") || !details["cached_tokens"].is_number_integer())
    return -1;
  return details["cached_tokens"].get<int64_t>();
}

inline int64_t PromptTokens(const json& response) {
  if (!response.contains("usage") || !response["usage"].contains("prompt_tokens")) return -1;
  return response["usage"]["prompt_tokens"].get<int64_t>();
}

// Node `address`'s /metrics, parsed.
inline Result<std::vector<testkit::MetricSample>> Metrics(const std::string& address) {
  Result<HttpResponse> r = testkit::HttpGet(address, "/metrics", kCallTimeout);
  if (!r.ok()) return r.status();
  if (r->status != 200) return UnavailableError("/metrics: HTTP " + std::to_string(r->status));
  return testkit::ParsePrometheusText(r->body);
}

// True when `address` answers /health with 200.
inline bool Healthy(const std::string& address) {
  Result<HttpResponse> r = testkit::HttpGet(address, "/health", 5s);
  return r.ok() && r->status == 200;
}

}  // namespace hearsay::integration

namespace hearsay::integration {

// The one node whose cache summary every other node sees as non-empty, once that is so (bounded
// by `timeout`): after a single request has been served, the node that served it. NOT_FOUND
// (naming what the views said) if no such node appears in time.
inline Result<size_t> WaitForSoleHolder(LocalCluster& cluster, std::chrono::milliseconds timeout) {
  std::string last;
  std::vector<size_t> holders;
  const bool found = testutil::Eventually(
      [&] {
        holders.clear();
        last.clear();
        for (size_t h = 0; h < cluster.size(); ++h) {
          if (!cluster.running(h)) continue;
          bool everyone_sees = true;
          for (size_t i = 0; i < cluster.size() && everyone_sees; ++i) {
            if (i == h || !cluster.running(i)) continue;
            Result<launch::ClusterView> view = cluster.View(i);
            const launch::MemberInfo* m = view.ok() ? view->Find(cluster.node(h).node_id) : nullptr;
            everyone_sees = m != nullptr && m->cache_keys > 0;
            if (m != nullptr) {
              last += cluster.node(i).node_id + " sees " + m->node_id + " with " +
                      std::to_string(m->cache_keys) + " keys; ";
            }
          }
          if (everyone_sees) holders.push_back(h);
        }
        return holders.size() == 1;
      },
      timeout);
  if (found) return holders[0];
  return NotFoundError("no single cache holder visible to all after " +
                       std::to_string(timeout.count()) + " ms (" + std::to_string(holders.size()) +
                       " candidates): " + last);
}

}  // namespace hearsay::integration
