// Tests of the request scanner against the tree parser: ordinary requests take the fast path;
// whenever the scanner answers, its request equals the tree's; everything invalid or odd is left
// to the tree, so ParseRequest's errors are the tree's (on real request shapes, edge cases, and
// many seeded random mutations of them).
#include "hearsay/api/request_scanner.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "hearsay/api/scanner_test_util.h"
#include "hearsay/env/rng.h"

namespace hearsay::api::request_scanner_test {
namespace {

constexpr Endpoint kCompl = Endpoint::kCompletions;
constexpr Endpoint kChat = Endpoint::kChatCompletions;

Limits TestLimits() {
  Limits limits;
  limits.max_prompt_chars = 1000;
  limits.max_output_tokens = 512;
  limits.default_max_tokens = 16;
  return limits;
}

std::string Describe(const std::variant<ApiRequest, ApiError>& v) {
  if (const auto* e = std::get_if<ApiError>(&v)) return "error: " + e->message;
  const ApiRequest& r = std::get<ApiRequest>(v);
  std::string out =
      "model=" + r.model + " prompt=[" + r.prompt + "] max=" + std::to_string(r.max_tokens) +
      " stream=" + std::to_string(r.stream) + " usage=" + std::to_string(r.include_usage) +
      " user=" + r.user + " t=" + std::to_string(r.temperature) +
      " seed=" + (r.seed ? std::to_string(*r.seed) : "-") + " stop=";
  for (const std::string& s : r.stop) out += "[" + s + "]";
  return out;
}

// The scanner agrees with the tree on `body`; returns whether it answered.
bool Agrees(Endpoint endpoint, const std::string& body) {
  const auto tree = ParseRequestTree(endpoint, body, TestLimits());
  return testing::AgreesWithReference(body, ScanRequest(endpoint, body, TestLimits()),
                                      std::get_if<ApiRequest>(&tree), Describe(tree),
                                      [](const ApiRequest& r) { return Describe(r); });
}

struct Case {
  Endpoint endpoint;
  std::string body;
};

// Valid requests as clients send them: the scanner must answer every one.
const std::vector<Case>& Valid() {
  static const std::vector<Case> cases = {
      {kCompl, R"({"model":"fixed","prompt":"Once upon a time","max_tokens":16})"},
      {kCompl,
       R"({"model":"m","prompt":"x","stream":true,"stream_options":{"include_usage":true}})"},
      {kCompl, R"( {"model":"m1", "prompt":"Once upon", "max_tokens":100, "stream":true,
          "stream_options":{"include_usage":true,"other":[1,{"a":null}]}, "user":"u7",
          "temperature":0.5, "top_p":0.9, "seed":42, "stop":["\n","END"], "n":1, "best_of":1,
          "echo":false, "presence_penalty":-1.5, "frequency_penalty":2, "logit_bias":{"1":2},
          "suffix":"", "some_future_field":{"x":[1,2e3,-0.5,true,false,null]}} )"},
      {kCompl, R"({"model":"m","prompt":"x","max_tokens":null,"stream":null,"stop":null,
          "seed":null,"user":null,"n":null,"logprobs":null,"stream_options":null})"},
      {kCompl, R"({"model":"m","prompt":["only one"],"stop":"\n\n","temperature":0})"},
      {kCompl,
       R"({"model":"m","prompt":"caf\u00e9 \ud83d\ude00 \"q\" \\ \/","seed":18446744073709551615})"},
      {kCompl, R"({"model":"m","prompt":"x","temperature":-0,"max_completion_tokens":"any"})"},
      {kCompl, R"({"prompt":"x","stream":false,"model":"m","messages":"ignored here"})"},
      {kChat, R"({"model":"m","messages":[{"role":"user","content":"Hi"}]})"},
      {kChat, R"({"model":"m","messages":[{"role":"system","content":"Be brief."},
          {"role":"user","content":[{"type":"text","text":"a"},{"text":"b","type":"text"}]},
          {"role":"assistant","content":null,"tool_calls":[]},{"role":"tool","content":"r"},
          {"role":"developer","content":[]}],"max_tokens":5,"max_completion_tokens":7,
          "logprobs":false,"stream":true,"stream_options":{"include_usage":false},
          "echo":"ignored for chat","best_of":3,"suffix":"x","prompt":7})"},
      {kChat, R"({"messages":[{"content":"late role","name":"n","role":"user"}],"model":"m"})"},
  };
  return cases;
}

// Bodies the scanner leaves to the tree: invalid ones, and valid ones it reads differently.
const std::vector<Case>& LeftToTheTree() {
  static const std::vector<Case> cases = {
      {kCompl, ""},
      {kCompl, "[]"},
      {kCompl, R"({"model":"m","prompt":"x")"},
      {kCompl, R"({"model":"m","prompt":"x",})"},
      {kCompl, R"({"model":"m","prompt":"x"} x)"},
      {kCompl, "\xEF\xBB\xBF{\"model\":\"m\",\"prompt\":\"x\"}"},  // a BOM: the tree accepts it
      {kCompl, R"({"prompt":"x"})"},
      {kCompl, R"({"model":"","prompt":"x"})"},
      {kCompl, R"({"model":7,"prompt":"x"})"},
      {kCompl, R"({"model":"m"})"},
      {kCompl, R"({"model":"m","prompt":""})"},
      {kCompl, R"({"model":"m","prompt":[]})"},
      {kCompl, R"({"model":"m","prompt":[""]})"},
      {kCompl, R"({"model":"m","prompt":["a","b"]})"},
      {kCompl, R"({"model":"m","prompt":[1,2]})"},
      {kCompl, R"({"model":"m","prompt":"x","max_tokens":0})"},
      {kCompl, R"({"model":"m","prompt":"x","max_tokens":513})"},
      {kCompl, R"({"model":"m","prompt":"x","max_tokens":1.0})"},
      {kCompl, R"({"model":"m","prompt":"x","max_tokens":-1})"},
      {kCompl, R"({"model":"m","prompt":"x","max_tokens":"5"})"},
      {kCompl, R"({"model":"m","prompt":"x","stream":"yes"})"},
      {kCompl, R"({"model":"m","prompt":"x","stream_options":{"include_usage":true}})"},
      {kCompl, R"({"model":"m","prompt":"x","stream":true,"stream_options":[]})"},
      {kCompl, R"({"model":"m","prompt":"x","stream":true,"stream_options":{"include_usage":1}})"},
      {kCompl, R"({"model":"m","prompt":"x","n":2})"},
      {kCompl, R"({"model":"m","prompt":"x","best_of":2})"},
      {kCompl, R"({"model":"m","prompt":"x","echo":true})"},
      {kCompl, R"({"model":"m","prompt":"x","logprobs":0})"},
      {kCompl, R"({"model":"m","prompt":"x","suffix":"tail"})"},
      {kCompl, R"({"model":"m","prompt":"x","temperature":2.5})"},
      {kCompl, R"({"model":"m","prompt":"x","temperature":"hot"})"},
      {kCompl, R"({"model":"m","prompt":"x","top_p":1.01})"},
      {kCompl, R"({"model":"m","prompt":"x","presence_penalty":-2.1})"},
      {kCompl, R"({"model":"m","prompt":"x","seed":-1})"},  // valid, but the tree's to read
      {kCompl, R"({"model":"m","prompt":"x","seed":18446744073709551616})"},
      {kCompl, R"({"model":"m","prompt":"x","stop":""})"},
      {kCompl, R"({"model":"m","prompt":"x","stop":["a","b","c","d","e"]})"},
      {kCompl, R"({"model":"m","prompt":"x","stop":["a",""]})"},
      {kCompl, R"({"model":"m","prompt":"x","stop":[1]})"},
      {kCompl, R"({"model":"m","prompt":"x","user":5})"},
      {kCompl, R"({"model":"m","prompt":"x","model":"n"})"},  // repeated: the tree keeps the last
      {kCompl, R"({"model":"m","prompt":"x","extra":{"a":1,"a":2}})"},
      {kCompl, R"({"model":"m","prompt":"x","temperature":1e400})"},
      {kCompl, "{\"model\":\"m\",\"prompt\":\"bad \xFF utf8\"}"},
      {kCompl, "{\"model\":\"m\",\"prompt\":\"raw\ncontrol\"}"},
      {kCompl,
       R"({"model":"m","prompt":"x","x":)" + std::string(40, '[') + std::string(40, ']') + "}"},
      {kCompl, R"({"model":"m","prompt":")" + std::string(1001, 'a') + "\"}"},
      {kChat, R"({"model":"m","messages":[]})"},
      {kChat, R"({"model":"m","messages":null})"},
      {kChat, R"({"model":"m","messages":"hi"})"},
      {kChat, R"({"model":"m"})"},
      {kChat, R"({"model":"m","messages":[{"role":"user"}]})"},
      {kChat, R"({"model":"m","messages":[{"content":"x"}]})"},
      {kChat, R"({"model":"m","messages":[{"role":"robot","content":"x"}]})"},
      {kChat, R"({"model":"m","messages":[{"role":"user","content":null}]})"},
      {kChat, R"({"model":"m","messages":[{"role":"user","content":5}]})"},
      {kChat, R"({"model":"m","messages":[{"role":"user","content":[{"type":"image_url"}]}]})"},
      {kChat, R"({"model":"m","messages":[{"role":"user","content":[{"type":"text"}]}]})"},
      {kChat, R"({"model":"m","messages":[{"role":"user","content":["text"]}]})"},
      {kChat, R"({"model":"m","messages":[{"role":"user","content":"x"}],"logprobs":true})"},
      {kChat,
       R"({"model":"m","messages":[{"role":"user","content":"x"}],"max_completion_tokens":0})"},
      {kChat, R"({"model":"m","messages":[{"role":"user","role":"system","content":"x"}]})"},
  };
  return cases;
}

TEST(RequestScannerTest, AnswersOrdinaryRequests) {
  for (const Case& c : Valid()) {
    EXPECT_TRUE(Agrees(c.endpoint, c.body)) << "left to the tree: " << c.body;
  }
}

TEST(RequestScannerTest, ReadsWhatTheTreeReads) {
  const std::optional<ApiRequest> r = ScanRequest(kCompl, Valid()[2].body, TestLimits());
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->model, "m1");
  EXPECT_EQ(r->prompt, "Once upon");
  EXPECT_EQ(r->max_tokens, 100u);
  EXPECT_TRUE(r->stream);
  EXPECT_TRUE(r->include_usage);
  EXPECT_EQ(r->user, "u7");
  EXPECT_DOUBLE_EQ(r->temperature, 0.5);
  EXPECT_EQ(r->seed, uint64_t{42});
  EXPECT_EQ(r->stop, (std::vector<std::string>{"\n", "END"}));

  const std::optional<ApiRequest> chat = ScanRequest(kChat, Valid()[9].body, TestLimits());
  ASSERT_TRUE(chat.has_value());
  EXPECT_EQ(chat->max_tokens, 7u);  // max_completion_tokens wins
  EXPECT_EQ(chat->prompt,
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nab<|im_end|>\n"
            "<|im_start|>assistant\n<|im_end|>\n<|im_start|>tool\nr<|im_end|>\n"
            "<|im_start|>developer\n<|im_end|>\n<|im_start|>assistant\n");
}

TEST(RequestScannerTest, LeavesInvalidAndOddBodiesToTheTree) {
  for (const Case& c : LeftToTheTree()) {
    EXPECT_FALSE(ScanRequest(c.endpoint, c.body, TestLimits()).has_value()) << c.body;
    // ParseRequest (the fast path, then the tree) answers exactly as the tree does.
    EXPECT_EQ(Describe(ParseRequest(c.endpoint, c.body, TestLimits())),
              Describe(ParseRequestTree(c.endpoint, c.body, TestLimits())))
        << c.body;
  }
  // The fallback still accepts the valid ones among them, and errors keep their param.
  EXPECT_TRUE(std::holds_alternative<ApiRequest>(
      ParseRequest(kCompl, R"({"model":"m","prompt":"x","seed":-1})", TestLimits())));
  const auto e = ParseRequest(kCompl, R"({"model":"m","prompt":"x","max_tokens":0})", TestLimits());
  ASSERT_TRUE(std::holds_alternative<ApiError>(e));
  EXPECT_EQ(std::get<ApiError>(e).param, "max_tokens");
}

TEST(RequestScannerTest, KeepsToTheBudgetAndLeavesWhatIsOverItToTheTree) {
  Limits limits = TestLimits();
  limits.budget = Budget{.max_members = 5, .max_array_items = 3, .max_number_chars = 4};
  const std::string within = R"({"model":"m","prompt":"x","a":[1,2,3],"b":1234,"c":1})";
  EXPECT_TRUE(ScanRequest(kCompl, within, limits).has_value());
  for (const std::string over : {
           R"({"model":"m","prompt":"x","a":[1,2,3],"b":1234,"c":1,"d":2})",  // 6 members
           R"({"model":"m","prompt":"x","a":[1,2,3,4]})",                      // 4 items
           R"({"model":"m","prompt":"x","a":[[1],[2]]})",                      // 4 items in all
           R"({"model":"m","prompt":"x","a":12345})",                          // 5 characters
       }) {
    EXPECT_FALSE(ScanRequest(kCompl, over, limits).has_value()) << over;
    const auto e = ParseRequest(kCompl, over, limits);
    ASSERT_TRUE(std::holds_alternative<ApiError>(e)) << over;
    EXPECT_EQ(std::get<ApiError>(e).code, "request_too_complex") << over;
  }
  // A budget shallower than the scanner's own depth limit leaves every body to the tree.
  limits.budget = Budget{.max_depth = 3};
  EXPECT_FALSE(ScanRequest(kCompl, within, limits).has_value());
}

// Seeded random edits of both lists: byte flips, JSON-ish insertions, deletions, truncations.
TEST(RequestScannerTest, AgreesWithTheTreeOnMutations) {
  static constexpr std::string_view kAlphabet =
      "{}[]\":,\\ 0123456789-+.eEtrufalsn\x80\xC3\xFFmodelpromptsx";
  const size_t answered = testing::CountAnsweredMutants(
      20261129, 30000, kAlphabet,
      [](Rng& rng) {
        // Mostly valid bodies, so that many mutants stay valid and exercise the fast path.
        const std::vector<Case>& from = rng.Below(4) != 0 ? Valid() : LeftToTheTree();
        return from[rng.Below(from.size())];
      },
      [](Case& c) -> std::string& { return c.body; },
      [](const Case& c) { return Agrees(c.endpoint, c.body); });
  // The mutations must exercise the fast path, not only the fallback.
  EXPECT_GT(answered, 2000u);
}

}  // namespace
}  // namespace hearsay::api::request_scanner_test
