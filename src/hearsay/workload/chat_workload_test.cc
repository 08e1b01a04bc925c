#include "hearsay/workload/chat_workload.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <vector>

namespace hearsay::workload {
namespace {

ChatWorkload Make(const ChatOptions& o, uint64_t seed) {
  Result<ChatWorkload> w = ChatWorkload::Create(o, Rng(seed));
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  return std::move(w).value();
}

std::vector<Request> Drain(Workload& w) {
  std::vector<Request> out;
  while (std::optional<Request> r = w.Next()) out.push_back(std::move(*r));
  return out;
}

ChatOptions SmallChat() {
  ChatOptions o;
  o.num_conversations = 300;
  o.system_prompts = 4;
  o.min_turns = 2;
  o.max_turns = 6;
  o.arrivals = {ArrivalKind::kPoisson, 20.0, 0};
  o.entry = {EntryMode::kSticky, 8, 50};
  return o;
}

TEST(ChatWorkloadTest, EachTurnExtendsThePreviousPromptAndAnswer) {
  ChatWorkload w = Make(SmallChat(), 1);
  const std::vector<Request> all = Drain(w);
  std::map<int64_t, const Request*> last_turn;
  std::map<int64_t, int> turns;
  Duration last_arrival{0};
  for (size_t i = 0; i < all.size(); ++i) {
    const Request& r = all[i];
    EXPECT_EQ(r.id, i);
    EXPECT_GE(r.arrival, last_arrival) << "arrival order";
    last_arrival = r.arrival;
    ASSERT_GE(r.conversation, 0);
    ASSERT_LE(r.shareable_prefix_tokens, r.prompt.size());
    auto it = last_turn.find(r.conversation);
    if (it == last_turn.end()) {
      EXPECT_EQ(r.turn, 0);
      const auto system = w.SystemPrompt(static_cast<uint32_t>(r.variant));
      EXPECT_EQ(r.shareable_prefix_tokens, system.size());
      EXPECT_TRUE(std::equal(system.begin(), system.end(), r.prompt.begin()));
    } else {
      const Request& prev = *it->second;
      EXPECT_EQ(r.turn, prev.turn + 1);
      EXPECT_EQ(r.client, prev.client);
      EXPECT_EQ(r.entry_node, prev.entry_node);
      EXPECT_EQ(r.variant, prev.variant);
      // Previous prompt, then the previous answer, then a new user message.
      EXPECT_EQ(r.shareable_prefix_tokens, prev.prompt.size() + prev.output_tokens);
      ASSERT_GT(r.prompt.size(), r.shareable_prefix_tokens);
      EXPECT_TRUE(std::equal(prev.prompt.begin(), prev.prompt.end(), r.prompt.begin()));
      // The previous answer in this prompt is exactly what the engine was scripted to answer.
      ASSERT_EQ(prev.scripted_output.size(), prev.output_tokens);
      EXPECT_TRUE(std::equal(prev.scripted_output.begin(), prev.scripted_output.end(),
                             r.prompt.begin() + static_cast<std::ptrdiff_t>(prev.prompt.size())));
      // Think time: at least think_min after the previous turn.
      EXPECT_GE(r.arrival - prev.arrival, FromSeconds(2));
    }
    last_turn[r.conversation] = &r;
    ++turns[r.conversation];
  }
  EXPECT_EQ(last_turn.size(), 300u);
  for (const auto& [conv, n] : turns) {
    EXPECT_GE(n, 2) << conv;
    EXPECT_LE(n, 6) << conv;
  }
}

TEST(ChatWorkloadTest, SameSeedSameStream) {
  // Answers inside later prompts are synthesized deterministically too, so a rerun reproduces
  // every prompt exactly.
  ChatOptions o = SmallChat();
  ChatWorkload a = Make(o, 2);
  ChatWorkload b = Make(o, 2);
  ChatWorkload c = Make(o, 3);
  const std::vector<Request> ra = Drain(a);
  const std::vector<Request> rb = Drain(b);
  const std::vector<Request> rc = Drain(c);
  ASSERT_EQ(ra.size(), rb.size());
  for (size_t i = 0; i < ra.size(); ++i) {
    EXPECT_EQ(ra[i].prompt, rb[i].prompt);
    EXPECT_EQ(ra[i].arrival, rb[i].arrival);
    EXPECT_EQ(ra[i].output_tokens, rb[i].output_tokens);
    EXPECT_EQ(ra[i].conversation, rb[i].conversation);
    EXPECT_EQ(ra[i].entry_node, rb[i].entry_node);
  }
  bool differs = ra.size() != rc.size();
  for (size_t i = 0; !differs && i < ra.size(); ++i) differs = ra[i].prompt != rc[i].prompt;
  EXPECT_TRUE(differs);
}

TEST(ChatWorkloadTest, SystemPromptsAreSharedAcrossConversations) {
  ChatWorkload w = Make(SmallChat(), 4);
  std::map<int32_t, std::set<int64_t>> conversations_of;
  while (std::optional<Request> r = w.Next()) conversations_of[r->variant].insert(r->conversation);
  ASSERT_EQ(conversations_of.size(), 4u);
  for (const auto& [system, convs] : conversations_of) EXPECT_GT(convs.size(), 40u);
  // Distinct system prompts differ from their first token.
  EXPECT_NE(w.SystemPrompt(0)[0], w.SystemPrompt(1)[0]);
  EXPECT_TRUE(w.SystemPrompt(4).empty());
}

TEST(ChatWorkloadTest, ContextWindowEndsConversationsEarly) {
  ChatOptions o = SmallChat();
  o.min_turns = 50;
  o.max_turns = 50;
  o.system_max_tokens = 1000;
  o.user_max_tokens = 1000;
  o.max_prompt_tokens = 3000;
  ChatWorkload w = Make(o, 5);
  std::map<int64_t, int> turns;
  while (std::optional<Request> r = w.Next()) {
    EXPECT_LE(r->prompt.size(), 3000u);
    ++turns[r->conversation];
  }
  EXPECT_EQ(turns.size(), 300u);
  for (const auto& [conv, n] : turns) EXPECT_LT(n, 50);
}

TEST(ChatWorkloadTest, RequestRateMatchesTheArrivalRate) {
  ChatOptions o;
  o.num_conversations = 4000;
  o.min_turns = 1;
  o.max_turns = 5;
  o.think_min = FromSeconds(0.5);
  o.think_mean = FromSeconds(1);
  o.arrivals = {ArrivalKind::kPoisson, 50.0, 0};
  // Short messages: timing does not depend on lengths, and this keeps the test fast.
  o.system_median_tokens = 40;
  o.user_mean_tokens = 10;
  o.answer_mean_tokens = 10;
  ChatWorkload w = Make(o, 6);
  std::vector<Duration> arrivals;
  while (std::optional<Request> r = w.Next()) arrivals.push_back(r->arrival);
  EXPECT_NEAR(static_cast<double>(arrivals.size()) / 4000, 3.0, 0.1);  // Mean turns.
  // The rate over the first 80% of the run, before the last conversations wind down.
  const Duration window = arrivals.back() * 4 / 5;
  const auto in_window =
      std::upper_bound(arrivals.begin(), arrivals.end(), window) - arrivals.begin();
  EXPECT_NEAR(in_window / ToSeconds(window), 50.0, 50.0 * 0.08);
}

TEST(ChatWorkloadTest, RejectsBadOptions) {
  auto bad = [](auto mutate) {
    ChatOptions o;
    mutate(o);
    return !ChatWorkload::Create(o, Rng(1)).ok();
  };
  EXPECT_TRUE(bad([](ChatOptions& o) { o.num_conversations = 0; }));
  EXPECT_TRUE(bad([](ChatOptions& o) { o.system_prompts = 0; }));
  EXPECT_TRUE(bad([](ChatOptions& o) { o.min_turns = 0; }));
  EXPECT_TRUE(bad([](ChatOptions& o) { o.min_turns = 5, o.max_turns = 4; }));
  EXPECT_TRUE(bad([](ChatOptions& o) { o.user_mean_tokens = 0; }));
  EXPECT_TRUE(bad([](ChatOptions& o) { o.max_prompt_tokens = 100; }));
  EXPECT_TRUE(bad([](ChatOptions& o) { o.think_mean = FromSeconds(-1); }));
  EXPECT_TRUE(bad([](ChatOptions& o) { o.arrivals.rate_per_s = -1; }));
  EXPECT_FALSE(bad([](ChatOptions&) {}));
}

}  // namespace
}  // namespace hearsay::workload
