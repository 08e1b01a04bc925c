// A daemon fronting two simulated engines ([[engine]] entries, kind sim), in process: each model's
// requests reach its own engine and cache, and one prompt under two models never shares a block.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>
#include <string>

#include "hearsay/net/blocking_client_test_util.h"
#include "hearsay/net/daemon.h"

namespace hearsay::net {
namespace {

using json = nlohmann::json;

std::string Words(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) {
    if (i > 0) s += ' ';
    s += 'w';
    s += std::to_string(i);
  }
  return s;
}

// The cached prompt tokens of one completion of `model`, or -1 when it is not answered 200.
int CachedTokens(testing::BlockingClient& client, const std::string& address,
                 const std::string& model, const std::string& prompt) {
  const json body = {{"model", model}, {"prompt", prompt}, {"max_tokens", 2}};
  testing::BlockingResponse r = client.Post(address, "/v1/completions", body);
  EXPECT_EQ(r.status, 200) << r.body;
  if (r.status != 200) return -1;
  const json j = json::parse(r.body);
  EXPECT_EQ(j["model"], model);
  return j["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>();
}

TEST(MultiEngineDaemonTest, EachModelHasItsOwnEngineAndCache) {
  spdlog::set_level(spdlog::level::warn);
  DaemonConfig c;
  c.http_listen = "127.0.0.1:0";
  c.gossip_listen = "127.0.0.1:0";
  c.insecure = true;
  c.log_level = "warn";
  ASSERT_TRUE(c.ApplyToml(R"(
[[engine]]
kind = "sim"
model = "model-a"

[[engine]]
kind = "sim"
model = "model-b"
aliases = ["b"]
preset = "consumer"
)",
                          "node.toml")
                  .ok());
  Result<std::unique_ptr<Daemon>> d = Daemon::Create(std::move(c));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  testing::BlockingClient client;
  const std::string address = (*d)->http_address();
  const std::string prompt = Words(100);

  EXPECT_EQ(CachedTokens(client, address, "model-a", prompt), 0);
  EXPECT_EQ(CachedTokens(client, address, "model-a", prompt), 99);
  // The same prompt for the other model: its engine, and its namespace, have none of it.
  EXPECT_EQ(CachedTokens(client, address, "model-b", prompt), 0);
  EXPECT_EQ(CachedTokens(client, address, "b", prompt), 99);

  testing::BlockingResponse models = client.Get(address, "/v1/models");
  ASSERT_EQ(models.status, 200) << models.body;
  int served_here = 0;
  const json listed = json::parse(models.body);
  for (const json& m : listed["data"]) served_here += m.value("served_here", false) ? 1 : 0;
  EXPECT_EQ(served_here, 2) << models.body;
  (*d)->Shutdown();
}

}  // namespace
}  // namespace hearsay::net
