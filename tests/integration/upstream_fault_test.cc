// Engine faults end to end (issue 6 §5): real `hearsay node --engine openai` processes, each in
// front of a fake OpenAI-compatible upstream (testkit::FakeOpenAiUpstream) that the test switches
// between healthy, down (503 on everything), erroring, garbage and silent. In every case
// the client gets a clear error or a retry elsewhere before the first byte, the node stays up, and
// an engine that keeps failing is advertised as overloaded in gossip until it recovers. An engine
// swamped by other clients' requests (its own /metrics queue) is advertised and routed around too.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "hearsay/testkit/fake_openai_upstream.h"
#include "integration_env.h"

namespace hearsay::integration {
namespace {

using testkit::FakeOpenAiUpstream;
using Mode = FakeOpenAiUpstream::Mode;

class UpstreamFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 2; ++i) {
      upstreams_.push_back(std::make_unique<FakeOpenAiUpstream>());
      upstreams_.back()->set_server_error(500, "kv cache exploded");
      upstreams_.back()->set_text("fine" + std::to_string(i));
    }
  }
  void TearDown() override {
    cluster_.reset();
    upstreams_.clear();
  }
  // Two nodes, node i in front of upstream i; `policy` everywhere.
  void StartNodes(const std::string& policy, const std::string& flavor = "llamacpp") {
    LocalClusterOptions o = ClusterOptions(2, policy);
    o.engine = "openai";
    // The clients here do not stream, so the upstream is asked for whole answers: the answer
    // deadline is the one that applies.
    o.extra_flags = {"--upstream-flavor",
                     flavor,
                     "--upstream-first-token-timeout-ms",
                     "1500",
                     "--upstream-answer-timeout-ms",
                     "1500"};
    for (const auto& u : upstreams_) o.per_node_flags.push_back({"--upstream", u->url()});
    cluster_ = StartCluster(o);
  }
  // Whether node `viewer`'s /cluster shows node `subject` advertising overload.
  bool SeesOverloaded(size_t viewer, size_t subject) {
    Result<HttpResponse> r = testkit::HttpGet(cluster_->node(viewer).http_address, "/cluster", 5s);
    if (!r.ok() || r->status != 200) return false;
    const json view = BodyJson(*r);
    if (viewer == subject) return view.contains("self") && view["self"].value("overloaded", false);
    if (!view.contains("members")) return false;
    for (const json& m : view["members"]) {
      if (m.value("id", "") == cluster_->node(subject).node_id) return m.value("overloaded", false);
    }
    return false;
  }
  // Polls (bounded) until SeesOverloaded(viewer, subject) == want.
  bool WaitOverloaded(size_t viewer, size_t subject, bool want) {
    return testutil::Eventually([&] { return SeesOverloaded(viewer, subject) == want; }, 20s);
  }
  // The load node `viewer`'s /cluster shows for node `subject` (its own report when the same),
  // as {running, queue_depth}; {-1, -1} when it shows none.
  std::pair<int, int> ReportedLoad(size_t viewer, size_t subject) {
    Result<HttpResponse> r = testkit::HttpGet(cluster_->node(viewer).http_address, "/cluster", 5s);
    if (!r.ok() || r->status != 200) return {-1, -1};
    const json view = BodyJson(*r);
    auto load_of = [](const json& m) -> std::pair<int, int> {
      if (!m.contains("load") || !m["load"].is_object()) return {-1, -1};
      return {m["load"].value("running", -1), m["load"].value("queue_depth", -1)};
    };
    if (viewer == subject) return view.contains("self") ? load_of(view["self"]) : std::pair{-1, -1};
    for (const json& m : view.value("members", json::array())) {
      if (m.value("id", "") == cluster_->node(subject).node_id) return load_of(m);
    }
    return {-1, -1};
  }
  Result<HttpResponse> Complete(size_t node, const std::string& tag) {
    return PostCompletion(cluster_->node(node).http_address,
                          CompletionBody(Words(tag, 40), /*max_tokens=*/4));
  }

  std::vector<std::unique_ptr<FakeOpenAiUpstream>> upstreams_;
  std::unique_ptr<LocalCluster> cluster_;
};

TEST_F(UpstreamFaultTest, FailingEngineGivesClearErrorsAndTheNodeStaysUp) {
  // `local`: the client's node serves it, so each fault reaches the client as that node's answer.
  StartNodes("local");
  ASSERT_NE(cluster_, nullptr);
  struct Case {
    Mode mode;
    int http_status;
    const char* code;  // the OpenAI error object's `code` (empty: null)
    const char* says;
  };
  // An engine that reports its own failure is unavailable (503); one that answers garbage is a bad
  // gateway (502); one that says nothing in time is a gateway timeout (504).
  for (const Case& c : {Case{Mode::kServerError, 503, "", "kv cache exploded"},
                        Case{Mode::kGarbage, 502, "upstream_error", "malformed"},
                        Case{Mode::kSilent, 504, "upstream_timeout", "no answer within 1500 ms"}}) {
    SCOPED_TRACE(static_cast<int>(c.mode));
    upstreams_[0]->set_mode(c.mode);
    Result<HttpResponse> r = Complete(0, "fault" + std::to_string(static_cast<int>(c.mode)));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, c.http_status) << r->body;
    const json body = BodyJson(*r);
    ASSERT_TRUE(body.contains("error")) << r->body;
    EXPECT_EQ(body["error"].value("type", ""), "server_error") << r->body;
    const json& code = body["error"]["code"];
    EXPECT_EQ(code.is_null() ? "" : code.get<std::string>(), c.code) << r->body;
    const std::string message = body["error"].value("message", "");
    EXPECT_NE(message.find("upstream"), std::string::npos) << message;
    EXPECT_NE(message.find(c.says), std::string::npos) << message;
    EXPECT_TRUE(Healthy(cluster_->node(0).http_address));
    EXPECT_TRUE(cluster_->running(0));
    // Back to normal: the node serves again (after its health probe, if the failures made the
    // engine unhealthy).
    upstreams_[0]->set_mode(Mode::kOk);
    ASSERT_TRUE(WaitOverloaded(1, 0, false)) << cluster_->LogTail(0);
    Result<HttpResponse> ok = Complete(0, "after" + std::to_string(static_cast<int>(c.mode)));
    ASSERT_TRUE(ok.ok()) << ok.status().ToString();
    EXPECT_EQ(ok->status, 200) << ok->body;
  }
}

TEST_F(UpstreamFaultTest, DownEngineIsAdvertisedOverloadedAndRoutedAroundUntilItRecovers) {
  StartNodes("hearsay");
  ASSERT_NE(cluster_, nullptr);
  upstreams_[0]->set_mode(Mode::kDown);
  // Health probes (every second) fail: node 0 marks its engine unhealthy and gossip carries it.
  ASSERT_TRUE(WaitOverloaded(1, 0, true)) << cluster_->LogTail(0);
  EXPECT_TRUE(Healthy(cluster_->node(0).http_address)) << "the node itself stays up";

  // Clients of either node are served, by node 1's engine: node 0 routes around its own engine,
  // and node 1 does not send to node 0.
  const int before = upstreams_[1]->completions();
  for (int i = 0; i < 6; ++i) {
    Result<HttpResponse> r = Complete(i % 2, "down" + std::to_string(i));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, 200) << r->body;
    // The healthy engine's text, exactly: one "fine1" per requested token.
    EXPECT_EQ(BodyJson(*r)["choices"][0].value("text", ""), "fine1fine1fine1fine1") << r->body;
  }
  EXPECT_EQ(upstreams_[1]->completions() - before, 6);
  EXPECT_EQ(upstreams_[0]->completions(), 0);

  // Recovery: the next health probe that succeeds clears the flag everywhere.
  upstreams_[0]->set_mode(Mode::kOk);
  ASSERT_TRUE(WaitOverloaded(1, 0, false)) << cluster_->LogTail(0);
  ASSERT_TRUE(WaitOverloaded(0, 0, false));
}

TEST_F(UpstreamFaultTest, EngineSwampedByOtherClientsIsRoutedAroundUntilTheyLeave) {
  StartNodes("hearsay");
  ASSERT_NE(cluster_, nullptr);
  // Engine 0 is shared: 100 requests of clients that do not pass through hearsay wait in its
  // queue. Node 0 reads them from the engine's /metrics and gossip carries the overload.
  upstreams_[0]->set_other_clients(4, 100);
  ASSERT_TRUE(WaitOverloaded(1, 0, true)) << cluster_->LogTail(0);

  const int before = upstreams_[1]->completions();
  for (int i = 0; i < 6; ++i) {
    Result<HttpResponse> r = Complete(i % 2, "shared" + std::to_string(i));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, 200) << r->body;
  }
  EXPECT_EQ(upstreams_[1]->completions() - before, 6);
  EXPECT_EQ(upstreams_[0]->completions(), 0);

  upstreams_[0]->set_other_clients(0, 0);
  ASSERT_TRUE(WaitOverloaded(1, 0, false)) << cluster_->LogTail(0);
}

// Other clients' requests on an idle node's engine, read in each engine's own shape, are in the
// load the node reports and gossips; and they leave it when those clients are done.
TEST_F(UpstreamFaultTest, OtherClientsOfTheEngineShowInTheReportedLoadInEachEnginesShape) {
  using F = FakeOpenAiUpstream::QueueFormat;
  struct Case {
    F format;
    const char* flavor;
    std::pair<int, int> load;  // {running, queue_depth} node 0 should report
  };
  // 2 running and 3 waiting; without --metrics, llama-server shows only its 2 busy slots.
  for (const Case& c :
       {Case{F::kLlamaCpp, "llamacpp", {2, 3}}, Case{F::kLlamaCppNoMetrics, "llamacpp", {2, 0}},
        Case{F::kVllm, "vllm", {2, 3}}, Case{F::kSglang, "sglang", {2, 3}}}) {
    SCOPED_TRACE(c.flavor + std::string(c.format == F::kLlamaCppNoMetrics ? " (no metrics)" : ""));
    upstreams_[0]->set_queue_format(c.format);
    upstreams_[0]->set_slots(4);
    upstreams_[0]->set_other_clients(2, 3);
    StartNodes("hearsay", c.flavor);
    ASSERT_NE(cluster_, nullptr);
    EXPECT_TRUE(testutil::Eventually([&] { return ReportedLoad(0, 0) == c.load; }, 20s))
        << ReportedLoad(0, 0).first << " " << ReportedLoad(0, 0).second << cluster_->LogTail(0);
    EXPECT_TRUE(testutil::Eventually([&] { return ReportedLoad(1, 0) == c.load; }, 20s))
        << "gossiped to the peer";
    upstreams_[0]->set_other_clients(0, 0);
    EXPECT_TRUE(testutil::Eventually([&] { return ReportedLoad(0, 0) == std::pair{0, 0}; }, 20s));
    cluster_.reset();
  }
}

}  // namespace
}  // namespace hearsay::integration
