#include "hearsay/net/api_keys.h"

#include <gtest/gtest.h>

#include <array>
#include <string>

#include "hearsay/net/api_key_store.h"
#include "hearsay/net/tenant_limiter.h"

namespace hearsay::net {
namespace {

std::array<uint8_t, 38> Random(uint8_t seed) {
  std::array<uint8_t, 38> r{};
  for (size_t i = 0; i < r.size(); ++i) r[i] = static_cast<uint8_t>(seed * 31 + i * 7);
  return r;
}

NewApiKey Make(const Tenant& t, uint8_t seed) { return MakeApiKey(t, Random(seed)).value(); }

TEST(ApiKeysTest, AKeyAuthenticatesAsItsTenantAndNothingElseDoes) {
  const NewApiKey a = Make({"acme", {10, 6000}, false}, 1);
  const NewApiKey b = Make({"globex", {}, true}, 2);
  const ApiKeys keys = ApiKeys::Parse("# keys\n\n" + a.line + b.line).value();
  ASSERT_EQ(keys.entries().size(), 2u);
  const Tenant* ta = keys.Authenticate(a.key);
  ASSERT_NE(ta, nullptr);
  EXPECT_EQ(ta->name, "acme");
  EXPECT_EQ(ta->limits, (TenantLimits{10, 6000}));
  EXPECT_FALSE(ta->shared_cache);
  ASSERT_NE(keys.Authenticate(b.key), nullptr);
  EXPECT_TRUE(keys.Authenticate(b.key)->shared_cache);
  // One changed digit, a cut key, another key's secret under this id, garbage: refused.
  std::string wrong = a.key;
  wrong.back() = wrong.back() == '0' ? '1' : '0';
  EXPECT_EQ(keys.Authenticate(wrong), nullptr);
  EXPECT_EQ(keys.Authenticate(a.key.substr(0, a.key.size() - 1)), nullptr);
  EXPECT_EQ(keys.Authenticate("hsk_" + a.id + b.key.substr(4 + b.id.size())), nullptr);
  EXPECT_EQ(keys.Authenticate(""), nullptr);
  EXPECT_EQ(keys.Authenticate("hsk_"), nullptr);
  EXPECT_EQ(keys.Authenticate(a.key + "0"), nullptr);
}

TEST(ApiKeysTest, TheFileHoldsTheHashNeverTheKey) {
  const NewApiKey a = Make({"acme", {}, false}, 3);
  const std::string secret = a.key.substr(a.key.rfind('_') + 1);
  ASSERT_EQ(secret.size(), ApiKeys::kSecretHexDigits);
  EXPECT_EQ(a.line.find(secret), std::string::npos);
  EXPECT_NE(a.line.find("blake2b256:"), std::string::npos);
  EXPECT_EQ(a.line.back(), '\n');
}

TEST(ApiKeysTest, RefusesWhatIsOutsideTheFormatNamingTheLine) {
  const NewApiKey a = Make({"acme", {}, false}, 4);
  const std::string hash = a.line.substr(a.line.find(' ') + 1, 11 + 64);
  const struct {
    std::string text;
    std::string says;
  } cases[] = {
      {"abc\n", "line 1"},
      {"\n\nid " + hash + "\n", "line 3"},
      {"ID " + hash + " acme\n", "id"},
      {"id blake2b256:00 acme\n", "hash"},
      {"id " + hash + " ac/me\n", "tenant"},
      {"id " + hash + " acme rps=-1\n", "limit"},
      {"id " + hash + " acme rps=01\n", "limit"},
      {"id " + hash + " acme rps=1000000001\n", "limit"},
      {"id " + hash + " acme rps=1 rps=2\n", "repeated"},
      {"id " + hash + " acme burst=1\n", "unknown"},
      {"id " + hash + " acme shared_cache=yes\n", "shared_cache"},
      {"id " + hash + " acme\nid " + hash + " acme\n", "repeated id"},
      {"a " + hash + " acme rps=1\nb " + hash + " acme rps=2\n", "acme"},
      {"id " + hash + " acme\x01\n", "control"},
      {std::string(600, 'a') + "\n", "512"},
  };
  for (const auto& c : cases) {
    Result<ApiKeys> r = ApiKeys::Parse(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_NE(r.status().message().find(c.says), std::string::npos) << r.status().message();
  }
  EXPECT_FALSE(ApiKeys::Parse(std::string(ApiKeys::kMaxFileBytes + 1, '#')).ok());
  // Same tenant, same limits, two keys: fine.
  EXPECT_TRUE(ApiKeys::Parse("a " + hash + " acme rps=1\r\nb " + hash + " acme rps=1").ok());
}

TEST(ApiKeysTest, BearerTokenReadsTheAuthorizationHeader) {
  EXPECT_EQ(BearerToken("Bearer abc"), "abc");
  EXPECT_EQ(BearerToken("bearer  abc "), "abc");
  EXPECT_EQ(BearerToken("Basic abc"), std::nullopt);
  EXPECT_EQ(BearerToken("Bearer"), std::nullopt);
  EXPECT_EQ(BearerToken("Bearerabc"), std::nullopt);
  EXPECT_EQ(BearerToken(""), std::nullopt);
}

TEST(ApiKeysTest, MakeApiKeyRefusesABadTenant) {
  EXPECT_FALSE(MakeApiKey({"", {}, false}, Random(1)).ok());
  EXPECT_FALSE(MakeApiKey({"a b", {}, false}, Random(1)).ok());
  EXPECT_FALSE(MakeApiKey({std::string(65, 'a'), {}, false}, Random(1)).ok());
  EXPECT_FALSE(MakeApiKey({"a", {ApiKeys::kMaxLimit + 1, 0}, false}, Random(1)).ok());
}

// TenantLimiter in virtual time.
constexpr TimePoint T(double seconds) { return TimePoint(Duration(int64_t(seconds * 1e9))); }

TEST(TenantLimiterTest, RequestsPerSecondIsATokenBucket) {
  TenantLimiter l;
  const TenantLimits limits{2, 0};
  EXPECT_TRUE(l.AdmitRequest("a", limits, T(0)).ok);
  EXPECT_TRUE(l.AdmitRequest("a", limits, T(0)).ok);
  const TenantLimiter::Verdict v = l.AdmitRequest("a", limits, T(0));
  EXPECT_FALSE(v.ok);
  EXPECT_STREQ(v.limit, "rps");
  EXPECT_EQ(v.retry_after, std::chrono::milliseconds(500));
  EXPECT_EQ(RetryAfterSeconds(v.retry_after), "1");
  // Another tenant has its own bucket; no limits means none.
  EXPECT_TRUE(l.AdmitRequest("b", limits, T(0)).ok);
  EXPECT_TRUE(l.AdmitRequest("c", {}, T(0)).ok);
  EXPECT_FALSE(l.AdmitRequest("a", limits, T(0.49)).ok);
  EXPECT_TRUE(l.AdmitRequest("a", limits, T(0.51)).ok);
  // Over a long run the rate holds: 10 s at 2/s admit about 20 (plus the burst of 2).
  int admitted = 0;
  for (int ms = 1000; ms < 11000; ms += 10) admitted += l.AdmitRequest("a", limits, T(ms / 1e3)).ok;
  EXPECT_GE(admitted, 19);
  EXPECT_LE(admitted, 22);
}

TEST(TenantLimiterTest, TokensPerMinuteChargesTheCostAndAllowsOneLargeRequestWhenFull) {
  TenantLimiter l;
  const TenantLimits limits{0, 600};  // 10 tokens a second
  EXPECT_TRUE(l.AdmitTokens("a", limits, 500, T(0)).ok);
  EXPECT_TRUE(l.AdmitTokens("a", limits, 100, T(0)).ok);
  const TenantLimiter::Verdict v = l.AdmitTokens("a", limits, 50, T(0));
  EXPECT_FALSE(v.ok);
  EXPECT_STREQ(v.limit, "tpm");
  EXPECT_EQ(v.retry_after, std::chrono::seconds(5));
  // A request above the whole minute passes on a full bucket and leaves a debt.
  EXPECT_TRUE(l.AdmitTokens("b", limits, 1200, T(0)).ok);
  EXPECT_FALSE(l.AdmitTokens("b", limits, 1, T(60)).ok);
  EXPECT_TRUE(l.AdmitTokens("b", limits, 1, T(60.2)).ok);
}

}  // namespace
}  // namespace hearsay::net
