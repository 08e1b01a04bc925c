#include "hearsay/sim/adversarial_experiment.h"

#include <gtest/gtest.h>

#include <string>

#include "hearsay/sim/experiment_test_util.h"

namespace hearsay::sim {
namespace {

using testing::ReadFile;

TEST(AdversarialExperimentTest, CasesCoverSizesAndLiars) {
  AdversarialOptions o;
  o.trace_path = "trace.jsonl";
  const std::vector<AdversarialCase> all = AdversarialCases(o);
  ASSERT_EQ(all.size(), 12u);  // 2 workloads x 2 sizes x 3 liar counts
  EXPECT_EQ(all.front().workload, "mmlu");
  EXPECT_EQ(all.back().workload, "trace");
  EXPECT_EQ(all.back().nodes, 32);
  EXPECT_EQ(all.back().liars, 3);
  o.quick = true;
  EXPECT_EQ(AdversarialCases(o).size(), 6u);  // MMLU-like only
  ASSERT_EQ(AdversarialArms().size(), 3u);
  EXPECT_FALSE(AdversarialArms()[1].trust);
}

// The quick form on the real simulator: the report's shape, and liars that hurt the trusting
// policies more than hearsay.
TEST(AdversarialExperimentTest, QuickRunWritesTheReport) {
  AdversarialOptions o;
  o.quick = true;
  o.out_dir = testing::FreshDir("hearsay_adversarial_", "quick");
  const Status s = RunAdversarialExperiment(o);
  ASSERT_TRUE(s.ok()) << s.ToString();
  const std::string report = ReadFile(o.out_dir + "/report.md");
  for (const char* part : {"## Goals", "## Results", "hearsay-trusting", "ttft_mmlu_8.png",
                           "ttft_mmlu_32.png", "served by liars"}) {
    EXPECT_NE(report.find(part), std::string::npos) << part;
  }
  EXPECT_EQ(ReadFile(o.out_dir + "/runs.csv").rfind("workload,nodes,liars,arm,seed,", 0), 0u);
  EXPECT_NE(ReadFile(o.out_dir + "/plot_mmlu_8.csv").find("liars,hearsay,hearsay_sd"),
            std::string::npos);
  EXPECT_NE(ReadFile(o.out_dir + "/plots.gp").find("yerrorlines"), std::string::npos);
  // One liar in 32 nodes: judged, it costs hearsay a fraction of what it costs when believed.
  const std::string cases = ReadFile(o.out_dir + "/cases.csv");
  const auto mean_of = [&](const std::string& prefix) {
    const size_t at = cases.find("\n" + prefix);
    EXPECT_NE(at, std::string::npos) << prefix;
    if (at == std::string::npos) return 0.0;
    // workload,nodes,liars,arm,seeds,mean_ttft_ms,...
    size_t k = at + 1;
    for (int commas = 0; commas < 5; ++k) commas += cases[k] == ',' ? 1 : 0;
    return std::stod(cases.substr(k, cases.find(',', k) - k));
  };
  const double judged = mean_of("mmlu,32,1,hearsay,");
  const double believed = mean_of("mmlu,32,1,hearsay-trusting,");
  EXPECT_GT(judged, 0);
  EXPECT_LT(judged, 0.5 * believed);
}

TEST(AdversarialExperimentTest, BadOptionsAreRefused) {
  EXPECT_EQ(RunAdversarialExperiment(AdversarialOptions{}).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace hearsay::sim
