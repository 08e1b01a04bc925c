#include "hearsay/sim/cluster_spec.h"

#include <gtest/gtest.h>

#include <string>

namespace hearsay::sim {
namespace {

TEST(ClusterSpecTest, ParsesGroupsPresetsCountsAndModels) {
  auto spec =
      ParseClusterSpec("h100-llama3-8b:2:modelA,a100-llama3-8b:2:modelA+modelB,consumer:4:modelB");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  ASSERT_EQ(spec->groups.size(), 3u);
  EXPECT_EQ(spec->nodes(), 8);
  EXPECT_EQ(spec->groups[1].preset, "a100-llama3-8b");
  EXPECT_EQ(spec->groups[1].models, (std::vector<std::string>{"modelA", "modelB"}));
  EXPECT_EQ(spec->Models(), (std::vector<std::string>{"modelA", "modelB"}));
  EXPECT_EQ(spec->GroupOf(0).preset, "h100-llama3-8b");
  EXPECT_EQ(spec->GroupOf(3).preset, "a100-llama3-8b");
  EXPECT_EQ(spec->GroupOf(4).preset, "consumer");
  EXPECT_EQ(spec->GroupOf(7).preset, "consumer");
}

TEST(ClusterSpecTest, ModelsAreOptional) {
  auto spec = ParseClusterSpec("h100-llama3-8b:3,consumer:1");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->nodes(), 4);
  EXPECT_TRUE(spec->Models().empty());
}

TEST(ClusterSpecTest, UnknownPresetListsTheValidOnes) {
  auto spec = ParseClusterSpec("h100-llama3-8b:2,b200:2");
  ASSERT_EQ(spec.status().code(), StatusCode::kNotFound);
  EXPECT_NE(spec.status().message().find("'b200:2'"), std::string::npos);
  EXPECT_NE(spec.status().message().find("consumer"), std::string::npos);
  EXPECT_NE(spec.status().message().find("a100-llama3-8b"), std::string::npos);
}

TEST(ClusterSpecTest, BadSpecsSayWhatIsWrong) {
  struct Case {
    const char* spec;
    const char* says;
  };
  const Case cases[] = {
      {"", "empty"},
      {"consumer", "PRESET:COUNT"},
      {"consumer:2:m:x", "PRESET:COUNT"},
      {"consumer:0", "count must be in"},
      {"consumer:-1", "count must be in"},
      {"consumer:two", "not a number"},
      {"consumer:4097", "count must be in"},
      {"consumer:4000,h100-llama3-8b:97", "too many nodes"},
      {"consumer:2:", "empty model name"},
      {"consumer:2:a++b", "empty model name"},
      {"consumer:2:a+a", "listed twice"},
      {"consumer:2:a b", "only letters"},
      {"consumer:2:m1,h100-llama3-8b:2", "every group names its models"},
      {"consumer:2,,h100-llama3-8b:2", "PRESET:COUNT"},
  };
  for (const Case& c : cases) {
    auto spec = ParseClusterSpec(c.spec);
    ASSERT_EQ(spec.status().code(), StatusCode::kInvalidArgument) << c.spec;
    EXPECT_NE(spec.status().message().find(c.says), std::string::npos)
        << c.spec << ": " << spec.status().message();
  }
  EXPECT_FALSE(ParseClusterSpec("consumer:1:" + std::string(kMaxModelNameBytes + 1, 'm')).ok());
  EXPECT_TRUE(ParseClusterSpec("consumer:1:" + std::string(kMaxModelNameBytes, 'm')).ok());
}

}  // namespace
}  // namespace hearsay::sim
