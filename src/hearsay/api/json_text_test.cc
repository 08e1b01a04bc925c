#include "hearsay/api/json_text.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace hearsay::api {
namespace {

std::string Quoted(std::string_view text) {
  std::string out;
  AppendJsonString(text, &out);
  return out;
}

TEST(JsonTextTest, EscapesAndRoundTrips) {
  EXPECT_EQ(Quoted("a\"b\\c\n\t\x01"), R"("a\"b\\c\n\t\u0001")");
  std::string all;
  for (int c = 0; c < 128; ++c) all.push_back(static_cast<char>(c));
  all.append("caf\xC3\xA9 \xF0\x9F\x98\x80");
  EXPECT_EQ(nlohmann::json::parse(Quoted(all)).get<std::string>(), all);
}

TEST(JsonTextTest, InvalidUtf8BecomesReplacementCharacter) {
  for (std::string_view bad :
       {"\x80", "\xC3", "\xC0\xAF", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\xF0\x9F\x98", "\xFF"}) {
    const std::string q = Quoted(bad);
    const auto parsed = nlohmann::json::parse(q);  // valid JSON
    EXPECT_NE(parsed.get<std::string>().find("\xEF\xBF\xBD"), std::string::npos);
  }
  EXPECT_EQ(Utf8SequenceLength("\xE6\x97\xA5", 0), 3u);
  EXPECT_EQ(Utf8SequenceLength("\xE6\x97", 0), 0u);
  EXPECT_EQ(Utf8SequenceLength("a", 0), 1u);
}

TEST(JsonTextTest, NullForEmpty) {
  std::string out;
  AppendJsonStringOrNull("", &out);
  out.push_back(',');
  AppendJsonStringOrNull("x", &out);
  EXPECT_EQ(out, R"(null,"x")");
}

}  // namespace
}  // namespace hearsay::api
