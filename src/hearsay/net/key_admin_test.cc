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

http::Request AdminRequest(std::string method, std::string path, std::string body,
                           const ClusterKey* auth, std::string remote = "127.0.0.1:50000") {
  http::Request r;
  r.method = std::move(method);
  r.path = path;
  r.target = std::move(path);
  r.body = std::move(body);
  r.remote = std::move(remote);
  if (auth != nullptr) r.headers.emplace_back(std::string(kAdminTokenHeader), AdminToken(*auth));
  return r;
}

std::string KeyBody(const ClusterKey& k) { return json{{"key", k.ToBase64()}}.dump(); }

json Body(const KeyAdminResponse& r) { return json::parse(r.body, nullptr, false); }

std::string ErrorCode(const KeyAdminResponse& r) {
  const json j = Body(r);
  return j.contains("error") && j["error"]["code"].is_string()
             ? j["error"]["code"].get<std::string>()
             : "";
}

// One node's key state as the daemon wires it: the live keyring, the peer authenticator and the
// token its peer client sends, all updated through on_change.
struct Fixture {
  explicit Fixture(const ClusterKey& first, std::string keyring_file = "",
                   bool allow_remote = false)
      : keyring(first),
        auth(keyring),
        admin(keyring, KeyAdminOptions{std::move(keyring_file), allow_remote, "n1"},
              [this](const Keyring& k) {
                auth.Update(k);
                sent_token = auth.token();
                ++changes;
              }) {
    sent_token = auth.token();
  }
  KeyAdminResponse Do(std::string method, std::string path, std::string body,
                      const ClusterKey* auth_key) {
    return admin.Handle(
        AdminRequest(std::move(method), std::move(path), std::move(body), auth_key));
  }
  Keyring keyring;
  PeerAuthenticator auth;
  std::string sent_token;
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

TEST_F(KeyAdminTest, AdminTokenDiffersFromPeerTokenAndBetweenKeys) {
  EXPECT_NE(AdminToken(old_), PeerAuthToken(old_));
  EXPECT_NE(AdminToken(old_), AdminToken(new_));
  EXPECT_EQ(AdminToken(old_).size(), 64u);
}

TEST_F(KeyAdminTest, FullRotationUpdatesKeyringAuthAndSentToken) {
  Fixture f(old_);
  const std::string old_peer = PeerAuthToken(old_);
  const std::string new_peer = PeerAuthToken(new_);

  KeyAdminResponse r = f.Do("POST", "/admin/keys/install", KeyBody(new_), &old_);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(Body(r)["changed"].get<bool>());
  EXPECT_EQ(Body(r)["key_id"], new_.IdHex());
  EXPECT_TRUE(f.keyring.Contains(new_));
  EXPECT_EQ(*f.keyring.primary(), old_);
  EXPECT_TRUE(f.auth.Check(old_peer));
  EXPECT_TRUE(f.auth.Check(new_peer));  // accepted before any node sends it
  EXPECT_EQ(f.sent_token, old_peer);

  // Use by id, as `hearsay keys use --id` does.
  r = f.Do("POST", "/admin/keys/use", json{{"id", new_.IdHex()}}.dump(), &old_);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(*f.keyring.primary(), new_);
  EXPECT_EQ(f.sent_token, new_peer);
  EXPECT_EQ(Body(r)["primary"], new_.IdHex());
  EXPECT_TRUE(f.auth.Check(old_peer));  // a node that has not switched yet still gets in

  r = f.Do("POST", "/admin/keys/remove", KeyBody(old_), &new_);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_FALSE(f.keyring.Contains(old_));
  EXPECT_EQ(f.keyring.size(), 1u);
  EXPECT_FALSE(f.auth.Check(old_peer));
  EXPECT_TRUE(f.auth.Check(new_peer));
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
    EXPECT_EQ(r.body.find(AdminToken(k)), std::string::npos);
    EXPECT_EQ(r.body.find(PeerAuthToken(k)), std::string::npos);
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
      {"the peer token instead of the admin token",
       [&] {
         http::Request r = AdminRequest("POST", "/admin/keys/install", KeyBody(new_), nullptr);
         r.headers.emplace_back(std::string(kAdminTokenHeader), PeerAuthToken(old_));
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
  EXPECT_FALSE(f.auth.Check(PeerAuthToken(new_)));
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
  EXPECT_TRUE(a.Check("anything"));
  EXPECT_EQ(a.token(), "");
}

}  // namespace
}  // namespace hearsay::net
