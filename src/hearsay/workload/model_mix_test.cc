#include "hearsay/workload/model_mix.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <set>
#include <vector>

#include "hearsay/workload/chat_workload.h"
#include "hearsay/workload/mmlu_workload.h"

namespace hearsay::workload {
namespace {

std::unique_ptr<Workload> Mmlu(uint64_t n) {
  MmluOptions o;
  o.num_requests = n;
  o.popularity = MmluPopularity::kZipf;
  o.arrivals.rate_per_s = 100;
  auto w = MmluWorkload::Create(o, Rng(7));
  EXPECT_TRUE(w.ok());
  return std::make_unique<MmluWorkload>(std::move(*w));
}

std::vector<TokenId> Head(const Request& r) {
  return {r.prompt.begin(), r.prompt.begin() + kModelTagTokens};
}

TEST(ModelMixTest, ZipfOverModelsEachWithItsOwnPrefixes) {
  ModelMixOptions o;
  o.models = 3;
  o.zipf_s = 1.0;
  auto mix = ModelMixWorkload::Create(o, Mmlu(3000));
  ASSERT_TRUE(mix.ok());
  auto plain = Mmlu(3000);
  std::map<uint32_t, int> count;
  std::map<uint32_t, std::vector<TokenId>> tag;
  while (auto r = (*mix)->Next()) {
    auto p = plain->Next();
    ASSERT_TRUE(p.has_value());
    ASSERT_LT(r->model, 3u);
    ++count[r->model];
    // The inner request, behind its model's tag; arrival and entry unchanged.
    EXPECT_EQ(r->prompt.size(), p->prompt.size() + kModelTagTokens);
    EXPECT_TRUE(
        std::equal(p->prompt.begin(), p->prompt.end(), r->prompt.begin() + kModelTagTokens));
    EXPECT_EQ(r->arrival, p->arrival);
    EXPECT_EQ(r->entry_node, p->entry_node);
    EXPECT_EQ(r->shareable_prefix_tokens, p->shareable_prefix_tokens + kModelTagTokens);
    if (!tag.count(r->model)) tag[r->model] = Head(*r);
    EXPECT_EQ(Head(*r), tag[r->model]);
  }
  ASSERT_EQ(tag.size(), 3u);
  EXPECT_NE(tag[0], tag[1]);
  EXPECT_NE(tag[1], tag[2]);
  // Zipf 1 over 3: 6/11, 3/11, 2/11.
  EXPECT_NEAR(count[0] / 3000.0, 6.0 / 11, 0.03);
  EXPECT_NEAR(count[1] / 3000.0, 3.0 / 11, 0.03);
  EXPECT_NEAR(count[2] / 3000.0, 2.0 / 11, 0.03);
}

TEST(ModelMixTest, AConversationKeepsItsModel) {
  ChatOptions c;
  c.num_conversations = 200;
  c.arrivals.rate_per_s = 50;
  auto chat = ChatWorkload::Create(c, Rng(3));
  ASSERT_TRUE(chat.ok());
  ModelMixOptions o;
  o.models = 4;
  o.zipf_s = 0;
  auto mix = ModelMixWorkload::Create(o, std::make_unique<ChatWorkload>(std::move(*chat)));
  ASSERT_TRUE(mix.ok());
  std::map<int64_t, uint32_t> model_of;
  std::set<uint32_t> seen;
  while (auto r = (*mix)->Next()) {
    auto [it, fresh] = model_of.emplace(r->conversation, r->model);
    EXPECT_EQ(it->second, r->model) << "conversation " << r->conversation;
    seen.insert(r->model);
  }
  EXPECT_EQ(seen.size(), 4u);
}

TEST(ModelMixTest, OneModelPassesThroughAndBadOptionsAreRefused) {
  auto mix = ModelMixWorkload::Create(ModelMixOptions{}, Mmlu(10));
  ASSERT_TRUE(mix.ok());
  auto plain = Mmlu(10);
  while (auto r = (*mix)->Next()) {
    EXPECT_EQ(r->prompt, plain->Next()->prompt);
    EXPECT_EQ(r->model, 0u);
  }
  ModelMixOptions bad;
  bad.models = 0;
  EXPECT_FALSE(ModelMixWorkload::Create(bad, Mmlu(1)).ok());
  bad.models = 2;
  bad.zipf_s = -1;
  EXPECT_FALSE(ModelMixWorkload::Create(bad, Mmlu(1)).ok());
  EXPECT_FALSE(ModelMixWorkload::Create(ModelMixOptions{}, nullptr).ok());
}

}  // namespace
}  // namespace hearsay::workload
