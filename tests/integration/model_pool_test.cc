// A pool of several models end to end (issue 18): three real `hearsay node --engine openai`
// processes, each in front of its own fake upstream, serving two models: node 0 model-a, node 1
// model-b, node 2 both (its engine lists both on /v1/models). Every request, whatever node it
// enters, is answered by an engine serving its model; every node lists both models with how many
// live nodes serve each; an unknown model gets 404 naming it; an odd model name a clear 400.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "hearsay/testkit/fake_openai_upstream.h"
#include "integration_env.h"

namespace hearsay::integration {
namespace {

using testkit::FakeOpenAiUpstream;

constexpr const char* kModelA = "model-a";
constexpr const char* kModelB = "model-b";

class ModelPoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::vector<std::vector<std::string>> lists = {{kModelA}, {kModelB}, {kModelA, kModelB}};
    LocalClusterOptions o = ClusterOptions(3);
    o.engine = "openai";
    o.extra_flags = {"--upstream-flavor", "vllm", "--upstream-models-poll-ms", "500"};
    for (size_t i = 0; i < lists.size(); ++i) {
      upstreams_.push_back(std::make_unique<FakeOpenAiUpstream>());
      upstreams_[i]->set_models({FakeOpenAiUpstream::ModelsFormat::kVllm, lists[i], {}, 4096});
      o.per_node_flags.push_back({"--upstream", upstreams_[i]->url(), "--model", lists[i][0]});
    }
    cluster_ = StartCluster(o);
  }
  void TearDown() override {
    cluster_.reset();
    upstreams_.clear();
  }
  // GET /v1/models at node `i`: model id -> live_nodes, for the base models.
  std::map<std::string, int> Listed(size_t i) {
    Result<HttpResponse> r = testkit::HttpGet(cluster_->node(i).http_address, "/v1/models", 5s);
    std::map<std::string, int> out;
    if (!r.ok() || r->status != 200) return out;
    const json j = BodyJson(*r);
    if (!j.contains("data")) return out;
    for (const json& m : j["data"]) {
      if (!m.contains("parent")) out[m.value("id", "")] = m.value("live_nodes", 0);
    }
    return out;
  }
  Result<HttpResponse> Complete(size_t node, const std::string& model, const std::string& tag) {
    json body = {{"model", model}, {"prompt", Words(tag, 24)}, {"max_tokens", 2}};
    return PostCompletion(cluster_->node(node).http_address, body.dump());
  }

  std::vector<std::unique_ptr<FakeOpenAiUpstream>> upstreams_;
  std::unique_ptr<LocalCluster> cluster_;
};

TEST_F(ModelPoolTest, EveryRequestReachesAnEngineServingItsModelWhereverItEnters) {
  ASSERT_NE(cluster_, nullptr);
  const std::map<std::string, int> both = {{kModelA, 2}, {kModelB, 2}};
  for (size_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(testutil::Eventually([&] { return Listed(i) == both; }, 20s))
        << "node " << i << " lists " << json(Listed(i)).dump();
  }
  int answered = 0;
  for (int round = 0; round < 4; ++round) {
    for (size_t entry = 0; entry < 3; ++entry) {
      for (const char* model : {kModelA, kModelB}) {
        const std::string tag = "r" + std::to_string(round) + "e" + std::to_string(entry) + model;
        Result<HttpResponse> r = Complete(entry, model, tag);
        ASSERT_TRUE(r.ok()) << r.status().ToString();
        ASSERT_EQ(r->status, 200) << r->body;
        EXPECT_EQ(BodyJson(*r)["model"], model) << r->body;
        ++answered;
      }
    }
  }
  // Which engine answered what: never a model its node does not serve.
  const std::map<std::string, int> a = upstreams_[0]->models_asked();
  const std::map<std::string, int> b = upstreams_[1]->models_asked();
  const std::map<std::string, int> c = upstreams_[2]->models_asked();
  EXPECT_EQ(a.count(kModelB), 0u) << json(a).dump();
  EXPECT_EQ(b.count(kModelA), 0u) << json(b).dump();
  int total = 0;
  for (const auto* m : {&a, &b, &c}) {
    for (const auto& [model, n] : *m) total += n;
  }
  EXPECT_EQ(total, answered);
  // Nothing was ever sent to a node without its model.
  for (size_t i = 0; i < 3; ++i) {
    Result<std::vector<testkit::MetricSample>> m = Metrics(cluster_->node(i).http_address);
    ASSERT_TRUE(m.ok());
    EXPECT_EQ(testkit::SumMetric(*m, "hearsay_forwards_wrong_model_total", {}), 0) << i;
    EXPECT_EQ(testkit::SumMetric(*m, "hearsay_service_conflicts", {}), 0) << i;
  }
}

TEST_F(ModelPoolTest, AnUnknownModelIs404NamingItAndAnOddNameIs400) {
  ASSERT_NE(cluster_, nullptr);
  ASSERT_TRUE(testutil::Eventually([&] { return Listed(0).size() == 2; }, 20s));
  Result<HttpResponse> r = Complete(0, "model-z", "unknown");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 404) << r->body;
  const json e = BodyJson(*r)["error"];
  EXPECT_EQ(e["code"], "model_not_found") << r->body;
  EXPECT_NE(e.value("message", "").find("model-z"), std::string::npos) << r->body;

  for (const std::string& odd : {std::string("two words"), std::string(300, 'm')}) {
    r = Complete(1, odd, "odd");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, 400) << r->body;
    EXPECT_EQ(BodyJson(*r)["error"]["param"], "model") << r->body;
  }
  for (const auto& u : upstreams_) EXPECT_EQ(u->completions(), 0);
}

TEST_F(ModelPoolTest, AModelLoadedOnAnEngineIsAdvertisedToThePool) {
  ASSERT_NE(cluster_, nullptr);
  ASSERT_TRUE(testutil::Eventually([&] { return Listed(1).size() == 2; }, 20s));
  // Node 0's engine restarts with a third model beside its own.
  upstreams_[0]->set_models(
      {FakeOpenAiUpstream::ModelsFormat::kVllm, {kModelA, "model-c"}, {"lora-c"}, 4096});
  ASSERT_TRUE(testutil::Eventually([&] { return Listed(1).count("model-c") == 1; }, 20s))
      << json(Listed(1)).dump();
  Result<HttpResponse> r = Complete(1, "model-c", "loaded");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(upstreams_[0]->models_asked()["model-c"], 1);
}

// Two nodes that claim one model with different block sizes would key its prompts differently:
// each says so (metric, /health issue) and neither routes the model to the other.
TEST(ModelPoolConflictTest, ABlockSizeConflictIsReportedAndNotRoutedAcross) {
  LocalClusterOptions o = ClusterOptions(2);
  o.per_node_flags = {{"--block-size", "16"}, {"--block-size", "32"}};
  std::unique_ptr<LocalCluster> cluster = StartCluster(o);
  ASSERT_NE(cluster, nullptr);
  for (size_t i = 0; i < 2; ++i) {
    const std::string address = cluster->node(i).http_address;
    ASSERT_TRUE(testutil::Eventually(
        [&] {
          Result<std::vector<testkit::MetricSample>> m = Metrics(address);
          return m.ok() && testkit::SumMetric(*m, "hearsay_service_conflicts", {}) == 1;
        },
        20s))
        << "node " << i;
    EXPECT_TRUE(testutil::Eventually(
        [&] {
          Result<HttpResponse> h = testkit::HttpGet(address, "/health", 5s);
          return h.ok() && h->body.find("\"service_conflict\"") != std::string::npos;
        },
        20s))
        << "node " << i << ": no service_conflict issue in /health";
  }
  for (int k = 0; k < 6; ++k) {
    Result<HttpResponse> r = PostCompletion(cluster->node(k % 2).http_address,
                                            CompletionBody(Words("c" + std::to_string(k), 40), 2));
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->status, 200) << r->body;
  }
  for (size_t i = 0; i < 2; ++i) {
    Result<std::vector<testkit::MetricSample>> m = Metrics(cluster->node(i).http_address);
    ASSERT_TRUE(m.ok());
    EXPECT_EQ(testkit::SumMetric(*m, kRequestsMetric, {{"decision", "forwarded"}}), 0) << i;
  }
}

}  // namespace
}  // namespace hearsay::integration
