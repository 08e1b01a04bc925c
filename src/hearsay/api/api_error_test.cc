#include "hearsay/api/api_error.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace hearsay::api {
namespace {

using nlohmann::json;

TEST(ApiErrorTest, FactoriesFixStatusTypeAndCode) {
  struct Case {
    ApiError error;
    int status;
    const char* type;
    const char* code;
  };
  const Case cases[] = {
      {InvalidRequest("max_tokens", "bad", "invalid_value"), 400, "invalid_request_error",
       "invalid_value"},
      {UnknownModel("gpt-9"), 404, "invalid_request_error", "model_not_found"},
      {TooManyRequests(), 429, "requests", "rate_limit_exceeded"},
      {BodyTooLarge(1024), 413, "invalid_request_error", "request_too_large"},
      {Internal("boom"), 500, "server_error", ""},
      {Unavailable("draining"), 503, "server_error", ""},
      {BadGateway("malformed event"), 502, "server_error", "upstream_error"},
      {GatewayTimeout("no output"), 504, "server_error", "upstream_timeout"},
      {Forbidden("no token"), 403, "permission_error", "forbidden"},
      {NotFound("/v2/x"), 404, "invalid_request_error", "not_found"},
      {MethodNotAllowed("GET", "/v1/completions"), 405, "invalid_request_error",
       "method_not_allowed"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(c.error.http_status, c.status) << c.error.message;
    EXPECT_EQ(c.error.type, c.type) << c.error.message;
    EXPECT_EQ(c.error.code, c.code) << c.error.message;
    EXPECT_FALSE(c.error.message.empty());
  }
  EXPECT_EQ(UnknownModel("gpt-9").param, "model");
  EXPECT_EQ(UnknownModel("gpt-9").message,
            "The model `gpt-9` does not exist or you do not have access to it.");
  EXPECT_NE(BodyTooLarge(1024).message.find("1024 bytes"), std::string::npos);
  EXPECT_NE(MethodNotAllowed("GET", "/v1/completions").message.find("GET"), std::string::npos);
}

TEST(ApiErrorTest, RenderErrorShape) {
  const json with_param = json::parse(RenderError(InvalidRequest("n", "n must be 1", "bad_n")));
  EXPECT_EQ(with_param, json::parse(R"({"error":{"message":"n must be 1",
      "type":"invalid_request_error","param":"n","code":"bad_n"}})"));
  const json nulls = json::parse(RenderError(Internal("x \"quoted\"\n")));
  EXPECT_TRUE(nulls["error"]["param"].is_null());
  EXPECT_TRUE(nulls["error"]["code"].is_null());
  EXPECT_EQ(nulls["error"]["message"], "x \"quoted\"\n");
  EXPECT_EQ(nulls.size(), 1u);
  EXPECT_EQ(nulls["error"].size(), 4u);
}

TEST(ApiErrorTest, ClientStringsAreTruncatedAndSanitized) {
  const std::string huge(100000, 'p');
  const ApiError e = NotFound("/" + huge);
  EXPECT_LT(e.message.size(), 120u);
  EXPECT_EQ(UnsupportedEncoding("gzip").http_status, 415);
  // Invalid UTF-8 in a path still renders as valid JSON.
  const json j = json::parse(RenderError(NotFound("/\xFF\xFE")));
  EXPECT_NE(j["error"]["message"].get<std::string>().find("\xEF\xBF\xBD"), std::string::npos);
}

TEST(ApiErrorTest, TruncatedCutsOnCharacterBoundaries) {
  EXPECT_EQ(Truncated("abc", 3), "abc");
  EXPECT_EQ(Truncated("abcd", 3), "abc...");
  // "é" is 2 bytes at offsets 2..3: a cut at 3 backs up to 2.
  EXPECT_EQ(Truncated("ab\xC3\xA9z", 3), "ab...");
}

}  // namespace
}  // namespace hearsay::api
