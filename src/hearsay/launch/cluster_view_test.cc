#include "hearsay/launch/cluster_view.h"

#include <gtest/gtest.h>

namespace hearsay::launch {
namespace {

// The shape of the daemon's GET /cluster (net/daemon_requests.cc RenderCluster), abridged; the
// generation is a decimal string (it exceeds 2^53), a number is read too.
constexpr const char* kView = R"({
  "self": {"id": "node-0", "generation": "1764400000000000001", "address": "127.0.0.1:1",
           "api_address": "127.0.0.1:2", "cache_entries": 5, "draining": false},
  "policy": "hearsay",
  "members": [
    {"id": "node-1", "state": "alive", "address": "127.0.0.1:3", "api_address": "127.0.0.1:4",
     "generation": 7, "cache_entries": 0, "load": null, "rtt_ms": 0.4},
    {"id": "node-2", "state": "dead", "address": "127.0.0.1:5", "api_address": "127.0.0.1:6",
     "generation": 3, "cache_entries": 42}
  ],
  "stats": {"client_requests": 0}})";

TEST(ClusterViewTest, ParsesSelfAndMembers) {
  Result<ClusterView> v = ParseClusterView(kView);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->self_id, "node-0");
  ASSERT_EQ(v->members.size(), 3u);
  const MemberInfo* self = v->Find("node-0");
  ASSERT_NE(self, nullptr);
  EXPECT_TRUE(self->is_self);
  EXPECT_EQ(self->state, "alive");
  EXPECT_EQ(self->generation, 1764400000000000001u);
  EXPECT_EQ(self->cache_keys, 5u);
  const MemberInfo* one = v->Find("node-1");
  ASSERT_NE(one, nullptr);
  EXPECT_FALSE(one->is_self);
  EXPECT_EQ(one->gossip_address, "127.0.0.1:3");
  EXPECT_EQ(one->api_address, "127.0.0.1:4");
  EXPECT_EQ(one->rtt_ms, 0.4);
  EXPECT_FALSE(v->Find("node-2")->rtt_ms.has_value());
  const MemberInfo* two = v->Find("node-2");
  ASSERT_NE(two, nullptr);
  EXPECT_EQ(two->state, "dead");
  EXPECT_EQ(two->generation, 3u);
  EXPECT_EQ(two->cache_keys, 42u);
  EXPECT_EQ(v->Find("node-9"), nullptr);
}

TEST(ClusterViewTest, DrainingSelfIsLeaving) {
  Result<ClusterView> v =
      ParseClusterView(R"({"self": {"id": "a", "draining": true}, "members": []})");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  ASSERT_NE(v->Find("a"), nullptr);
  EXPECT_EQ(v->Find("a")->state, "leaving");
}

TEST(ClusterViewTest, RejectsWhatIsNotAView) {
  for (const char* bad :
       {"", "[]", "{", R"({"members": 3})", R"({"members": [1]})",
        R"({"members": [{"state": "alive"}]})", R"({"members": [{"id": "x"}]})"}) {
    EXPECT_EQ(ParseClusterView(bad).status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace hearsay::launch
