#include "hearsay/net/key_admin.h"

#include <gtest/gtest.h>
#include <sodium.h>
#include <sys/stat.h>

#include <array>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "hearsay/net/keyring_file.h"
#include "hearsay/net/peer_auth.h"

namespace hearsay::net {
namespace {

using gossip::ClusterKey;
using gossip::Keyring;
using nlohmann::json;

ClusterKey Key(uint8_t fill) {
  std::array<uint8_t, gossip::kClusterKeyBytes> b;
  b.fill(fill);
  return ClusterKey::FromBytes(b).value();
}

class ScratchDir {
 public:
  ScratchDir() {
    std::string t = (std::filesystem::temp_directory_path() / "key_admin_test.XXXXXX").string();
    path_ = ::mkdtemp(t.data());
  }
  ~ScratchDir() { std::filesystem::remove_all(path_); }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// The admin's clock and the node's, in unix ms (the tests fix it).
constexpr int64_t kNow = 1'700'000'000'000;

http::Request AdminRequest(std::string method, std::string path, std::string body,
                           const ClusterKey* auth, std::string remote = "127.0.0.1:50000",
                           std::string receiver = "n1", int64_t signed_at = kNow) {
  http::Request r;
  r.method = std::move(method);
  r.path = path;
  r.target = std::move(path);
  r.body = std::move(body);
  r.remote = std::move(remote);
  if (auth != nullptr) {
    r.headers.emplace_back(
        std::string(kAdminTokenHeader),
        SignAdminRequest(*auth, r.method, r.target, r.body, receiver, signed_at));
  }
  return r;
}

// A peer request's fields (what the daemon's authenticator signs and checks).
const AuthFields kHop{"POST", "/v1/completions", "{}", "n2", "n1"};

std::string KeyBody(const ClusterKey& k) { return json{{"key", k.ToBase64()}}.dump(); }

json Body(const KeyAdminResponse& r) { return json::parse(r.body, nullptr, false); }

std::string ErrorCode(const KeyAdminResponse& r) {
  const json j = Body(r);
  return j.contains("error") && j["error"]["code"].is_string()
             ? j["error"]["code"].get<std::string>()
             : "";
}

// One node's key state as the daemon wires it: the live keyring and the peer authenticator
// (which checks and signs forwards), updated through on_change.
struct Fixture {
  explicit Fixture(const ClusterKey& first, std::string keyring_file = "",
                   bool allow_remote = false)
      : keyring(first),
        auth(keyring, AuthPurpose::kPeer),
        admin(keyring,
              KeyAdminOptions{std::move(keyring_file), allow_remote, "n1", [] { return kNow; }},
              [this](const Keyring& k) {
                auth.Update(k);
                ++changes;
              }) {}
  KeyAdminResponse Do(std::string method, std::string path, std::string body,
                      const ClusterKey* auth_key) {
    return admin.Handle(
        AdminRequest(std::move(method), std::move(path), std::move(body), auth_key));
  }
  // Whether the node accepts a forward signed with `key`.
  bool Accepts(const ClusterKey& key) {
    return auth.Verify(SignPeerRequest(key, kHop, kNow), kHop, kNow) ==
           PeerAuthenticator::Verdict::kOk;
  }
  // Whether the node's forwards are signed with `key`.
  bool Sends(const ClusterKey& key) {
    PeerAuthenticator receiver(Keyring(key), AuthPurpose::kPeer);
    return receiver.Verify(auth.Sign(kHop, kNow), kHop, kNow) == PeerAuthenticator::Verdict::kOk;
  }
  Keyring keyring;
  PeerAuthenticator auth;
  int changes = 0;
  KeyAdmin admin;
};

class KeyAdminTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_GE(sodium_init(), 0); }
  const ClusterKey old_ = Key(1);
  const ClusterKey new_ = Key(2);
};

TEST_F(KeyAdminTest, PathsAndLoopback) {
  EXPECT_TRUE(IsKeyAdminPath("/admin/keys"));
  EXPECT_TRUE(IsKeyAdminPath("/admin/keys/install"));
  EXPECT_FALSE(IsKeyAdminPath("/admin/keysx"));
  EXPECT_FALSE(IsKeyAdminPath("/admin"));
  EXPECT_TRUE(IsLoopbackRemote("127.0.0.1:4000"));
  EXPECT_TRUE(IsLoopbackRemote("127.8.9.10:4000"));
  EXPECT_TRUE(IsLoopbackRemote("[::1]:4000"));
  EXPECT_TRUE(IsLoopbackRemote("[::ffff:127.0.0.1]:4000"));
  EXPECT_FALSE(IsLoopbackRemote("10.0.0.1:4000"));
  EXPECT_FALSE(IsLoopbackRemote("[::ffff:10.0.0.1]:4000"));
  EXPECT_FALSE(IsLoopbackRemote("[2001:db8::1]:4000"));
  EXPECT_FALSE(IsLoopbackRemote("localhost:4000"));  // only literal addresses are trusted
  EXPECT_FALSE(IsLoopbackRemote(""));
  EXPECT_FALSE(IsLoopbackRemote("[::1"));
}

TEST_F(KeyAdminTest, AnAdminRequestIsGoodOnceForThisNodeAndThisRequest) {
  Fixture f(old_);
  const http::Request list = AdminRequest("GET", "/admin/keys", "", &old_);
  EXPECT_EQ(f.admin.Handle(list).status, 200);
  EXPECT_EQ(f.admin.Handle(list).status, 403) << "replayed";
  // Made for another node.
  EXPECT_EQ(
      f.admin.Handle(AdminRequest("GET", "/admin/keys", "", &old_, "127.0.0.1:1", "n9")).status,
      403);
  // Made long ago (or far ahead).
  EXPECT_EQ(
      f.admin
          .Handle(AdminRequest("GET", "/admin/keys", "", &old_, "127.0.0.1:1", "n1", kNow - 60'000))
          .status,
      403);
  // Signed for a list, sent as an install: the path and body are covered.
  http::Request swapped = AdminRequest("GET", "/admin/keys", "", &old_);
  swapped.method = "POST";
  swapped.path = swapped.target = "/admin/keys/install";
  swapped.body = KeyBody(new_);
  EXPECT_EQ(f.admin.Handle(swapped).status, 403);
  EXPECT_FALSE(f.keyring.Contains(new_));
  // A peer authenticator is not an admin one.
  http::Request peer = AdminRequest("GET", "/admin/keys", "", nullptr);
  peer.headers.emplace_back(
      std::string(kAdminTokenHeader),
      SignPeerRequest(old_, {"GET", "/admin/keys", "", kAdminSender, "n1"}, kNow));
  EXPECT_EQ(f.admin.Handle(peer).status, 403);
}

TEST_F(KeyAdminTest, FullRotationUpdatesKeyringAuthAndSentToken) {
  Fixture f(old_);
  KeyAdminResponse r = f.Do("POST", "/admin/keys/install", KeyBody(new_), &old_);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(Body(r)["changed"].get<bool>());
  EXPECT_EQ(Body(r)["key_id"], new_.IdHex());
  EXPECT_TRUE(f.keyring.Contains(new_));
  EXPECT_EQ(*f.keyring.primary(), old_);
  EXPECT_TRUE(f.Accepts(old_));
  EXPECT_TRUE(f.Accepts(new_));  // accepted before any node sends it
  EXPECT_TRUE(f.Sends(old_));
  EXPECT_FALSE(f.Sends(new_));

  // Use by id, as `hearsay keys use --id` does.
  r = f.Do("POST", "/admin/keys/use", json{{"id", new_.IdHex()}}.dump(), &old_);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(*f.keyring.primary(), new_);
  EXPECT_TRUE(f.Sends(new_));
  EXPECT_EQ(Body(r)["primary"], new_.IdHex());
  EXPECT_TRUE(f.Accepts(old_));  // a node that has not switched yet still gets in

  r = f.Do("POST", "/admin/keys/remove", KeyBody(old_), &new_);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_FALSE(f.keyring.Contains(old_));
  EXPECT_EQ(f.keyring.size(), 1u);
  EXPECT_FALSE(f.Accepts(old_));
  EXPECT_TRUE(f.Accepts(new_));
  EXPECT_EQ(f.changes, 3);

  // The removed key no longer authorises admin requests either.
  r = f.Do("GET", "/admin/keys", "", &old_);
  EXPECT_EQ(r.status, 403);
}

TEST_F(KeyAdminTest, ListShowsIdsAndNeverSecrets) {
  Fixture f(old_);
  ASSERT_EQ(f.Do("POST", "/admin/keys/install", KeyBody(new_), &old_).status, 200);
  const KeyAdminResponse r = f.Do("GET", "/admin/keys", "", &old_);
  ASSERT_EQ(r.status, 200) << r.body;
  const json j = Body(r);
  ASSERT_EQ(j["keys"].size(), 2u);
  EXPECT_EQ(j["keys"][0]["id"], old_.IdHex());
  EXPECT_TRUE(j["keys"][0]["primary"].get<bool>());
  EXPECT_EQ(j["keys"][1]["id"], new_.IdHex());
  EXPECT_FALSE(j["keys"][1]["primary"].get<bool>());
  EXPECT_FALSE(j["persisted"].get<bool>());
  for (const ClusterKey& k : {old_, new_}) {
    EXPECT_EQ(r.body.find(k.ToBase64()), std::string::npos);
  }
}

// Every hostile or malformed request is refused and changes nothing.
TEST_F(KeyAdminTest, RefusalsChangeNothing) {
  Fixture f(old_);
  const ClusterKey outsider = Key(9);
  struct Case {
    const char* what;
    http::Request request;
    int status;
    std::string code;
  } cases[] = {
      {"remote client",
       AdminRequest("POST", "/admin/keys/install", KeyBody(new_), &old_, "10.1.2.3:5555"), 403,
       "key_admin_forbidden"},
      {"remote IPv6 client",
       AdminRequest("POST", "/admin/keys/install", KeyBody(new_), &old_, "[2001:db8::7]:5555"), 403,
       "key_admin_forbidden"},
      {"no token", AdminRequest("POST", "/admin/keys/install", KeyBody(new_), nullptr), 403,
       "key_admin_forbidden"},
      {"token of a key that is not installed",
       AdminRequest("POST", "/admin/keys/install", KeyBody(new_), &outsider), 403,
       "key_admin_forbidden"},
      {"a peer authenticator instead of an admin one",
       [&] {
         http::Request r = AdminRequest("POST", "/admin/keys/install", KeyBody(new_), nullptr);
         r.headers.emplace_back(
             std::string(kAdminTokenHeader),
             SignPeerRequest(old_, {r.method, r.target, r.body, kAdminSender, "n1"}, kNow));
         return r;
       }(),
       403, "key_admin_forbidden"},
      {"not JSON", AdminRequest("POST", "/admin/keys/install", "{nope", &old_), 400,
       "invalid_key_request"},
      {"key not a string", AdminRequest("POST", "/admin/keys/install", R"({"key": 7})", &old_), 400,
       "invalid_key_request"},
      {"bad base64", AdminRequest("POST", "/admin/keys/install", R"({"key": "not-a-key"})", &old_),
       400, "invalid_key_request"},
      {"install by id",
       AdminRequest("POST", "/admin/keys/install", json{{"id", old_.IdHex()}}.dump(), &old_), 400,
       "invalid_key_request"},
      {"both key and id",
       AdminRequest("POST", "/admin/keys/use",
                    json{{"key", new_.ToBase64()}, {"id", new_.IdHex()}}.dump(), &old_),
       400, "invalid_key_request"},
      {"bad id", AdminRequest("POST", "/admin/keys/use", R"({"id": "xyz"})", &old_), 400,
       "invalid_key_request"},
      {"use a key that is not installed",
       AdminRequest("POST", "/admin/keys/use", KeyBody(new_), &old_), 404, "key_not_installed"},
      {"use an unknown id",
       AdminRequest("POST", "/admin/keys/use", json{{"id", new_.IdHex()}}.dump(), &old_), 404,
       "key_not_installed"},
      {"remove a key that is not installed",
       AdminRequest("POST", "/admin/keys/remove", KeyBody(new_), &old_), 404, "key_not_installed"},
      {"remove the primary key", AdminRequest("POST", "/admin/keys/remove", KeyBody(old_), &old_),
       409, "key_is_primary"},
      {"GET a change", AdminRequest("GET", "/admin/keys/install", "", &old_), 405,
       "method_not_allowed"},
      {"POST the list", AdminRequest("POST", "/admin/keys", "", &old_), 405, "method_not_allowed"},
      {"unknown op", AdminRequest("POST", "/admin/keys/rotate", KeyBody(new_), &old_), 404,
       "unknown_url"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const KeyAdminResponse r = f.admin.Handle(c.request);
    EXPECT_EQ(r.status, c.status) << r.body;
    EXPECT_EQ(ErrorCode(r), c.code) << r.body;
    EXPECT_EQ(f.keyring.size(), 1u);
    EXPECT_EQ(*f.keyring.primary(), old_);
    EXPECT_EQ(f.changes, 0);
    EXPECT_EQ(r.body.find(new_.ToBase64()), std::string::npos);  // errors never echo a key
  }
  const KeyAdminResponse primary =
      f.admin.Handle(AdminRequest("POST", "/admin/keys/remove", KeyBody(old_), &old_));
  EXPECT_NE(Body(primary)["error"]["message"].get<std::string>().find("primary"),
            std::string::npos);
}

TEST_F(KeyAdminTest, AllowRemoteStillNeedsTheToken) {
  Fixture f(old_, "", /*allow_remote=*/true);
  EXPECT_EQ(f.admin.Handle(AdminRequest("GET", "/admin/keys", "", nullptr, "10.1.2.3:1")).status,
            403);
  EXPECT_EQ(f.admin.Handle(AdminRequest("GET", "/admin/keys", "", &old_, "10.1.2.3:1")).status,
            200);
}

TEST_F(KeyAdminTest, RepeatedRequestsAreIdempotent) {
  Fixture f(old_);
  ASSERT_EQ(f.Do("POST", "/admin/keys/install", KeyBody(new_), &old_).status, 200);
  KeyAdminResponse again = f.Do("POST", "/admin/keys/install", KeyBody(new_), &old_);
  EXPECT_EQ(again.status, 200);
  EXPECT_FALSE(Body(again)["changed"].get<bool>());
  again = f.Do("POST", "/admin/keys/use", KeyBody(old_), &old_);
  EXPECT_EQ(again.status, 200);
  EXPECT_FALSE(Body(again)["changed"].get<bool>());
  EXPECT_EQ(f.changes, 1);
}

TEST_F(KeyAdminTest, KeyringFullIsRefused) {
  Fixture f(old_);
  for (size_t i = 1; i < Keyring::kMaxKeys; ++i) {
    const ClusterKey k = Key(static_cast<uint8_t>(100 + i));
    ASSERT_EQ(f.Do("POST", "/admin/keys/install", KeyBody(k), &old_).status, 200);
  }
  const KeyAdminResponse r = f.Do("POST", "/admin/keys/install", KeyBody(new_), &old_);
  EXPECT_EQ(r.status, 409);
  EXPECT_EQ(ErrorCode(r), "keyring_full");
  EXPECT_FALSE(f.keyring.Contains(new_));
}

TEST_F(KeyAdminTest, ChangesArePersistedAndReloadAsTheyWere) {
  ScratchDir dir;
  const std::string file = dir.File("keyring");
  ASSERT_TRUE(WriteKeyringFile(file, Keyring(old_)).ok());
  Fixture f(old_, file);
  ASSERT_EQ(f.Do("POST", "/admin/keys/install", KeyBody(new_), &old_).status, 200);
  ASSERT_EQ(f.Do("POST", "/admin/keys/use", KeyBody(new_), &old_).status, 200);
  Result<Keyring> reread = ReadKeyFile(file);
  ASSERT_TRUE(reread.ok()) << reread.status().ToString();
  EXPECT_EQ(*reread->primary(), new_);
  EXPECT_TRUE(reread->Contains(old_));
  ASSERT_EQ(f.Do("POST", "/admin/keys/remove", KeyBody(old_), &new_).status, 200);
  reread = ReadKeyFile(file);
  ASSERT_TRUE(reread.ok());
  EXPECT_EQ(reread->size(), 1u);
  EXPECT_EQ(*reread->primary(), new_);
  EXPECT_TRUE(Body(f.Do("GET", "/admin/keys", "", &new_))["persisted"].get<bool>());
}

TEST_F(KeyAdminTest, FailedPersistChangesNothing) {
  Fixture f(old_, "/nonexistent-dir-for-key-admin-test/keyring");
  const KeyAdminResponse r = f.Do("POST", "/admin/keys/install", KeyBody(new_), &old_);
  EXPECT_EQ(r.status, 500) << r.body;
  EXPECT_EQ(ErrorCode(r), "keyring_not_persisted");
  EXPECT_FALSE(f.keyring.Contains(new_));
  EXPECT_FALSE(f.Accepts(new_));
  EXPECT_EQ(f.changes, 0);
}

TEST_F(KeyAdminTest, InsecureNodeAnswersConflict) {
  const KeyAdminResponse r = KeyAdmin::InsecureNode();
  EXPECT_EQ(r.status, 409);
  EXPECT_EQ(ErrorCode(r), "insecure_node");
}

TEST(PeerAuthenticatorTest, InsecureIgnoresUpdates) {
  ASSERT_GE(sodium_init(), 0);
  PeerAuthenticator a = PeerAuthenticator::Insecure();
  a.Update(Keyring(Key(1)));
  EXPECT_EQ(a.Verify("anything", kHop, kNow), PeerAuthenticator::Verdict::kOk);
  EXPECT_EQ(a.Sign(kHop, kNow), "");
}

}  // namespace
}  // namespace hearsay::net
