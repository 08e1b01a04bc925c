// Tenants on real nodes (net::Daemon, the simulated engine, loopback sockets): API keys, the
// tenant carried over the authenticated peer link, per-tenant rate limits, and the cross-tenant
// cache attack (docs/security.md, "Tenants").
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <fstream>
#include <future>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "hearsay/env/rng.h"
#include "hearsay/http/client.h"
#include "hearsay/http/peer_headers.h"
#include "hearsay/http/test_util.h"
#include "hearsay/net/api_keys.h"
#include "hearsay/net/blocking_client_test_util.h"
#include "hearsay/net/daemon.h"
#include "hearsay/net/daemon_test_util.h"
#include "hearsay/net/peer_auth.h"
#include "hearsay/testutil/eventually.h"

namespace hearsay::net::tenants_daemon_test {
namespace {

using testing::Start;
using testing::Words;

using namespace std::chrono_literals;
using json = nlohmann::json;
using testutil::Eventually;

using Reply = testing::BlockingResponse;

class Caller : public testing::BlockingClient {
 public:
  // A completion of `prompt` (max_tokens 1) with `key` as its bearer token (none if empty).
  Reply Complete(const std::string& hp, const std::string& key, const std::string& prompt,
                 const json& extra = json::object(), http::Headers headers = {}) {
    json body = {{"model", "hearsay-sim"}, {"prompt", prompt}, {"max_tokens", 1}};
    for (auto it = extra.begin(); it != extra.end(); ++it) body[it.key()] = it.value();
    if (!key.empty()) headers.emplace_back("authorization", "Bearer " + key);
    return Call("POST", hp, "/v1/completions", body.dump(), std::move(headers));
  }
};

int CachedTokens(const Reply& r) {
  return json::parse(r.body)["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>();
}

std::string TempPath(const std::string& name) { return testing::TempPath("tenants", name); }

// A key for `tenant`, its line appended to `file`.
std::string AddKey(const std::string& file, const Tenant& tenant, uint8_t seed) {
  std::array<uint8_t, 38> random{};
  for (size_t i = 0; i < random.size(); ++i) random[i] = static_cast<uint8_t>(seed * 131 + i * 17);
  NewApiKey k = MakeApiKey(tenant, random).value();
  std::ofstream(file, std::ios::app) << k.line;
  return k.key;
}

DaemonConfig Config(const std::string& keys_file) {
  DaemonConfig c = testing::LoopbackConfig();
  c.cluster_key_file = testing::ClusterKeyFile("tenants");
  c.api_keys_file = keys_file;
  return c;
}

TEST(TenantsDaemonTest, EveryV1RequestNeedsAKeyAndHealthStaysOpen) {
  const std::string file = TempPath("keys1");
  std::remove(file.c_str());
  const std::string acme = AddKey(file, {"acme", {}, false}, 1);
  auto d = Start(Config(file));
  ASSERT_TRUE(d);
  Caller c;
  const std::string hp = d->http_address();
  Reply r = c.Complete(hp, "", "hello");
  EXPECT_EQ(r.status, 401);
  json e = json::parse(r.body);
  EXPECT_EQ(e["error"]["code"], "invalid_api_key");
  EXPECT_EQ(e["error"]["type"], "invalid_request_error");
  EXPECT_EQ(c.Complete(hp, acme + "0", "hello").status, 401);
  EXPECT_EQ(c.Complete(hp, "hsk_000000000000_" + std::string(64, '0'), "hello").status, 401);
  EXPECT_EQ(c.Call("GET", hp, "/v1/models").status, 401);
  EXPECT_EQ(c.Call("GET", hp, "/v1/models", {}, {{"authorization", "Bearer " + acme}}).status, 200);
  EXPECT_EQ(c.Call("GET", hp, "/health").status, 200);
  r = c.Complete(hp, acme, "hello");
  EXPECT_EQ(r.status, 200) << r.body;
  // A client cannot name a tenant itself: the header is ignored without a valid hop.
  r = c.Complete(hp, "", "hello", json::object(), {{std::string(http::kTenantHeader), "acme"}});
  EXPECT_EQ(r.status, 401);

  // A key added to the file works once the node has seen the change (polled), and one taken
  // out stops working after a reload (SIGHUP does ReloadApiKeys).
  const std::string globex = AddKey(file, {"globex", {}, false}, 2);
  EXPECT_TRUE(Eventually([&] { return c.Complete(hp, globex, "hi").status == 200; }));
  std::ofstream(file, std::ios::trunc) << "# emptied\n";
  d->ReloadApiKeys();
  EXPECT_EQ(c.Complete(hp, acme, "hello").status, 401);
  // A file that does not parse keeps the keys in use.
  const std::string again = AddKey(file, {"acme", {}, false}, 3);
  d->ReloadApiKeys();
  std::ofstream(file, std::ios::app) << "this is not a key line\n";
  d->ReloadApiKeys();
  EXPECT_EQ(c.Complete(hp, again, "hello").status, 200);

  const std::string metrics = c.Call("GET", hp, "/metrics").body;
  EXPECT_NE(metrics.find("hearsay_tenant_requests_total{tenant=\"acme\"} 2"), std::string::npos)
      << metrics;
  // Six 401s above, and those of the wait for the new key.
  const size_t at = metrics.find("\nhearsay_api_auth_failures_total ");
  ASSERT_NE(at, std::string::npos) << metrics;
  EXPECT_GE(std::stoi(metrics.substr(at + 33)), 6);
  EXPECT_EQ(metrics.find("hsk_"), std::string::npos);
  EXPECT_TRUE(d->Shutdown());
  std::remove(file.c_str());
}

TEST(TenantsDaemonTest, RateLimitsAnswer429WithRetryAfterPerTenant) {
  const std::string file = TempPath("keys2");
  std::remove(file.c_str());
  const std::string slow = AddKey(file, {"slow", {2, 0}, false}, 1);
  const std::string thrifty = AddKey(file, {"thrifty", {0, 600}, false}, 2);
  const std::string free = AddKey(file, {"free", {}, false}, 3);
  auto d = Start(Config(file));
  ASSERT_TRUE(d);
  Caller c;
  const std::string hp = d->http_address();
  // rps 2: a burst of 2, then 429 until the bucket refills (the test sends faster than 2/s:
  // five requests cannot all pass unless half a second passed between each).
  int ok = 0, limited = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 5; ++i) {
    Reply r = c.Complete(hp, slow, "hi");
    if (r.status == 200) ++ok;
    if (r.status == 429) {
      ++limited;
      EXPECT_EQ(json::parse(r.body)["error"]["code"], "rate_limit_exceeded");
      ASSERT_TRUE(r.Header("retry-after"));
      EXPECT_GE(std::stoi(*r.Header("retry-after")), 1);
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LE(ok, 2 + static_cast<int>(seconds * 2) + 1);
  EXPECT_EQ(ok + limited, 5);
  EXPECT_GE(limited, 1);
  // tpm 600: a 500-word prompt passes, the next is over the minute's budget.
  EXPECT_EQ(c.Complete(hp, thrifty, Words("w", 500)).status, 200);
  Reply r = c.Complete(hp, thrifty, Words("w", 500));
  EXPECT_EQ(r.status, 429);
  EXPECT_GE(std::stoi(r.Header("retry-after").value_or("0")), 30);
  // Other tenants are not held back.
  for (int i = 0; i < 5; ++i) EXPECT_EQ(c.Complete(hp, free, "hi").status, 200);
  const std::string metrics = c.Call("GET", hp, "/metrics").body;
  EXPECT_NE(metrics.find("hearsay_tenant_rate_limited_total{limit=\"tpm\",tenant=\"thrifty\"} 1"),
            std::string::npos)
      << metrics;

  // GET /status has the same counts per tenant (names, never keys), and the 401s.
  EXPECT_EQ(c.Complete(hp, "", "hi").status, 401);
  const std::string status_body = c.Call("GET", hp, "/status").body;
  EXPECT_EQ(status_body.find("hsk_"), std::string::npos);
  const json status = json::parse(status_body);
  EXPECT_GE(status["totals"]["api_auth_failures"].get<int>(), 1);
  ASSERT_TRUE(status["tenants"].is_array()) << status_body;
  std::map<std::string, json> tenants;
  for (const json& t : status["tenants"]) tenants[t["name"].get<std::string>()] = t;
  ASSERT_EQ(tenants.size(), 3u) << status_body;
  EXPECT_EQ(tenants["slow"]["requests"], 5);
  EXPECT_EQ(tenants["slow"]["rate_limited"]["rps"], limited);
  EXPECT_EQ(tenants["slow"]["rate_limited"]["tpm"], 0);
  EXPECT_EQ(tenants["thrifty"]["requests"], 2);
  EXPECT_EQ(tenants["thrifty"]["rate_limited"]["tpm"], 1);
  EXPECT_GT(tenants["thrifty"]["tokens"].get<int>(), 500);
  EXPECT_EQ(tenants["free"]["requests"], 5);
  EXPECT_EQ(tenants["free"]["rate_limited"]["rps"], 0);
  // The console (which polls /status) has a table for them.
  EXPECT_NE(c.Call("GET", hp, "/").body.find("renderTenants"), std::string::npos);
  EXPECT_TRUE(d->Shutdown());
  std::remove(file.c_str());
}

// The headers of a hop to `receiver` signed for `tenant` (empty: an authenticator without one).
http::Headers HopHeaders(const std::string& body, const std::string& receiver,
                         const std::string& tenant, const std::string& signed_tenant) {
  http::Headers h = {
      {"x-hearsay-hop", "1"},
      {"x-hearsay-origin", "tester"},
      {"x-hearsay-peer-auth",
       SignPeerRequest(*gossip::ClusterKey::Parse(testing::kTestClusterKey),
                       {"POST", "/v1/completions", body, "tester", receiver, signed_tenant},
                       UnixMillisNow())}};
  if (!tenant.empty()) h.emplace_back(std::string(http::kTenantHeader), tenant);
  return h;
}

TEST(TenantsDaemonTest, TheTenantTravelsWithAForwardAndOnlyAPeerCanNameIt) {
  const std::string file = TempPath("keys3");
  std::remove(file.c_str());
  const std::string acme = AddKey(file, {"acme", {}, false}, 1);
  const std::string globex = AddKey(file, {"globex", {}, false}, 2);
  DaemonConfig ca = Config(file);
  ca.policy = "paper";  // always the longest cached match
  auto a = Start(ca);
  ASSERT_TRUE(a);
  DaemonConfig cb = Config(file);
  cb.join = {a->gossip_address()};
  auto b = Start(cb);
  ASSERT_TRUE(b);
  Caller c;
  ASSERT_TRUE(Eventually([&] {
    json j = json::parse(c.Call("GET", a->http_address(), "/cluster").body);
    return j["members"].size() == 1 && j["members"][0]["state"] == "alive";
  }));
  // B serves acme's long prompt as a hop made for acme.
  const std::string shared = Words("ctx", 1024);
  const std::string body =
      json{{"model", "hearsay-sim"}, {"prompt", shared + " q1"}, {"max_tokens", 1}}.dump();
  // The tenant header must be what the authenticator binds: another name is refused.
  Reply r = c.Call("POST", b->http_address(), "/v1/completions", body,
                   HopHeaders(body, b->node_id(), "acme", "globex"));
  EXPECT_EQ(r.status, 403);
  r = c.Call("POST", b->http_address(), "/v1/completions", body,
             HopHeaders(body, b->node_id(), "acme", ""));
  EXPECT_EQ(r.status, 403);
  r = c.Call("POST", b->http_address(), "/v1/completions", body,
             HopHeaders(body, b->node_id(), "acme", "acme"));
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_TRUE(Eventually([&] {
    json j = json::parse(c.Call("GET", a->http_address(), "/cluster").body);
    return j["members"][0]["cache_entries"].get<int>() > 0;
  }));
  // acme at A: forwarded to B (its namespace matches there) and served from B's cache.
  r = c.Complete(a->http_address(), acme, shared + " q2");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_GE(CachedTokens(r), 1000);
  EXPECT_EQ(json::parse(c.Call("GET", a->http_address(), "/cluster").body)["stats"]["forwarded"],
            1);
  // globex at A, same text: nothing cached for it anywhere.
  r = c.Complete(a->http_address(), globex, shared + " q3");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(CachedTokens(r), 0);
  EXPECT_TRUE(b->Shutdown());
  EXPECT_TRUE(a->Shutdown());
  std::remove(file.c_str());
}

// Two-sided p-value of the Mann-Whitney U test (normal approximation with a tie correction):
// whether samples x and y come from the same distribution.
double MannWhitneyP(const std::vector<double>& x, const std::vector<double>& y) {
  std::vector<std::pair<double, int>> all;
  for (double v : x) all.push_back({v, 0});
  for (double v : y) all.push_back({v, 1});
  std::sort(all.begin(), all.end());
  const double n1 = static_cast<double>(x.size()), n2 = static_cast<double>(y.size());
  const double n = n1 + n2;
  double rank_sum_x = 0, tie_term = 0;
  for (size_t i = 0; i < all.size();) {
    size_t j = i;
    while (j < all.size() && all[j].first == all[i].first) ++j;
    const double mid_rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2;
    const double t = static_cast<double>(j - i);
    tie_term += t * t * t - t;
    for (size_t k = i; k < j; ++k) {
      if (all[k].second == 0) rank_sum_x += mid_rank;
    }
    i = j;
  }
  const double u = rank_sum_x - n1 * (n1 + 1) / 2;
  const double mean = n1 * n2 / 2;
  const double var = n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1)));
  if (var <= 0) return 1.0;
  const double z = (u - mean) / std::sqrt(var);
  return std::erfc(std::fabs(z) / std::sqrt(2.0));
}

TEST(TenantsDaemonTest, MannWhitneyTellsShiftedSamplesApart) {
  EXPECT_LT(MannWhitneyP({1, 2, 3, 4, 5, 6, 7, 8}, {11, 12, 13, 14, 15, 16, 17, 18}), 0.001);
  EXPECT_GT(MannWhitneyP({1, 3, 5, 7, 9, 11, 13, 15}, {2, 4, 6, 8, 10, 12, 14, 16}), 0.5);
  EXPECT_EQ(MannWhitneyP({1, 1, 1}, {1, 1, 1}), 1.0);
}

struct Probe {
  std::vector<int> cached_hit, cached_miss;
  std::vector<double> ttft_hit_ms, ttft_miss_ms;
};

// The attack of issue 17 across two tenants. In a "hit" trial victim A sends a prompt holding a
// secret and attacker B sends the very same prompt (a right guess); in a "miss" trial A sends
// another prompt and B one of the same length that nobody sent (a wrong guess), so both kinds of
// trial load the node alike. B reads cached_tokens and its time to first token (non-streaming,
// max_tokens 1: the client's time is the TTFT plus the same small overhead in both kinds). Every
// prompt starts with a word of its own, so B's earlier probes never match its later ones: any
// cached token B sees comes from A. Trials alternate in a seeded random order.
Probe RunAttack(const std::string& hp, const std::string& victim, const std::string& attacker,
                int trials_per_kind, uint64_t seed) {
  Caller c;
  Rng rng(seed);
  Probe p;
  const std::string body = Words("w", 800);
  for (int i = 0; i < 2 * trials_per_kind; ++i) {
    const bool hit =
        p.cached_hit.size() < static_cast<size_t>(trials_per_kind) &&
        (p.cached_miss.size() >= static_cast<size_t>(trials_per_kind) || rng.Below(2) == 0);
    const std::string pin = std::to_string(10000000 + rng.Below(89999999));
    auto prompt = [&](char kind) {
      std::string s(1, kind);
      s += std::to_string(seed);
      s += 'x';
      s += std::to_string(i);
      s += ' ';
      s += body;
      s += " my pin is ";
      s += pin;
      return s;
    };
    const std::string victims = prompt(hit ? 'v' : 'u');
    EXPECT_EQ(c.Complete(hp, victim, victims).status, 200);
    Reply r = c.Complete(hp, attacker, hit ? victims : prompt('m'));
    EXPECT_EQ(r.status, 200) << r.body;
    const double ms = std::chrono::duration<double, std::milli>(r.elapsed).count();
    (hit ? p.cached_hit : p.cached_miss).push_back(CachedTokens(r));
    (hit ? p.ttft_hit_ms : p.ttft_miss_ms).push_back(ms);
  }
  return p;
}

TEST(TenantsDaemonTest, ATenantLearnsNothingOfAnotherTenantsCacheButSharingLeaks) {
  const std::string file = TempPath("keys4");
  std::remove(file.c_str());
  const std::string a = AddKey(file, {"victim", {}, false}, 1);
  const std::string b = AddKey(file, {"attacker", {}, false}, 2);
  // Two tenants that opted into the shared namespace: the control, where the attack must work.
  const std::string sa = AddKey(file, {"public-a", {}, true}, 3);
  const std::string sb = AddKey(file, {"public-b", {}, true}, 4);
  auto d = Start(Config(file));
  ASSERT_TRUE(d);
  const std::string hp = d->http_address();
  constexpr int kTrials = 12;
  constexpr double kAlpha = 0.001;

  const Probe isolated = RunAttack(hp, a, b, kTrials, 1);
  // Exact: the attacker's cached-token count does not depend on the victim's prompts.
  EXPECT_EQ(isolated.cached_hit, isolated.cached_miss);
  for (int v : isolated.cached_hit) EXPECT_EQ(v, 0);
  const double p_isolated = MannWhitneyP(isolated.ttft_hit_ms, isolated.ttft_miss_ms);
  EXPECT_GT(p_isolated, kAlpha) << "the attacker's TTFT depends on the victim's prompts";

  const Probe shared = RunAttack(hp, sa, sb, kTrials, 2);
  // The same test has power: with a shared namespace it finds the leak in both channels.
  for (int v : shared.cached_hit) EXPECT_GE(v, 800);
  for (int v : shared.cached_miss) EXPECT_EQ(v, 0);
  const double p_shared = MannWhitneyP(shared.ttft_hit_ms, shared.ttft_miss_ms);
  EXPECT_LT(p_shared, kAlpha);
  std::fprintf(stderr,
               "cross-tenant attack, %d trials a kind: isolated p=%.3g (cached %d vs %d), "
               "shared p=%.3g (cached %d vs %d)\n",
               kTrials, p_isolated, isolated.cached_hit[0], isolated.cached_miss[0], p_shared,
               shared.cached_hit[0], shared.cached_miss[0]);

  // cache_salt splits a tenant's own namespace: the same prompt under another salt misses.
  Caller c;
  const std::string prompt = Words("salted", 300);
  ASSERT_EQ(c.Complete(hp, a, prompt, {{"cache_salt", "s1"}}).status, 200);
  EXPECT_EQ(CachedTokens(c.Complete(hp, a, prompt, {{"cache_salt", "s2"}})), 0);
  EXPECT_EQ(CachedTokens(c.Complete(hp, a, prompt)), 0);
  EXPECT_EQ(CachedTokens(c.Complete(hp, a, prompt, {{"cache_salt", "s1"}})), 299);
  EXPECT_TRUE(d->Shutdown());
  std::remove(file.c_str());
}

}  // namespace
}  // namespace hearsay::net::tenants_daemon_test
