#include "hearsay/harness/cluster_view.h"

#include <gtest/gtest.h>

namespace hearsay::harness {
namespace {

TEST(ClusterViewTest, ParsesMembers) {
  Result<ClusterView> v = ParseClusterView(R"({
    "self": "node-0",
    "members": [
      {"node_id": "node-0", "state": "alive", "generation": 7, "gossip_address": "127.0.0.1:1",
       "api_address": "127.0.0.1:2", "cache_summary": {"keys": 0}},
      {"node_id": "node-1", "state": "dead", "generation": 3, "cache_summary": {"keys": 42}}
    ]})");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->self_id, "node-0");
  ASSERT_EQ(v->members.size(), 2u);
  const MemberInfo* self = v->Find("node-0");
  ASSERT_NE(self, nullptr);
  EXPECT_TRUE(self->is_self);
  EXPECT_EQ(self->generation, 7u);
  EXPECT_EQ(self->gossip_address, "127.0.0.1:1");
  const MemberInfo* other = v->Find("node-1");
  ASSERT_NE(other, nullptr);
  EXPECT_FALSE(other->is_self);
  EXPECT_EQ(other->state, "dead");
  EXPECT_EQ(other->cache_keys, 42u);
  EXPECT_EQ(v->Find("node-9"), nullptr);
}

TEST(ClusterViewTest, RejectsWhatIsNotAView) {
  for (const char* bad : {"", "[]", "{", R"({"members": 3})", R"({"members": [1]})",
                          R"({"members": [{"state": "alive"}]})"}) {
    EXPECT_EQ(ParseClusterView(bad).status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace hearsay::harness
