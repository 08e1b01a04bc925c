#include "hearsay/loadgen/request_source.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "hearsay/loadgen/openai_body.h"
#include "hearsay/loadgen/target_url.h"

namespace hearsay::loadgen {
namespace {

size_t Words(const std::string& text) {
  size_t n = 0;
  bool in_word = false;
  for (char c : text) {
    const bool space = c == ' ';
    if (!space && !in_word) ++n;
    in_word = !space;
  }
  return n;
}

TEST(RequestSourceTest, MmluBodiesAreStreamingCompletionsWithUsage) {
  WorkloadSpec spec;
  spec.requests = 50;
  spec.targets = 4;
  spec.rate_per_s = 20;
  Result<RequestSource> source = RequestSource::Create(spec);
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  std::set<uint32_t> targets;
  Duration last{0};
  uint64_t n = 0;
  while (std::optional<LoadRequest> r = source->Next()) {
    EXPECT_EQ(r->id, n++);
    EXPECT_EQ(r->path, "/v1/completions");
    EXPECT_GE(r->arrival, last);
    last = r->arrival;
    EXPECT_LT(r->target, 4u);
    targets.insert(r->target);
    const nlohmann::json body = nlohmann::json::parse(r->body);
    EXPECT_EQ(body["model"], "hearsay-sim");
    EXPECT_EQ(body["stream"], true);
    EXPECT_EQ(body["stream_options"]["include_usage"], true);
    EXPECT_GE(body["max_tokens"].get<int>(), 1);
    // One word per workload token, so the server's token count matches the workload's.
    EXPECT_EQ(Words(body["prompt"].get<std::string>()), r->prompt_tokens);
  }
  EXPECT_EQ(n, 50u);
  EXPECT_EQ(targets.size(), 4u);
  // 50 requests at 20/s arrive over about 2.5 s.
  EXPECT_GT(ToSeconds(last), 1.0);
  EXPECT_LT(ToSeconds(last), 6.0);
}

TEST(RequestSourceTest, SameSeedSameStream) {
  WorkloadSpec spec;
  spec.requests = 20;
  spec.targets = 3;
  Result<RequestSource> a = RequestSource::Create(spec);
  Result<RequestSource> b = RequestSource::Create(spec);
  spec.seed = 2;
  Result<RequestSource> c = RequestSource::Create(spec);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  bool differs = false;
  while (std::optional<LoadRequest> ra = a->Next()) {
    std::optional<LoadRequest> rb = b->Next();
    std::optional<LoadRequest> rc = c->Next();
    ASSERT_TRUE(rb.has_value() && rc.has_value());
    EXPECT_EQ(ra->body, rb->body);
    EXPECT_EQ(ra->arrival, rb->arrival);
    EXPECT_EQ(ra->target, rb->target);
    differs |= ra->body != rc->body;
  }
  EXPECT_TRUE(differs);
}

TEST(RequestSourceTest, MmluPromptsShareTextPrefixes) {
  WorkloadSpec spec;
  spec.requests = 200;
  spec.zipf = 2.0;  // a few hot subjects, so prompts repeat prefixes
  Result<RequestSource> source = RequestSource::Create(spec);
  ASSERT_TRUE(source.ok());
  std::vector<std::string> prompts;
  while (std::optional<LoadRequest> r = source->Next()) {
    prompts.push_back(nlohmann::json::parse(r->body)["prompt"].get<std::string>());
  }
  // Some pair shares a prefix of at least 250 tokens (the MMLU minimum prefix): ~1000 chars.
  size_t best = 0;
  for (size_t i = 1; i < prompts.size(); ++i) {
    const auto [a, b] =
        std::mismatch(prompts[0].begin(), prompts[0].end(), prompts[i].begin(), prompts[i].end());
    best = std::max<size_t>(best, static_cast<size_t>(a - prompts[0].begin()));
  }
  EXPECT_GT(best, 1000u);
}

TEST(RequestSourceTest, ChatTurnsExtendThePreviousTurnsMessages) {
  WorkloadSpec spec;
  spec.workload = "chat";
  spec.requests = 400;
  spec.rate_per_s = 50;
  Result<RequestSource> source = RequestSource::Create(spec);
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  EXPECT_EQ(source->api(), ApiKind::kChatCompletions);
  int multi_turn = 0;
  while (std::optional<LoadRequest> r = source->Next()) {
    EXPECT_EQ(r->path, "/v1/chat/completions");
    const nlohmann::json messages = nlohmann::json::parse(r->body)["messages"];
    ASSERT_GE(messages.size(), 2u);
    EXPECT_EQ(messages[0]["role"], "system");
    EXPECT_EQ(messages.back()["role"], "user");
    size_t words = 0;
    for (size_t i = 0; i < messages.size(); ++i) {
      if (i > 0) {
        EXPECT_EQ(messages[i]["role"], i % 2 == 1 ? "user" : "assistant");
      }
      words += Words(messages[i]["content"].get<std::string>());
    }
    EXPECT_EQ(words, r->prompt_tokens);
    if (messages.size() >= 4) ++multi_turn;
  }
  EXPECT_GT(multi_turn, 0);
}

TEST(ChatTranscriptTest, SplitsAConversationIntoAlternatingMessages) {
  ChatTranscript transcript(3);
  workload::Request t0;
  t0.conversation = 5;
  t0.turn = 0;
  t0.prompt = {2000, 2001, 2002, 2003, 2004};  // system 3 tokens + user 2
  t0.shareable_prefix_tokens = 3;
  std::vector<ChatMessage> m0 = transcript.Messages(t0);
  ASSERT_EQ(m0.size(), 2u);
  EXPECT_EQ(m0[0].role, "system");
  EXPECT_EQ(Words(m0[0].content), 3u);
  EXPECT_EQ(m0[1].role, "user");

  workload::Request t1 = t0;
  t1.turn = 1;
  t1.prompt = {2000, 2001, 2002, 2003, 2004, 2100, 2101, 2200};  // + answer 2 + user 1
  t1.shareable_prefix_tokens = 7;
  std::vector<ChatMessage> m1 = transcript.Messages(t1);
  ASSERT_EQ(m1.size(), 4u);
  EXPECT_EQ(m1[0].content, m0[0].content);
  EXPECT_EQ(m1[1].content, m0[1].content);
  EXPECT_EQ(m1[2].role, "assistant");
  EXPECT_EQ(Words(m1[2].content), 2u);
  EXPECT_EQ(m1[3].role, "user");
  EXPECT_EQ(transcript.open_conversations(), 1u);

  workload::Request t2 = t1;
  t2.turn = 2;  // the last of max_turns = 3: forgotten afterwards
  t2.prompt.push_back(2300);
  t2.prompt.push_back(2400);
  t2.shareable_prefix_tokens = 9;
  EXPECT_EQ(transcript.Messages(t2).size(), 6u);
  EXPECT_EQ(transcript.open_conversations(), 0u);

  workload::Request plain;
  plain.prompt = {2000, 2001};
  const std::vector<ChatMessage> single = transcript.Messages(plain);
  ASSERT_EQ(single.size(), 1u);
  EXPECT_EQ(single[0].role, "user");
}

TEST(RequestSourceTest, TraceWorkloadReadsTheFile) {
  const std::string path = testing::TempDir() + "/loadgen_trace.jsonl";
  {
    std::ofstream f(path);
    f << R"({"timestamp": 0, "input_length": 40, "output_length": 3, "hash_ids": [1]})"
      << "\n"
      << R"({"timestamp": 500, "input_length": 40, "output_length": 0, "hash_ids": [1]})"
      << "\n";
  }
  WorkloadSpec spec;
  spec.workload = "trace";
  spec.trace_path = path;
  spec.trace_timestamps = true;
  Result<RequestSource> source = RequestSource::Create(spec);
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  std::optional<LoadRequest> a = source->Next();
  std::optional<LoadRequest> b = source->Next();
  ASSERT_TRUE(a && b);
  EXPECT_FALSE(source->Next().has_value());
  EXPECT_EQ(a->prompt_tokens, 40u);
  EXPECT_EQ(b->arrival, std::chrono::milliseconds(500));
  // output_length 0 still asks for the API's minimum of one token.
  EXPECT_EQ(nlohmann::json::parse(b->body)["max_tokens"], 1);
  std::remove(path.c_str());
}

TEST(RequestSourceTest, BadSpecsAreClearErrors) {
  WorkloadSpec spec;
  spec.workload = "nope";
  EXPECT_EQ(RequestSource::Create(spec).status().code(), StatusCode::kInvalidArgument);
  spec.workload = "trace";
  EXPECT_NE(RequestSource::Create(spec).status().message().find("--trace"), std::string::npos);
  spec.trace_path = "/nonexistent/trace.jsonl";
  EXPECT_EQ(RequestSource::Create(spec).status().code(), StatusCode::kNotFound);
  spec = WorkloadSpec();
  spec.rate_per_s = 0;
  EXPECT_FALSE(RequestSource::Create(spec).ok());
  spec = WorkloadSpec();
  spec.targets = 0;
  EXPECT_FALSE(RequestSource::Create(spec).ok());
}

TEST(TargetUrlTest, AcceptsUrlsAndHostPorts) {
  EXPECT_EQ(*ParseTarget("http://127.0.0.1:8080"), "127.0.0.1:8080");
  EXPECT_EQ(*ParseTarget("http://127.0.0.1:8080/"), "127.0.0.1:8080");
  EXPECT_EQ(*ParseTarget("localhost:1"), "localhost:1");
  EXPECT_EQ(*ParseTarget("http://[::1]:9000"), "[::1]:9000");
  Result<std::vector<std::string>> list = ParseTargetList("a:1,http://b:2/");
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(*list, (std::vector<std::string>{"a:1", "b:2"}));
}

TEST(TargetUrlTest, RejectsWhatItCannotServe) {
  for (const char* bad :
       {"https://a:1", "a", "a:", "a:0", "a:70000", "a:1x", ":80", "a:1/v1", "::1:80", "[::1:80"}) {
    EXPECT_FALSE(ParseTarget(bad).ok()) << bad;
  }
  EXPECT_FALSE(ParseTargetList("").ok());
  EXPECT_FALSE(ParseTargetList("a:1,,b:2").ok());
}

TEST(TargetUrlTest, HttpsIsTakenWhereTheCallerSpeaksTls) {
  EXPECT_EQ(*ParseTargetUrl("https://node.example:8443/"), (TargetUrl{"node.example:8443", true}));
  EXPECT_EQ(*ParseTargetUrl("http://a:1"), (TargetUrl{"a:1", false}));
  EXPECT_EQ(*ParseTargetUrl("a:1"), (TargetUrl{"a:1", false}));
  EXPECT_FALSE(ParseTargetUrl("ftp://a:1").ok());
  EXPECT_FALSE(ParseTargetUrl("https://a:1/v1").ok());
  Result<std::vector<TargetUrl>> list = ParseTargetUrlList("https://a:1,https://b:2");
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->size(), 2u);
  EXPECT_TRUE(list->back().https);
  EXPECT_FALSE(ParseTargetUrlList("https://a:1,http://b:2").ok());
  EXPECT_FALSE(ParseTargetList("https://a:1").ok());
}

}  // namespace
}  // namespace hearsay::loadgen
