#include "hearsay/sim/peers_experiment.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "hearsay/sim/experiment_test_util.h"

namespace hearsay::sim::peers_experiment_test {
namespace {

using testing::ReadFile;

std::string FreshDir(const std::string& name) { return testing::FreshDir("hearsay_peers_", name); }

TEST(PeersExperimentTest, SystemsCoverEveryPeerCentralAndReplicated) {
  std::set<std::string> labels;
  for (const PeerSystem& s : PeerSystems()) labels.insert(s.label);
  for (const char* want : {"hearsay", "oracle", "round-robin", "sgl-cache-aware", "dynamo-kv",
                           "dynamo-kv-approx", "llmd-precise", "sgl-cache-aware/3", "dynamo-kv/3",
                           "dynamo-kv/3+sync", "dynamo-kv-approx/3", "llmd-precise/3"}) {
    EXPECT_TRUE(labels.count(want)) << want;
  }
  EXPECT_EQ(labels.size(), PeerSystems().size());
}

TEST(PeersExperimentTest, GridSizesTheCachesFromTheWorkingSet) {
  PeersOptions o;
  o.requests_per_node = 20;  // the grid's shape does not depend on it; measuring is faster
  auto grid = PeersGrid(o);
  ASSERT_TRUE(grid.ok()) << grid.status().ToString();
  // 4 workloads (no trace path) × 2 sizes × 2 pressures × 3 delays.
  EXPECT_EQ(grid->size(), 4u * 2 * 2 * 3);
  std::set<std::string> workloads;
  for (const PeersPoint& p : *grid) {
    workloads.insert(p.workload);
    EXPECT_EQ(p.config.requests, 20u * p.nodes);
    EXPECT_GE(p.config.capacity_tokens, 1024u);
    EXPECT_LE(p.config.capacity_tokens, uint64_t{1} << 20);
    if (p.pressure == "low") {
      EXPECT_GE(p.config.capacity_tokens, p.reused_tokens);
    } else {
      EXPECT_GE(p.config.capacity_tokens, p.reused_tokens / 4);
      // High pressure holds a quarter of the working set, unless the largest request needs more.
      EXPECT_LT(p.config.capacity_tokens, std::max<uint64_t>(p.reused_tokens, 1025)) << p.workload;
    }
  }
  EXPECT_EQ(workloads, (std::set<std::string>{"mmlu-z0.8", "mmlu-z1", "mmlu-z1.2", "chat"}));
  // Multi-replica forms run at 1 ms only.
  PeerSystem replicated{"x/3", "dynamo-kv", 3, false};
  PeersPoint p;
  p.delay_ms = 5;
  EXPECT_FALSE(RunsAt(replicated, p));
  p.delay_ms = 1;
  EXPECT_TRUE(RunsAt(replicated, p));
}

// A fake simulator: hearsay is faster than every peer, except p99 against dynamo-kv; the oracle
// is faster still on the mean, and on p99 as slow as hearsay.
Result<SimSummary> FakeRun(const SimConfig& c, const ProgressFn&) {
  SimSummary s;
  double base = 20 + c.delay_ms + static_cast<double>(c.seed);
  if (c.policy == "hearsay") base *= 0.5;
  if (c.policy == "oracle") base *= 0.4;
  s.mean_ttft_ms = base;
  s.p50_ttft_ms = base;
  s.p99_ttft_ms = c.policy == "dynamo-kv" ? 5 : (c.policy == "oracle" ? base * 3.75 : base * 3);
  s.hit_rate = c.policy == "round-robin" ? 0.2 : (c.policy == "dynamo-kv-approx" ? 0.4 : 0.5);
  s.requests = c.requests;
  return s;
}

TEST(PeersExperimentTest, ReportsGoalsRatiosAndSanityFromFakeRuns) {
  PeersOptions o;
  o.out_dir = FreshDir("fake");
  o.quick = true;
  o.seeds = 2;
  o.jobs = 1;
  std::atomic<int> calls{0};
  SimRunFn run = [&](const SimConfig& c, const ProgressFn& p) {
    ++calls;
    return FakeRun(c, p);
  };
  ASSERT_TRUE(RunPeersExperiment(o, run).ok());
  // Quick: 2 workloads × 2 pressures × 12 systems × 2 seeds.
  EXPECT_EQ(calls, 2 * 2 * 12 * 2);
  for (const char* f : {"runs.csv", "points.csv", "plots.gp", "report.md", "plot_replicas.csv",
                        "plot_mmlu-z1_n8_high.csv", "plot_chat_n8_low.csv"}) {
    EXPECT_TRUE(std::filesystem::exists(o.out_dir + "/" + f)) << f;
  }
  const std::string report = ReadFile(o.out_dir + "/report.md");
  EXPECT_NE(report.find("| hearsay ≤ 1.0× the mean TTFT of every central peer, delay ≤ 1 ms | 16 "
                        "/ 16 | **PASS** |"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("| hearsay ≤ 1.0× the p99 TTFT of every central peer, delay ≤ 1 ms | 12 / "
                        "16 | **MISS** |"),
            std::string::npos);
  EXPECT_NE(report.find("vs dynamo-kv\n"), std::string::npos);
  EXPECT_NE(report.find("| mmlu-z1, 8 nodes, 1 ms, low pressure | 0.50 (0.50) | 0.50 (6.75) |"),
            std::string::npos);
  EXPECT_NE(report.find("A higher hit rate than round-robin in 20 of 20 cases: **reproduced**"),
            std::string::npos);
  // The oracle against the same peers: its p99 misses are hearsay's.
  EXPECT_NE(report.find("| oracle | 16 / 16 | 12 / 16 |"), std::string::npos) << report;
  EXPECT_NE(
      report.find("Of hearsay's 0 mean misses the oracle misses 0 too; of its 4 p99 misses, 4."),
      std::string::npos);
  EXPECT_NE(report.find("| mmlu-z1, 8 nodes, 1 ms, low pressure | 1.25 (1.00) | 0.40 (6.75) |"),
            std::string::npos);
  const std::string runs = ReadFile(o.out_dir + "/runs.csv");
  EXPECT_EQ(std::count(runs.begin(), runs.end(), '\n'), 1 + 2 * 2 * 12 * 2);
}

TEST(PeersExperimentTest, RejectsBadOptions) {
  EXPECT_FALSE(RunPeersExperiment(PeersOptions{}, FakeRun).ok());
  PeersOptions o;
  o.out_dir = FreshDir("bad");
  o.quick = true;
  o.jobs = 0;
  EXPECT_EQ(RunPeersExperiment(o, FakeRun).code(), StatusCode::kInvalidArgument);
  o.jobs = 2;
  SimRunFn failing = [](const SimConfig&, const ProgressFn&) -> Result<SimSummary> {
    return NotFoundError("no such policy");
  };
  EXPECT_EQ(RunPeersExperiment(o, failing).code(), StatusCode::kNotFound);
}

// The quick form on the real simulator; parallel runs give the same files as serial ones.
TEST(PeersExperimentTest, RealQuickRunIsDeterministicAcrossJobs) {
  PeersOptions o;
  o.quick = true;
  o.requests_per_node = 8;
  std::string first[3];
  for (int jobs : {1, 2}) {
    o.jobs = jobs;
    o.out_dir = FreshDir("real" + std::to_string(jobs));
    const Status s = RunPeersExperiment(o);
    ASSERT_TRUE(s.ok()) << s.ToString();
    const std::string files[3] = {ReadFile(o.out_dir + "/runs.csv"),
                                  ReadFile(o.out_dir + "/points.csv"),
                                  ReadFile(o.out_dir + "/report.md")};
    EXPECT_NE(files[2].find("## Goals"), std::string::npos);
    EXPECT_NE(files[0].find("chat,8,1,high,"), std::string::npos);
    if (jobs == 1) {
      std::copy(std::begin(files), std::end(files), first);
    } else {
      for (int i = 0; i < 3; ++i) EXPECT_EQ(files[i], first[i]) << i;
    }
  }
}

}  // namespace
}  // namespace hearsay::sim::peers_experiment_test
