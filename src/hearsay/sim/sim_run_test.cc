#include "hearsay/sim/sim_run.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "hearsay/node/decision_record.h"
#include "hearsay/sim/sim_metrics.h"

namespace hearsay::sim {
namespace {

SimConfig Small(const std::string& policy) {
  SimConfig c;
  c.nodes = 4;
  c.policy = policy;
  c.requests = 1500;
  c.warmup_ms = 2000;
  return c;
}

TEST(SimRunTest, SameSeedSameSummary) {
  auto a = RunSim(Small("hearsay"));
  auto b = RunSim(Small("hearsay"));
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(b.ok());
  nlohmann::json ja = ToJson(*a), jb = ToJson(*b);
  for (auto* j : {&ja, &jb}) {
    j->erase("sim_requests_per_wall_s");
    j->erase("wall_seconds");
  }
  EXPECT_EQ(ja, jb);
  SimConfig other = Small("hearsay");
  other.seed = 2;
  auto d = RunSim(other);
  ASSERT_TRUE(d.ok());
  EXPECT_NE(d->mean_ttft_ms, a->mean_ttft_ms);
}

TEST(SimRunTest, SummarySanity) {
  auto local = RunSim(Small("local"));
  ASSERT_TRUE(local.ok());
  EXPECT_EQ(local->requests, 1500u);
  EXPECT_EQ(local->failed, 0u);
  EXPECT_EQ(local->forwarded_frac, 0.0);
  EXPECT_GE(local->hit_rate, 0.0);
  EXPECT_LE(local->hit_rate, 1.0);
  EXPECT_LE(local->p50_ttft_ms, local->p90_ttft_ms);
  EXPECT_LE(local->p90_ttft_ms, local->p99_ttft_ms);
  EXPECT_GT(local->gossip_bytes_per_node_s, 0.0);
  EXPECT_EQ(local->per_node_work.size(), 4u);

  auto oracle = RunSim(Small("oracle"));
  ASSERT_TRUE(oracle.ok());
  EXPECT_GT(oracle->forwarded_frac, 0.2);
  EXPECT_GT(oracle->hit_rate, local->hit_rate);
  EXPECT_LT(oracle->mean_ttft_ms, local->mean_ttft_ms);
}

TEST(SimRunTest, RecordsMatchTheSummary) {
  SimConfig c = Small("hearsay");
  c.record_requests = true;
  auto s = RunSim(c);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(s->records.size(), 1500u);
  uint64_t forwarded = 0, prompt = 0, cached = 0;
  std::vector<uint64_t> served(4, 0);
  for (size_t i = 0; i < s->records.size(); ++i) {
    const RequestRecord& r = s->records[i];
    EXPECT_EQ(r.id, i);
    ASSERT_GE(r.served_node, 0);
    ASSERT_LT(r.served_node, 4);
    EXPECT_GE(r.subject, 0);
    EXPECT_GT(r.ttft_ms, 0);
    EXPECT_LE(r.cached_tokens, r.prompt_tokens);
    if (i > 0) {
      EXPECT_GE(r.arrival_ms, s->records[i - 1].arrival_ms);
    }
    forwarded += static_cast<uint32_t>(r.served_node) != r.entry_node ? 1 : 0;
    prompt += r.prompt_tokens;
    cached += r.cached_tokens;
    ++served[r.served_node];
  }
  EXPECT_DOUBLE_EQ(s->forwarded_frac, static_cast<double>(forwarded) / 1500);
  EXPECT_DOUBLE_EQ(s->hit_rate, static_cast<double>(cached) / static_cast<double>(prompt));
  EXPECT_EQ(std::vector<uint64_t>(s->per_node_served.begin(), s->per_node_served.end()), served);
  EXPECT_GT(s->specialist_share, 0.25);
  EXPECT_LE(s->specialist_share, 1.0);
  EXPECT_GE(s->specialist_drift, 0.0);
  EXPECT_LE(s->specialist_drift, 1.0);
  // Without the flag, no records and no drift figures.
  auto plain = RunSim(Small("hearsay"));
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE(plain->records.empty());
  EXPECT_EQ(plain->specialist_share, 0.0);
  EXPECT_EQ(plain->mean_ttft_ms, s->mean_ttft_ms);
}

// Peer views of every routing decision, as the node recorded them.
class PeerViews : public node::DecisionRecorder {
 public:
  void OnRoute(const node::RouteRecord& r) override {
    for (const node::RouteAttempt& a : r.attempts) {
      for (const node::CandidateRecord& c : a.candidates) {
        if (c.is_self) continue;
        ++peers;
        // No prompt block proven, yet some allowed: a landmark held that is not a prompt's.
        if (c.cached_tokens == 0 && c.cached_tokens_max > 0) ++unproven_allowed;
      }
    }
  }
  void OnServe(const node::ServeRecord&) override {}
  uint64_t peers = 0;
  uint64_t unproven_allowed = 0;
};

// A named model (as a daemon serves one): every request asks for it, and the nodes key its
// prompts in the model's namespace, whose block heads every chain. That block is a header, not a
// landmark: were it one, every peer that has served any prompt of the model would hold it, and its
// view would allow up to a landmark gap of a prompt without proving a block of it. As unnamed, the
// first landmark is the prompt's first block, and a peer without it is known to hold nothing.
TEST(SimRunTest, ANamedModelKeysPromptsInItsNamespace) {
  SimConfig c = Small("hearsay");
  c.requests = 300;
  PeerViews unnamed;
  auto plain = RunSimRecorded(c, {}, &unnamed);
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  c.model = "m";
  PeerViews named;
  auto s = RunSimRecorded(c, {}, &named);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->requests, 300u);
  EXPECT_EQ(s->failed, 0u);
  EXPECT_EQ(s->wrong_model, 0u);
  ASSERT_GT(named.peers, 0u);
  ASSERT_GT(unnamed.peers, 0u);
  EXPECT_EQ(unnamed.unproven_allowed, 0u);
  EXPECT_EQ(named.unproven_allowed, 0u);
  c.cluster = "consumer:2";
  EXPECT_EQ(ValidateSimConfig(c).code(), StatusCode::kInvalidArgument);
}

// Each chat turn's prompt repeats the previous turn's answer; the engine is scripted to answer
// exactly that, so on one node with room for everything a later turn hits the whole previous
// prompt and answer (before scripted answers, it missed from the answer on).
// The llama demo's four CPU engines on one host: fewer cores, slower first tokens, the same
// requests served; and as deterministic as engines on machines of their own.
TEST(SimRunTest, EnginesOnOneHostShareItsCores) {
  SimConfig c;
  c.nodes = 4;
  c.policy = "least-loaded";
  c.engine_preset = "llama-tiny-cpu";
  c.capacity_tokens = 7282;
  c.max_running = 4;
  c.zipf = 1;
  c.rate_per_s = 2;
  c.requests = 200;
  std::vector<double> ttft;
  for (double cores : {0.0, 2.0, 1.0}) {
    c.host_cores = cores;
    Result<SimSummary> a = RunSim(c);
    Result<SimSummary> b = RunSim(c);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(ToJson(*a)["mean_ttft_ms"], ToJson(*b)["mean_ttft_ms"]) << cores;
    EXPECT_EQ(a->failed, 0u);
    ttft.push_back(a->mean_ttft_ms);
  }
  EXPECT_LT(ttft[0], ttft[1]);
  EXPECT_LT(ttft[1], ttft[2]);
  // Prefills that meet slow each other beyond the cores: slower again, still deterministic.
  c.host_cores = 2;
  c.host_contention = 0.3;
  Result<SimSummary> contended = RunSim(c);
  ASSERT_TRUE(contended.ok()) << contended.status().ToString();
  EXPECT_GT(contended->mean_ttft_ms, ttft[1]);
  EXPECT_EQ(ToJson(*contended)["mean_ttft_ms"], ToJson(*RunSim(c))["mean_ttft_ms"]);
  c.host_contention = -0.1;
  EXPECT_FALSE(ValidateSimConfig(c).ok());
  c.host_contention = 0.3;
  c.host_cores = 0;  // contention needs a shared host
  EXPECT_FALSE(ValidateSimConfig(c).ok());
  c.host_contention = 0;
  c.host_cores = -1;
  EXPECT_FALSE(ValidateSimConfig(c).ok());
}

// Liars and slanderers are distinct nodes, and at least one node is honest; listers to trim are
// bounded.
TEST(SimRunTest, MisbehavingNodesAndTrimmedListersAreBounded) {
  SimConfig c;
  c.nodes = 4;
  c.liars = 2;
  c.slanderers = 1;
  EXPECT_TRUE(ValidateSimConfig(c).ok());
  c.slanderers = 2;
  EXPECT_EQ(ValidateSimConfig(c).code(), StatusCode::kInvalidArgument);
  c.slanderers = -1;
  EXPECT_EQ(ValidateSimConfig(c).code(), StatusCode::kInvalidArgument);
  c.slanderers = 0;
  c.trimmed_listers = 0;
  EXPECT_TRUE(ValidateSimConfig(c).ok());
  c.trimmed_listers = 5;
  EXPECT_EQ(ValidateSimConfig(c).code(), StatusCode::kInvalidArgument);
}

// llama-server's cache (--engine-cache slots) needs its slots, and keeps a shared prefix once per
// prompt, so the same run hits less than a paged cache of the same capacity.
TEST(SimRunTest, SlotEnginesNeedTheirSlotsAndStoreWholePrompts) {
  SimConfig c;
  c.nodes = 4;
  c.requests = 400;
  c.zipf = 1;
  c.rate_per_s = 2;
  c.engine_preset = "llama-tiny-cpu";
  c.capacity_tokens = 4096;
  c.engine_cache = "slots";
  EXPECT_EQ(ValidateSimConfig(c).code(), StatusCode::kInvalidArgument);  // no --max-running
  c.max_running = 4;
  Result<SimSummary> slots = RunSim(c);
  ASSERT_TRUE(slots.ok()) << slots.status().ToString();
  c.engine_cache = "paged";
  Result<SimSummary> paged = RunSim(c);
  ASSERT_TRUE(paged.ok()) << paged.status().ToString();
  EXPECT_EQ(slots->failed + paged->failed, 0u);
  EXPECT_GT(slots->hit_rate, 0.1);
  EXPECT_LT(slots->hit_rate, paged->hit_rate);
  c.engine_cache = "lru";
  EXPECT_EQ(ValidateSimConfig(c).code(), StatusCode::kInvalidArgument);
}

TEST(SimRunTest, ChatTurnsHitThePreviousAnswer) {
  SimConfig c;
  c.workload = "chat";
  c.nodes = 1;
  c.policy = "local";
  c.requests = 300;
  c.rho = 0.3;
  c.capacity_tokens = 1 << 22;
  c.warmup_ms = 100;
  c.record_requests = true;
  auto s = RunSim(c);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_GT(s->records.size(), 100u);
  uint64_t full = 0;
  for (const RequestRecord& r : s->records) {
    full += r.cached_tokens >= r.shareable_prefix_tokens ? 1 : 0;
  }
  // Misses: a system prompt's first use (8 of them), and a turn sent while its previous answer
  // (up to 2,000 tokens) was still decoding. Without scripted answers every later turn missed.
  EXPECT_GE(static_cast<double>(full), 0.95 * static_cast<double>(s->records.size()));
}

TEST(SimRunTest, ConfigValidation) {
  SimConfig c;
  EXPECT_TRUE(ValidateSimConfig(c).ok());
  c.nodes = 0;
  EXPECT_EQ(ValidateSimConfig(c).code(), StatusCode::kInvalidArgument);
  c = SimConfig{};
  c.workload = "nope";
  EXPECT_EQ(ValidateSimConfig(c).code(), StatusCode::kInvalidArgument);
  c = SimConfig{};
  c.workload = "trace";
  EXPECT_EQ(ValidateSimConfig(c).code(), StatusCode::kInvalidArgument);
  c = SimConfig{};
  c.rho = 0;
  EXPECT_EQ(ValidateSimConfig(c).code(), StatusCode::kInvalidArgument);
  for (double factor : {-1.0, std::nan(""), 1e7}) {
    c = SimConfig{};
    c.forward_deadline_factor = factor;
    const Status s = ValidateSimConfig(c);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("--forward-deadline-factor"), std::string::npos) << s.message();
  }
  c = SimConfig{};
  c.loss = 1;
  EXPECT_EQ(ValidateSimConfig(c).code(), StatusCode::kInvalidArgument);
  c = SimConfig{};
  c.policy = "no-such-policy";
  c.requests = 10;
  EXPECT_FALSE(RunSim(c).ok());
  c = SimConfig{};
  c.engine_preset = "no-such-preset";
  EXPECT_EQ(RunSim(c).status().code(), StatusCode::kNotFound);
}

TEST(SimRunTest, TraceWorkloadRuns) {
  // A small Mooncake-format trace: 300 requests over 10 shared 3-block prefixes.
  const std::string path = ::testing::TempDir() + "/sim_run_test_trace.jsonl";
  {
    std::ofstream out(path);
    for (int i = 0; i < 300; ++i) {
      const int g = (i * 7) % 10;
      out << "{\"timestamp\": " << i * 20 << ", \"input_length\": 1800, \"output_length\": 4, "
          << "\"hash_ids\": [" << g * 3 << ", " << g * 3 + 1 << ", " << g * 3 + 2 << ", "
          << 1000 + i << "]}\n";
    }
  }
  SimConfig c = Small("hearsay");
  c.workload = "trace";
  c.trace_path = path;
  c.requests = 0;
  auto r = RunSim(c);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_GT(r->requests, 0u);
  EXPECT_EQ(r->requests, 300u);
  EXPECT_EQ(r->failed, 0u);
  EXPECT_GT(r->hit_rate, 0.3);
}

TEST(SimMetricsTest, CoefficientOfVariation) {
  std::vector<double> same = {2, 2, 2};
  EXPECT_DOUBLE_EQ(CoefficientOfVariation(same), 0);
  std::vector<double> two = {1, 3};
  EXPECT_DOUBLE_EQ(CoefficientOfVariation(two), 0.5);
}

}  // namespace
}  // namespace hearsay::sim
