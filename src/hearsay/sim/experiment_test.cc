#include "hearsay/sim/experiment.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "hearsay/sim/experiment_results.h"
#include "hearsay/sim/experiment_test_util.h"

namespace hearsay::sim {
namespace {

using testing::ReadFile;

std::string FreshDir(const std::string& name) { return testing::FreshDir("hearsay_experiment_", name); }

// A fake simulator: figures are a pure function of the config, with the policies ordered so
// that the report's verdicts are predictable.
Result<SimSummary> FakeRun(const SimConfig& c, const ProgressFn& progress) {
  if (progress) progress(1, 1);
  SimSummary s;
  double base = 100 + 10 * c.delay_ms + static_cast<double>(c.seed);
  if (c.policy == "paper") base *= c.delay_ms <= 1 ? 0.8 : 1.3;
  if (c.policy == "hearsay") base *= 0.7;
  if (c.policy == "oracle") base *= 0.69;
  s.mean_ttft_ms = base;
  s.p99_ttft_ms = base * (c.policy == "paper" ? 5 : 2);
  s.load_cov = c.policy == "paper" ? 0.5 : 0.1;
  s.hit_rate = 0.5;
  s.requests = c.requests;
  return s;
}

TEST(ExperimentTest, SweepVariesOneFactorAtATime) {
  ExperimentOptions o;
  const SimConfig base = PaperBaseConfig(o);
  const auto points = PaperSweep(o);
  std::set<std::string> factors;
  for (const auto& p : points) {
    factors.insert(p.factor);
    int diffs = (p.config.delay_ms != base.delay_ms) + (p.config.zipf != base.zipf) +
                (p.config.nodes != base.nodes) + (p.config.gossip_ms != base.gossip_ms) +
                (p.config.capacity_tokens != base.capacity_tokens);
    EXPECT_LE(diffs, 1) << p.factor << "=" << p.level;
  }
  EXPECT_EQ(factors.size(), 5u);
  EXPECT_EQ(ExperimentPolicies(o).size(), 8u);
  ExperimentOptions quick;
  quick.quick = true;
  EXPECT_EQ(PaperSweep(quick).size(), 8u);
}

TEST(ExperimentTest, WritesTablesAndVerdictsWithFakeRuns) {
  ExperimentOptions o;
  o.out_dir = FreshDir("fake");
  o.quick = true;
  o.seeds = 2;
  o.trace_path = "fake.jsonl";
  int calls = 0;
  uint64_t last_done = 0;
  SimRunFn run = [&](const SimConfig& c, const ProgressFn& p) {
    ++calls;
    return FakeRun(c, p);
  };
  ASSERT_TRUE(RunPaperExperiment(o, run, [&](uint64_t d, uint64_t, uint64_t, uint64_t) {
                last_done = d;
              }).ok());
  // Quick: 6 distinct configs (the base point recurs in several factors) + trace.
  EXPECT_EQ(calls, 6 * 8 * 2);
  EXPECT_EQ(last_done, 6u * 8 * 2);
  for (const char* f : {"runs.csv", "points.csv", "plots.gp", "report.md",
                        "plot_delay_ms_mean_ttft_ms.csv", "plot_zipf_p99_ttft_ms.csv"}) {
    EXPECT_TRUE(std::filesystem::exists(o.out_dir + "/" + f)) << f;
  }
  // Quick sweeps of one level (nodes, gossip interval) draw no degenerate single-point plot.
  EXPECT_FALSE(std::filesystem::exists(o.out_dir + "/plot_nodes_mean_ttft_ms.csv"));
  EXPECT_FALSE(std::filesystem::exists(o.out_dir + "/plot_gossip_ms_hit_rate.csv"));
  // Plots read as words, with error bars over seeds.
  const std::string gp = ReadFile(o.out_dir + "/plots.gp");
  EXPECT_NE(gp.find("set title 'Mean time to first token by one-way network delay (mean of 2 "
                    "seed(s); bars: ± 1 sd over seeds)'"),
            std::string::npos)
      << gp;
  EXPECT_NE(gp.find("set ylabel 'mean time to first token (ms)'"), std::string::npos) << gp;
  EXPECT_NE(gp.find("with yerrorlines"), std::string::npos) << gp;
  EXPECT_EQ(gp.find("mean_ttft_ms vs"), std::string::npos) << gp;
  EXPECT_NE(gp.find("# nodes: one level only, not plotted"), std::string::npos) << gp;
  EXPECT_NE(ReadFile(o.out_dir + "/plot_delay_ms_mean_ttft_ms.csv").find("_sd"), std::string::npos);
  const std::string report = ReadFile(o.out_dir + "/report.md");
  EXPECT_NE(report.find("Claim 1 (at delay ≤ 1 ms with skewed prefixes, `paper` beats local, "
                        "random and least-loaded): **reproduced**"),
            std::string::npos);
  EXPECT_NE(report.find("Claim 2 (at high delay the gain disappears or reverses): **reproduced**"),
            std::string::npos);
  EXPECT_NE(report.find("least-loaded): **reproduced**"), std::string::npos);
  EXPECT_NE(report.find("| mean TTFT within 5% of oracle | delay 1 ms |"), std::string::npos);
  EXPECT_NE(report.find("| p99 TTFT ≤ 1.5 × least-loaded | Zipf 1.2 |"), std::string::npos);
  EXPECT_NE(report.find("## Trace: fake.jsonl"), std::string::npos);
  EXPECT_EQ(report.find("**MISS**"), std::string::npos) << report;
  // runs.csv: header + one line per run (duplicates of the base point included).
  const std::string runs = ReadFile(o.out_dir + "/runs.csv");
  EXPECT_EQ(std::count(runs.begin(), runs.end(), '\n'), 1 + 9 * 8 * 2);
}

TEST(ExperimentTest, RejectsBadOptions) {
  EXPECT_FALSE(RunPaperExperiment(ExperimentOptions{}, FakeRun).ok());
  ExperimentOptions o;
  o.out_dir = FreshDir("bad");
  o.quick = true;
  SimRunFn failing = [](const SimConfig&, const ProgressFn&) -> Result<SimSummary> {
    return NotFoundError("no such policy");
  };
  Status s = RunPaperExperiment(o, failing);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
}

// The real simulator, small: two policies, a few hundred requests; the same seed gives the same
// files byte for byte.
TEST(ExperimentTest, RealQuickRunIsDeterministic) {
  ExperimentOptions o;
  o.quick = true;
  o.requests = 200;
  o.policies = {"local", "hearsay"};
  std::string first[3];
  for (int i = 0; i < 2; ++i) {
    o.out_dir = FreshDir("real" + std::to_string(i));
    Status s = RunPaperExperiment(o);
    ASSERT_TRUE(s.ok()) << s.ToString();
    const std::string runs = ReadFile(o.out_dir + "/runs.csv");
    const std::string points = ReadFile(o.out_dir + "/points.csv");
    const std::string report = ReadFile(o.out_dir + "/report.md");
    EXPECT_NE(report.find("### hearsay's goals"), std::string::npos);
    EXPECT_NE(report.find("### one-way network delay (ms)"), std::string::npos);
    EXPECT_NE(runs.find("delay_ms,100,hearsay,1,"), std::string::npos) << runs;
    if (i == 0) {
      first[0] = runs;
      first[1] = points;
      first[2] = report;
    } else {
      EXPECT_EQ(runs, first[0]);
      EXPECT_EQ(points, first[1]);
      EXPECT_EQ(report, first[2]);
    }
  }
}

}  // namespace
}  // namespace hearsay::sim
