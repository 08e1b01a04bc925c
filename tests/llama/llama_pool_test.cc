// Two models in one pool, on real engines: 3 hearsay nodes and 4 llama-servers of 2 different
// random-weight models (scripts/setup-llama.sh makes both). Node 0 fronts a server of model A,
// node 1 one of model B, and node 2 one of each through two [[engine]] entries in its TOML.
// Requests for both models enter at every node: each must be answered (200) by a node that serves
// its model, and the llama-servers' own counters must show that each model's prompts were
// processed by that model's servers and no other. Every node's GET /v1/models lists both models;
// an unknown model is a 404 model_not_found.
//
// The test skips, loudly, only when llama.cpp cannot be built on this machine (setup-llama.sh
// exit code 3). Arguments (from CMake): <setup-llama.sh> <make_llama2c_model> <hearsay binary>.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "hearsay/launch/llama_servers.h"
#include "hearsay/launch/local_cluster.h"
#include "hearsay/launch/temp_dir.h"
#include "hearsay/testkit/blocking_http.h"
#include "hearsay/testkit/metrics_text.h"
#include "hearsay/testutil/eventually.h"
#include "llama_test_main.h"

namespace hearsay {
namespace {

using namespace std::chrono_literals;

constexpr size_t kNodes = 3;
constexpr int kRequests = 36;  // 6 per (model, entry node)
constexpr int kMaxTokens = 4;
constexpr auto kCallTimeout = 60s;
// Forwards that may fail mid-answer and be served again (see the engines' counts below).
constexpr int kRetrySlackRequests = 2;

// One model of the pool: its official name, its file, its servers and the nodes that serve it.
struct PoolModel {
  std::string name;
  std::string file;
  std::unique_ptr<launch::LlamaServers> servers;  // [0] behind its own node, [1] behind node 2
  std::set<std::string> serving_nodes;
  double prompt_tokens = 0;           // summed usage.prompt_tokens of its answers
  std::map<std::string, int> served;  // answers per serving node
};

Result<std::unique_ptr<launch::LlamaServers>> StartServers(const PoolModel& m,
                                                           const std::string& dir) {
  launch::LlamaServerOptions o;
  o.servers = 2;
  o.model_file = m.file;
  o.alias = m.name;
  o.slots = 2;
  o.context_per_slot = 8192;
  o.cache_ram_mib = 16;
  o.log_dir = dir;
  o.log_prefix = m.name + "-";
  return launch::LlamaServers::Start(o);
}

// Node 2's configuration: one [[engine]] entry per model.
std::string TwoEngineToml(const std::vector<PoolModel>& models) {
  std::string toml;
  for (const PoolModel& m : models) {
    toml += "[[engine]]\nmodel = \"" + m.name + "\"\nupstream = \"http://" +
            m.servers->addresses()[1] + "\"\nflavor = \"llamacpp\"\n\n";
  }
  return toml;
}

// The model ids a node's GET /v1/models lists.
std::set<std::string> ListedModels(const std::string& node) {
  std::set<std::string> ids;
  Result<testkit::HttpResponse> r = testkit::HttpGet(node, "/v1/models", 5s);
  if (!r.ok() || r.value().status != 200) return ids;
  const nlohmann::json j = nlohmann::json::parse(r.value().body, nullptr, false);
  if (!j.is_object() || !j.contains("data") || !j["data"].is_array()) return ids;
  for (const nlohmann::json& e : j["data"]) {
    if (e.is_object() && e.contains("id") && e["id"].is_string()) ids.insert(e["id"]);
  }
  return ids;
}

// Prompt tokens a llama-server has processed or reused from its cache (its /metrics), -1 when
// unreadable.
double EnginePromptTokens(const std::string& server) {
  Result<testkit::HttpResponse> r = testkit::HttpGet(server, "/metrics", 5s);
  if (!r.ok() || r.value().status != 200) return -1;
  Result<std::vector<testkit::MetricSample>> s = testkit::ParsePrometheusText(r.value().body);
  if (!s.ok()) return -1;
  return testkit::SumMetric(*s, "llamacpp:prompt_tokens_total") +
         testkit::SumMetric(*s, "llamacpp:prompt_tokens_cached_total");
}

double ModelEnginePromptTokens(const PoolModel& m) {
  double sum = 0;
  for (const std::string& server : m.servers->addresses()) {
    const double n = EnginePromptTokens(server);
    if (n < 0) return -1;
    sum += n;
  }
  return sum;
}

TEST(LlamaPool, TwoModelsOnThreeNodesEachRequestServedByItsModel) {
  Status setup = launch::EnsureLlamaSetup(g_setup_script, g_model_tool);
  if (setup.code() == StatusCode::kFailedPrecondition) {
    GTEST_SKIP() << "\n\n*** SKIPPED: " << setup.message()
                 << ". The 2-model pool test on real engines did NOT run. ***\n";
  }
  ASSERT_TRUE(setup.ok()) << setup.ToString();
  auto dir = launch::TempDir::Create("hearsay-llama-pool");
  ASSERT_TRUE(dir.ok()) << dir.status().ToString();
  const std::string path = dir.value()->path();

  std::vector<PoolModel> models(2);
  models[0].name = "hearsay-tiny-a";
  models[0].file = "hearsay-tiny.gguf";
  models[0].serving_nodes = {"node-0", "node-2"};
  models[1].name = "hearsay-tiny-b";
  models[1].file = "hearsay-tiny-b.gguf";
  models[1].serving_nodes = {"node-1", "node-2"};
  for (PoolModel& m : models) {
    auto servers = StartServers(m, path);
    ASSERT_TRUE(servers.ok()) << m.name << ": " << servers.status().ToString();
    m.servers = std::move(servers).value();
  }
  const std::string toml_path = path + "/node-2.toml";
  std::ofstream(toml_path) << TwoEngineToml(models);

  launch::LocalClusterOptions o;
  o.hearsay_binary = g_hearsay;
  o.nodes = kNodes;
  o.engine = "openai";
  o.capacity_tokens = 16384;
  o.extra_flags = {"--context-tokens", "8192"};
  for (size_t i = 0; i < 2; ++i) {
    o.per_node_flags.push_back({"--model", models[i].name, "--upstream",
                                "http://" + models[i].servers->addresses()[0], "--upstream-flavor",
                                "llamacpp"});
  }
  // Its entries are the node's engines; the top-level engine must not be `openai` (that one would
  // need an --upstream of its own).
  o.per_node_flags.push_back({"--config", toml_path, "--engine", "sim"});
  auto cluster = launch::LocalCluster::Start(o);
  ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
  auto& c = *cluster.value();

  // Every node lists both models once the services have gossiped.
  const std::set<std::string> both = {models[0].name, models[1].name};
  for (size_t i = 0; i < kNodes; ++i) {
    const std::string node = c.node(i).http_address;
    EXPECT_TRUE(testutil::Eventually(
        [&] {
          const std::set<std::string> ids = ListedModels(node);
          return ids.count(models[0].name) == 1 && ids.count(models[1].name) == 1;
        },
        30s))
        << "node-" << i << " /v1/models does not list both models\n"
        << c.AllLogTails(10);
  }
  ASSERT_FALSE(HasFailure());

  // Both models through every entry node.
  int answered = 0;
  double max_prompt_tokens = 0;
  for (int i = 0; i < kRequests; ++i) {
    PoolModel& m = models[i % 2];
    const size_t entry = (i / 2) % kNodes;
    const nlohmann::json body = {
        {"model", m.name},
        {"prompt", "Request " + std::to_string(i) + " for " + m.name + ": tell me about the " +
                       std::to_string(i * 7) + " lighthouses of the northern coast."},
        {"max_tokens", kMaxTokens},
        {"temperature", 0}};
    Result<testkit::HttpResponse> r = testkit::HttpPostJson(
        c.node(entry).http_address, "/v1/completions", body.dump(), kCallTimeout);
    ASSERT_TRUE(r.ok()) << "request " << i << ": " << r.status().ToString();
    EXPECT_EQ(r.value().status, 200)
        << "request " << i << " (" << m.name << " at node-" << entry << "): " << r.value().body;
    if (r.value().status != 200) continue;
    const std::string served_by = r.value().Header("x-hearsay-served-by").value_or("");
    EXPECT_EQ(m.serving_nodes.count(served_by), 1u)
        << "request " << i << " for " << m.name << " served by '" << served_by << "'";
    ++m.served[served_by];
    const nlohmann::json answer = nlohmann::json::parse(r.value().body, nullptr, false);
    ASSERT_TRUE(answer.is_object() && answer.contains("usage")) << r.value().body;
    EXPECT_EQ(answer.value("model", ""), m.name) << r.value().body;
    const double prompt_tokens = answer["usage"].value("prompt_tokens", 0.0);
    m.prompt_tokens += prompt_tokens;
    max_prompt_tokens = std::max(max_prompt_tokens, prompt_tokens);
    ++answered;
  }
  EXPECT_EQ(answered, kRequests);

  // The engines' own counts: each model's prompts were processed by its servers. A forward that
  // fails mid-answer (llama-server rejects some of the random weights' output as malformed) is
  // served again by another engine of the same model, so the servers may count a little more
  // than was answered, never less; a request sent to the other model's engine would break one
  // of the two bounds. llama-server publishes its prompt counters once its slots are idle.
  for (const PoolModel& m : models) {
    EXPECT_GT(m.prompt_tokens, 0) << m.name;
    const double bound = m.prompt_tokens + kRetrySlackRequests * max_prompt_tokens;
    double engine = -1;
    EXPECT_TRUE(testutil::Eventually(
        [&] {
          engine = ModelEnginePromptTokens(m);
          return engine >= m.prompt_tokens && engine <= bound;
        },
        20s))
        << m.name << ": its llama-servers counted " << engine << " prompt tokens, its answers "
        << m.prompt_tokens << " (at most " << bound << " allowed)";
    std::printf("%s: %.0f prompt tokens answered, %.0f counted by its llama-servers; served by",
                m.name.c_str(), m.prompt_tokens, engine);
    for (const auto& [node, n] : m.served) std::printf(" %s %d", node.c_str(), n);
    std::printf("\n");
  }
  double wrong_model = 0;
  for (size_t i = 0; i < kNodes; ++i) {
    Result<testkit::HttpResponse> r = testkit::HttpGet(c.node(i).http_address, "/metrics", 5s);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    auto samples = testkit::ParsePrometheusText(r.value().body);
    ASSERT_TRUE(samples.ok()) << samples.status().ToString();
    wrong_model += testkit::SumMetric(*samples, "hearsay_forwards_wrong_model_total");
  }
  EXPECT_EQ(wrong_model, 0) << "forwards reached a node without their model";

  // A model no member serves.
  for (size_t i = 0; i < kNodes; ++i) {
    Result<testkit::HttpResponse> r = testkit::HttpPostJson(
        c.node(i).http_address, "/v1/completions",
        R"({"model":"no-such-model","prompt":"hello","max_tokens":1})", kCallTimeout);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r.value().status, 404) << r.value().body;
    EXPECT_NE(r.value().body.find("model_not_found"), std::string::npos) << r.value().body;
  }
  if (HasFailure()) {
    dir.value()->Keep();
    std::fprintf(stderr, "llama-server logs kept in %s\nnode logs:\n%s\n", path.c_str(),
                 c.AllLogTails(20).c_str());
  }
}

}  // namespace
}  // namespace hearsay
