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
  ASSERT_EQ(all.size(), 16u);  // 2 workloads x 2 sizes x (3 liar counts + a slanderer)
  EXPECT_EQ(all.front().workload, "mmlu");
  EXPECT_EQ(all.back().workload, "trace");
  EXPECT_EQ(all.back().nodes, 32);
  EXPECT_EQ(all.back().liars, 0);
  EXPECT_EQ(all.back().slanderers, 1);
  EXPECT_EQ(all.back().config.slanderers, 1);
  EXPECT_EQ(all[all.size() - 2].liars, 3);
  o.quick = true;
  EXPECT_EQ(AdversarialCases(o).size(), 8u);  // MMLU-like only
  ASSERT_EQ(AdversarialArms().size(), 4u);
  EXPECT_EQ(AdversarialArms()[1].trimmed_listers, 0);
  EXPECT_FALSE(AdversarialArms()[2].trust);
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
                           "ttft_mmlu_32.png", "served by them", "a slanderer"}) {
    EXPECT_NE(report.find(part), std::string::npos) << part;
  }
  EXPECT_EQ(ReadFile(o.out_dir + "/runs.csv").rfind("workload,nodes,liars,slanderers,arm,seed,", 0),
            0u);
  EXPECT_NE(ReadFile(o.out_dir + "/plot_mmlu_8.csv").find("liars,hearsay,hearsay_sd"),
            std::string::npos);
  EXPECT_NE(ReadFile(o.out_dir + "/plots.gp").find("yerrorlines"), std::string::npos);
  // One liar in 32 nodes: judged, it costs hearsay a fraction of what it costs when believed.
  const std::string cases = ReadFile(o.out_dir + "/cases.csv");
  const auto mean_of = [&](const std::string& prefix) {
    const size_t at = cases.find("\n" + prefix);
    EXPECT_NE(at, std::string::npos) << prefix;
    if (at == std::string::npos) return 0.0;
    // workload,nodes,liars,slanderers,arm,seeds,mean_ttft_ms,...
    size_t k = at + 1;
    for (int commas = 0; commas < 6; ++k) commas += cases[k] == ',' ? 1 : 0;
    return std::stod(cases.substr(k, cases.find(',', k) - k));
  };
  const double judged = mean_of("mmlu,32,1,0,hearsay,");
  const double believed = mean_of("mmlu,32,1,0,hearsay-trusting,");
  EXPECT_GT(judged, 0);
  EXPECT_LT(judged, 0.5 * believed);
  // A slanderer alone moves nothing; believed, it draws traffic from the members it names.
  const double honest = mean_of("mmlu,8,0,0,hearsay,");
  EXPECT_LT(mean_of("mmlu,8,0,1,hearsay,"), 1.1 * honest);
  EXPECT_GT(mean_of("mmlu,8,0,1,hearsay-all-lists,"), 1.1 * honest);
}

TEST(AdversarialExperimentTest, BadOptionsAreRefused) {
  EXPECT_EQ(RunAdversarialExperiment(AdversarialOptions{}).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace hearsay::sim
