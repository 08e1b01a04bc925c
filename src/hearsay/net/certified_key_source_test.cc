// CertifiedKeySource: a key is confirmed only from the member's own answer naming the same node
// and generation; anything else confirms nothing and is asked again later.
#include "hearsay/net/certified_key_source.h"

#include <gtest/gtest.h>
#include <sodium.h>

#include <vector>

namespace hearsay::net::certified_key_source_test {
namespace {

using namespace std::chrono_literals;

struct Call {
  NodeId id;
  Address address;
  CertifiedKeySource::Done done;
};

class CertifiedKeySourceTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_GE(sodium_init(), 0); }

  CertifiedKeySource source_{
      [this](const NodeId& id, const Address& a, CertifiedKeySource::Done done) {
        calls_.push_back({id, a, std::move(done)});
      },
      [this] { return now_; }, 2s};
  std::vector<Call> calls_;
  TimePoint now_{};
  const std::string key_ = std::string(32, 'k');
};

std::string Health(const std::string& node, const std::string& generation,
                   const std::string& key_b64) {
  return R"({"status":"ok","node":")" + node + R"(","generation":")" + generation +
         R"(","signing_key":")" + key_b64 + R"("})";
}

TEST_F(CertifiedKeySourceTest, ConfirmsTheKeyTheMemberStatesForItsGeneration) {
  EXPECT_EQ(source_.ConfirmedKey("n1", 3, "10.0.0.1:8080"), "");
  ASSERT_EQ(calls_.size(), 1u);
  EXPECT_EQ(calls_[0].id, "n1");
  EXPECT_EQ(calls_[0].address, "10.0.0.1:8080");
  // One fetch at a time.
  EXPECT_EQ(source_.ConfirmedKey("n1", 3, "10.0.0.1:8080"), "");
  EXPECT_EQ(calls_.size(), 1u);
  calls_[0].done(Health("n1", "3", CertifiedKeySource::EncodeKey(key_)));
  EXPECT_EQ(source_.ConfirmedKey("n1", 3, "10.0.0.1:8080"), key_);
  EXPECT_EQ(source_.stats().confirmed, 1u);
  EXPECT_EQ(calls_.size(), 1u);
  // A new generation asks again; the old one is forgotten.
  EXPECT_EQ(source_.ConfirmedKey("n1", 4, "10.0.0.1:8080"), "");
  EXPECT_EQ(calls_.size(), 2u);
  EXPECT_EQ(source_.ConfirmedKey("n1", 3, "10.0.0.1:8080"), "");
}

TEST_F(CertifiedKeySourceTest, AnAnswerThatDoesNotMatchConfirmsNothingAndIsAskedAgainLater) {
  const std::string b64 = CertifiedKeySource::EncodeKey(key_);
  const std::vector<Result<std::string>> answers = {
      Health("n2", "3", b64),                          // another node's answer
      Health("n1", "2", b64),                          // another generation
      Health("n1", "3", "AAAA"),                       // a key of the wrong size
      Health("n1", "3", "not base64!"),                // not a key
      std::string(R"({"node":"n1","generation":3})"),  // generation not a string, no key
      std::string("not json"),
      UnavailableError("the certificate of 10.0.0.1:8080 names node 'n9', not 'n1'"),
  };
  for (size_t i = 0; i < answers.size(); ++i) {
    EXPECT_EQ(source_.ConfirmedKey("n1", 3, "10.0.0.1:8080"), "") << i;
    ASSERT_EQ(calls_.size(), i + 1) << i;
    calls_.back().done(answers[i]);
    EXPECT_EQ(source_.ConfirmedKey("n1", 3, "10.0.0.1:8080"), "") << i;
    EXPECT_EQ(calls_.size(), i + 1) << i;  // not before retry_after
    now_ += 2s;
  }
  EXPECT_EQ(source_.stats().refused, answers.size());
  EXPECT_EQ(source_.stats().confirmed, 0u);
}

TEST_F(CertifiedKeySourceTest, NoAddressNoFetch) {
  EXPECT_EQ(source_.ConfirmedKey("n1", 1, ""), "");
  EXPECT_TRUE(calls_.empty());
}

TEST_F(CertifiedKeySourceTest, AnAnswerAfterTheSourceIsGoneIsDropped) {
  CertifiedKeySource::Done done;
  {
    CertifiedKeySource s(
        [&](const NodeId&, const Address&, CertifiedKeySource::Done d) { done = std::move(d); },
        [] { return TimePoint{}; }, 1s);
    s.ConfirmedKey("n1", 1, "a:1");
  }
  ASSERT_TRUE(done);
  done(Health("n1", "1", CertifiedKeySource::EncodeKey(key_)));  // no crash
}

}  // namespace
}  // namespace hearsay::net::certified_key_source_test
