// One node fronting two engines ([[engine]] entries, issue 18 §1): a real `hearsay node` in front
// of two fake upstreams, each serving its own model. Every request reaches the upstream of its
// model, streamed or not; /v1/models lists both models as served here; a model neither serves
// gets 404 and reaches no upstream; an engine's failure reaches only its model's requests.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "hearsay/testkit/fake_openai_upstream.h"
#include "integration_env.h"

namespace hearsay::integration::multi_engine_test {
namespace {

using testkit::FakeOpenAiUpstream;

constexpr const char* kModelA = "model-a";
constexpr const char* kModelB = "model-b";

class MultiEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::vector<std::string> models = {kModelA, kModelB};
    std::string toml;
    for (size_t i = 0; i < models.size(); ++i) {
      upstreams_.push_back(std::make_unique<FakeOpenAiUpstream>());
      upstreams_[i]->set_models({FakeOpenAiUpstream::ModelsFormat::kVllm, {models[i]}, {}, 4096});
      toml.append("[[engine]]\nmodel = \"").append(models[i]).append("\"\n");
      toml.append("upstream = \"").append(upstreams_[i]->url()).append("\"\n");
      toml.append("flavor = \"vllm\"\nupstream_models_poll_ms = 500\n\n");
    }
    config_path_ =
        ::testing::TempDir() + "hearsay_multi_engine_" + std::to_string(::getpid()) + ".toml";
    std::ofstream(config_path_) << toml;
    LocalClusterOptions o = ClusterOptions(1);
    o.per_node_flags = {{"--config", config_path_}};
    cluster_ = StartCluster(o);
  }
  void TearDown() override {
    cluster_.reset();
    upstreams_.clear();
    std::remove(config_path_.c_str());
  }
  // GET /v1/models: model id -> served_here, for the base models.
  std::map<std::string, bool> Listed() {
    Result<HttpResponse> r = testkit::HttpGet(cluster_->node(0).http_address, "/v1/models", 5s);
    std::map<std::string, bool> out;
    if (!r.ok() || r->status != 200) return out;
    const json j = BodyJson(*r);
    if (!j.contains("data")) return out;
    for (const json& m : j["data"]) {
      if (!m.contains("parent")) out[m.value("id", "")] = m.value("served_here", false);
    }
    return out;
  }
  Result<HttpResponse> Complete(const std::string& model, const std::string& tag, bool stream) {
    json body = {{"model", model}, {"prompt", Words(tag, 24)}, {"max_tokens", 2}};
    if (stream) body["stream"] = true;
    return PostCompletion(cluster_->node(0).http_address, body.dump());
  }

  std::string config_path_;
  std::vector<std::unique_ptr<FakeOpenAiUpstream>> upstreams_;
  std::unique_ptr<LocalCluster> cluster_;
};

TEST_F(MultiEngineTest, EachRequestReachesTheUpstreamOfItsModel) {
  ASSERT_NE(cluster_, nullptr);
  const std::map<std::string, bool> both = {{kModelA, true}, {kModelB, true}};
  ASSERT_TRUE(testutil::Eventually([&] { return Listed() == both; }, 20s)) << json(Listed()).dump();
  std::map<std::string, int> sent;
  for (int round = 0; round < 3; ++round) {
    for (const char* model : {kModelA, kModelB}) {
      const bool stream = round == 1;
      const std::string tag = "r" + std::to_string(round) + model;
      Result<HttpResponse> r = Complete(model, tag, stream);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      ASSERT_EQ(r->status, 200) << r->body;
      if (!stream) {
        EXPECT_EQ(BodyJson(*r)["model"], model) << r->body;
      }
      ++sent[model];
    }
  }
  EXPECT_EQ(upstreams_[0]->models_asked(), (std::map<std::string, int>{{kModelA, sent[kModelA]}}));
  EXPECT_EQ(upstreams_[1]->models_asked(), (std::map<std::string, int>{{kModelB, sent[kModelB]}}));
}

TEST_F(MultiEngineTest, AModelNeitherEngineServesIs404AndReachesNoUpstream) {
  ASSERT_NE(cluster_, nullptr);
  ASSERT_TRUE(testutil::Eventually([&] { return Listed().size() == 2; }, 20s));
  Result<HttpResponse> r = Complete("model-z", "unknown", false);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 404) << r->body;
  EXPECT_EQ(BodyJson(*r)["error"]["code"], "model_not_found") << r->body;
  for (const auto& u : upstreams_) EXPECT_EQ(u->completions(), 0);
}

TEST_F(MultiEngineTest, AnEngineFailingReachesOnlyTheRequestsOfItsModel) {
  ASSERT_NE(cluster_, nullptr);
  ASSERT_TRUE(testutil::Eventually([&] { return Listed().size() == 2; }, 20s));
  upstreams_[1]->set_mode(FakeOpenAiUpstream::Mode::kServerError);
  Result<HttpResponse> b = Complete(kModelB, "failing", false);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_GE(b->status, 500) << b->body;
  Result<HttpResponse> a = Complete(kModelA, "healthy", false);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->status, 200) << a->body;
  EXPECT_EQ(upstreams_[0]->models_asked(), (std::map<std::string, int>{{kModelA, 1}}));
}

}  // namespace
}  // namespace hearsay::integration::multi_engine_test
