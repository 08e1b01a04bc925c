// The engine's own queue, read from a real llama-server: requests sent straight to the server, not
// through hearsay, must show in the load the node in front of it reports (and gossips), both with
// --metrics (llamacpp:requests_processing and _deferred) and without it (the busy slots of
// GET /slots), and leave it once they end.
//
// Arguments (from CMake): <setup-llama.sh> <make_llama2c_model> <hearsay binary>. Label `llama`.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "hearsay/launch/llama_servers.h"
#include "hearsay/launch/local_cluster.h"
#include "hearsay/launch/temp_dir.h"
#include "hearsay/testkit/blocking_http.h"
#include "hearsay/testutil/eventually.h"
#include "llama_test_main.h"

namespace hearsay {
namespace {

using namespace std::chrono_literals;

constexpr int kSlots = 2;
// Requests sent straight to llama-server: one more than its slots, so one waits (deferred).
constexpr int kDirect = kSlots + 1;
// Output tokens of each: long enough that it runs for seconds, over several queue polls.
constexpr int kOutputTokens = 1000;

// {running, queue_depth} of the node's own load on its /cluster page; {-1, -1} when unread.
std::pair<int, int> ReportedLoad(const std::string& node) {
  Result<testkit::HttpResponse> r = testkit::HttpGet(node, "/cluster", 5s);
  if (!r.ok() || r->status != 200) return {-1, -1};
  const nlohmann::json j = nlohmann::json::parse(r->body, nullptr, false);
  if (!j.is_object() || !j.contains("self") || !j["self"].contains("load")) return {-1, -1};
  const nlohmann::json& load = j["self"]["load"];
  return {load.value("running", -1), load.value("queue_depth", -1)};
}

void RunWithOtherClients(bool metrics, const std::string& dir) {
  SCOPED_TRACE(metrics ? "llama-server --metrics" : "llama-server without --metrics");
  launch::LlamaServerOptions lso;
  lso.servers = 1;
  lso.slots = kSlots;
  lso.metrics = metrics;
  lso.log_dir = dir + (metrics ? "/metrics" : "/slots");
  std::filesystem::create_directories(lso.log_dir);
  auto servers = launch::LlamaServers::Start(lso);
  ASSERT_TRUE(servers.ok()) << servers.status().ToString();
  const std::string engine = servers.value()->addresses()[0];
  launch::LocalClusterOptions o;
  o.hearsay_binary = g_hearsay;
  o.nodes = 1;
  o.policy = "local";
  o.engine = "openai";
  o.extra_flags = {"--upstream-flavor",        "llamacpp", "--context-tokens", "8192",
                   "--upstream-queue-poll-ms", "250"};
  o.per_node_flags.push_back({"--upstream", "http://" + engine});
  auto cluster = launch::LocalCluster::Start(o);
  ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
  const std::string node = cluster.value()->node(0).http_address;
  ASSERT_TRUE(testutil::Eventually([&] { return ReportedLoad(node) == std::pair{0, 0}; }, 30s));

  // Other clients of the same engine: nothing of theirs passes through the node. Each ran its
  // whole output once the server answers; the answer may be a 500 ("does not match the expected
  // Content-only format": llama-server's output parser on the random model's long output), which
  // is no concern here.
  std::atomic<int> answered{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < kDirect; ++i) {
    clients.emplace_back([&, i] {
      const nlohmann::json body = {
          {"prompt", "Straight to the engine, client " + std::to_string(i)},
          {"max_tokens", kOutputTokens},
          {"ignore_eos", true}};
      const auto start = std::chrono::steady_clock::now();
      auto r = testkit::HttpPostJson(engine, "/v1/completions", body.dump(), 300s);
      std::fprintf(stderr, "direct request %d: %s after %.1f s\n", i,
                   !r.ok() ? r.status().ToString().c_str()
                           : ("HTTP " + std::to_string(r->status) + " " +
                              r->body.substr(0, r->status == 200 ? 0 : 300))
                                 .c_str(),
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      if (r.ok()) ++answered;
    });
  }
  // With --metrics the node sees the waiting one too; /slots shows only the busy slots.
  const std::pair<int, int> want =
      metrics ? std::pair{kSlots, kDirect - kSlots} : std::pair{kSlots, 0};
  std::pair<int, int> last;
  const bool seen = testutil::Eventually(
      [&] {
        last = ReportedLoad(node);
        return last == want;
      },
      60s);
  EXPECT_TRUE(seen) << "reported running " << last.first << ", waiting " << last.second << "; want "
                    << want.first << ", " << want.second << "\n"
                    << cluster.value()->LogTail(0);
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(answered.load(), kDirect);
  EXPECT_TRUE(testutil::Eventually(
      [&] {
        return ReportedLoad(node) == std::pair{0, 0};
      },
      30s))
      << "the other clients are done";
}

TEST(LlamaQueue, RequestsSentStraightToLlamaServerShowInTheNodesReportedLoad) {
  Status setup = launch::EnsureLlamaSetup(g_setup_script, g_model_tool);
  if (setup.code() == StatusCode::kFailedPrecondition) {
    GTEST_SKIP() << "\n\n*** SKIPPED: " << setup.message() << ". The queue test did NOT run. ***\n";
  }
  ASSERT_TRUE(setup.ok()) << setup.ToString();
  auto dir = launch::TempDir::Create("hearsay-llama-queue");
  ASSERT_TRUE(dir.ok()) << dir.status().ToString();
  RunWithOtherClients(/*metrics=*/true, dir.value()->path());
  RunWithOtherClients(/*metrics=*/false, dir.value()->path());
}

}  // namespace
}  // namespace hearsay
