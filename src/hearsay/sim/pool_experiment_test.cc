#include "hearsay/sim/pool_experiment.h"

#include <gtest/gtest.h>

#include <string>

#include "hearsay/sim/experiment_test_util.h"

namespace hearsay::sim {
namespace {

using testing::ReadFile;

TEST(PoolExperimentTest, SectionsAreEightNodePools) {
  PoolOptions o;
  o.quick = true;
  auto sections = PoolSections(o);
  ASSERT_TRUE(sections.ok()) << sections.status().ToString();
  ASSERT_EQ(sections->size(), 3u);
  EXPECT_EQ((*sections)[0].name, "mixed");
  EXPECT_EQ((*sections)[1].name, "models");
  EXPECT_EQ((*sections)[2].name, "slowdown");
  EXPECT_GE((*sections)[2].config.slow_node, 0);
  EXPECT_GT((*sections)[2].config.requests, 0u);
  EXPECT_EQ(PoolPolicies(o),
            (std::vector<std::string>{"hearsay", "oracle", "least-loaded", "paper"}));
}

// The quick form on the real simulator: the report's shape, and no request ever served by an
// engine without its model.
TEST(PoolExperimentTest, QuickRunWritesTheReportAndNoWrongModelForward) {
  PoolOptions o;
  o.quick = true;
  o.out_dir = testing::FreshDir("hearsay_pool_", "quick");
  const Status s = RunPoolExperiment(o);
  ASSERT_TRUE(s.ok()) << s.ToString();
  const std::string report = ReadFile(o.out_dir + "/report.md");
  for (const char* part : {"## Goals", "## mixed", "## models", "## slowdown", "fell after",
                           "slow_share.png", "0 wrong-model requests"}) {
    EXPECT_NE(report.find(part), std::string::npos) << part;
  }
  const std::string runs = ReadFile(o.out_dir + "/runs.csv");
  EXPECT_EQ(runs.rfind("section,policy,seed,", 0), 0u);
  // Every models run: wrong_model (column 9) is 0.
  size_t models_rows = 0;
  for (size_t at = runs.find("\nmodels,"); at != std::string::npos;
       at = runs.find("\nmodels,", at + 1)) {
    ++models_rows;
    std::string row = runs.substr(at + 1, runs.find('\n', at + 1) - at - 1);
    int commas = 0;
    size_t k = 0;
    for (; k < row.size() && commas < 8; ++k) commas += row[k] == ',' ? 1 : 0;
    EXPECT_EQ(row.substr(k, row.find(',', k) - k), "0") << row;
  }
  EXPECT_EQ(models_rows, 4u);
  EXPECT_NE(ReadFile(o.out_dir + "/slow_share.csv").find("second,hearsay,oracle"),
            std::string::npos);
  EXPECT_NE(ReadFile(o.out_dir + "/plots.gp").find("slow_share.png"), std::string::npos);
}

TEST(PoolExperimentTest, BadOptionsAreRefused) {
  EXPECT_EQ(RunPoolExperiment(PoolOptions{}).code(), StatusCode::kInvalidArgument);
  PoolOptions o;
  o.out_dir = testing::FreshDir("hearsay_pool_", "bad");
  o.jobs = 0;
  EXPECT_EQ(RunPoolExperiment(o).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace hearsay::sim
