// Key rotation on a running 3-node cluster, without a restart (docs/operations.md, "Key
// rotation"): `hearsay keys install` the new key on every node, then `use` it on every node, then
// `remove` the old one on every node. Throughout, every node keeps every other alive, no gossip
// message is dropped as unauthenticated, no peer authenticator is refused, and a shared prefix at
// the other nodes is still forwarded to its holder. Afterwards the keyring files bring a restarted
// node back with the new key (and the block-key secret file with the same block keys), and a node
// that holds only the old key cannot join or forward.
#include <gtest/gtest.h>
#include <sodium.h>

#include <algorithm>
#include <fstream>

#include "hearsay/gossip/keyring.h"
#include "hearsay/launch/child_process.h"
#include "hearsay/launch/temp_dir.h"
#include "hearsay/net/key_admin.h"
#include "hearsay/net/peer_auth.h"
#include "integration_env.h"

namespace hearsay::integration {
namespace {

// The metrics the rotation must leave untouched (docs/operations.md, "Metrics").
constexpr const char* kDroppedMetric = "hearsay_gossip_dropped_total";
constexpr const char* kPeerAuthFailuresMetric = "hearsay_peer_auth_failures_total";

double MetricOf(const std::string& address, const char* name, testkit::MetricLabels labels = {}) {
  auto metrics = Metrics(address);
  EXPECT_TRUE(metrics.ok()) << metrics.status().ToString();
  return metrics.ok() ? testkit::SumMetric(*metrics, name, labels) : -1;
}

std::string NewKeyFile(const launch::TempDir& dir, const std::string& name) {
  std::array<uint8_t, gossip::kClusterKeyBytes> bytes{};
  randombytes_buf(bytes.data(), bytes.size());
  const std::string path = dir.File(name);
  std::ofstream(path) << gossip::ClusterKey::FromBytes(bytes).value().ToBase64() << "\n";
  return path;
}

std::string KeyLine(const std::string& key_file) {
  std::ifstream in(key_file);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string KeyIdOf(const std::string& key_file) {
  std::ifstream in(key_file);
  std::string line;
  std::getline(in, line);
  return gossip::ClusterKey::Parse(line).value().IdHex();
}

// Runs `hearsay keys <args>` against node `i`; returns its exit code, and its output in `out`.
int RunKeys(const LocalCluster& cluster, size_t i, const launch::TempDir& dir,
            std::vector<std::string> args, std::string* out = nullptr) {
  static int run = 0;
  const std::string log = dir.File("keys-" + std::to_string(++run) + ".log");
  std::vector<std::string> argv = {HEARSAY_BINARY, "keys"};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.push_back("--node");
  argv.push_back(cluster.node(i).http_url());
  auto child = launch::ChildProcess::Spawn(argv, log);
  if (!child.ok()) {
    ADD_FAILURE() << child.status().ToString();
    return -1;
  }
  const Status waited = (*child)->Wait(20s);
  EXPECT_TRUE(waited.ok()) << waited.ToString();
  if (out != nullptr) *out = launch::TailFile(log, 50);
  return (*child)->exit_code().value_or(-1);
}

class KeyRotationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_GE(sodium_init(), 0);
    auto dir = launch::TempDir::Create("hearsay-keyrot-");
    ASSERT_TRUE(dir.ok()) << dir.status().ToString();
    dir_ = std::move(dir).value();
    LocalClusterOptions o = HolderRoutingOptions(3);
    // One block-key secret for all nodes: block keys then survive the rotation and a restart.
    const std::string block_key_secret = NewKeyFile(*dir_, "block-key-secret");
    for (size_t i = 0; i < 3; ++i) {
      o.per_node_flags.push_back({"--keyring-file", dir_->File("keyring-" + std::to_string(i)),
                                  "--block-key-secret-file", block_key_secret});
    }
    cluster_ = StartCluster(o);
    ASSERT_NE(cluster_, nullptr);
  }

  // Every node lists every node alive, nothing was dropped as unauthenticated, no peer request was
  // refused, and the shared prefix entering at each non-holder is forwarded to the holder.
  void CheckClusterWorks(const std::string& step, const std::vector<size_t>& skip_forwarding = {}) {
    SCOPED_TRACE("after step: " + step);
    const Status views = cluster_->WaitForViews({}, 10s);
    EXPECT_TRUE(views.ok()) << views.ToString() << "\n" << cluster_->AllLogTails();
    for (size_t i = 0; i < cluster_->size(); ++i) {
      const std::string& a = cluster_->node(i).http_address;
      EXPECT_EQ(MetricOf(a, kDroppedMetric, {{"reason", "envelope"}}), 0) << a;
      EXPECT_EQ(MetricOf(a, kPeerAuthFailuresMetric), 0) << a;
      EXPECT_EQ(MetricOf(a, "hearsay_peers", {{"state", "alive"}}), 2) << a;
    }
    for (size_t e = 0; e < cluster_->size(); ++e) {
      if (e == holder_ ||
          std::find(skip_forwarding.begin(), skip_forwarding.end(), e) != skip_forwarding.end()) {
        continue;
      }
      const std::string& entry = cluster_->node(e).http_address;
      const double forwarded = MetricOf(entry, kRequestsMetric, {{"decision", "forwarded"}});
      Result<HttpResponse> r =
          PostCompletion(entry, CompletionBody(prefix_ + " " + step + " from " + entry, 4));
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      ASSERT_EQ(r->status, 200) << r->body;
      EXPECT_GE(CachedTokens(BodyJson(*r)), (kPrefixWords / kBlockTokens - 1) * kBlockTokens)
          << r->body;
      EXPECT_EQ(MetricOf(entry, kRequestsMetric, {{"decision", "forwarded"}}), forwarded + 1)
          << entry;
    }
  }

  // The policy prices a forward by the measured delay: waits until entry `e` has one to the
  // holder.
  void WaitForRttToHolder(size_t e) {
    const bool measured = testutil::Eventually([&] {
      Result<launch::ClusterView> view = cluster_->View(e);
      const launch::MemberInfo* m =
          view.ok() ? view->Find(cluster_->node(holder_).node_id) : nullptr;
      return m != nullptr && m->rtt_ms.has_value();
    });
    ASSERT_TRUE(measured) << cluster_->node(e).node_id << " never measured its RTT to the holder";
  }

  static constexpr int kPrefixWords = 640;
  std::unique_ptr<launch::TempDir> dir_;
  std::unique_ptr<LocalCluster> cluster_;
  const std::string prefix_ = Words("keyrot", kPrefixWords);
  size_t holder_ = 0;
};

TEST_F(KeyRotationTest, InstallUseRemoveOnRunningCluster) {
  const std::string old_key = cluster_->key_file();
  const std::string new_key = NewKeyFile(*dir_, "new.key");
  const std::string old_id = KeyIdOf(old_key);
  const std::string new_id = KeyIdOf(new_key);

  // Plant the shared prefix on one node and wait until every node knows who holds it.
  Result<HttpResponse> first =
      PostCompletion(cluster_->node(0).http_address, CompletionBody(prefix_ + " plant", 4));
  ASSERT_TRUE(first.ok() && first->status == 200);
  Result<size_t> holder = WaitForSoleHolder(*cluster_, 15s);
  ASSERT_TRUE(holder.ok()) << holder.status().ToString();
  holder_ = *holder;
  for (size_t e = 0; e < cluster_->size(); ++e) {
    if (e == holder_) continue;
    ASSERT_NO_FATAL_FAILURE(WaitForRttToHolder(e));
  }
  CheckClusterWorks("start");

  for (size_t i = 0; i < 3; ++i) {
    ASSERT_EQ(RunKeys(*cluster_, i, *dir_,
                      {"install", "--auth-key-file", old_key, "--key-file", new_key}),
              0);
  }
  CheckClusterWorks("install");
  for (size_t i = 0; i < 3; ++i) {
    ASSERT_EQ(RunKeys(*cluster_, i, *dir_, {"use", "--auth-key-file", old_key, "--id", new_id}), 0);
  }
  CheckClusterWorks("use");
  // The old key is primary nowhere now; removing the primary (the new key) is refused.
  std::string out;
  EXPECT_EQ(RunKeys(*cluster_, 0, *dir_,
                    {"remove", "--auth-key-file", old_key, "--key-file", new_key}, &out),
            1);
  EXPECT_NE(out.find("primary"), std::string::npos) << out;
  for (size_t i = 0; i < 3; ++i) {
    ASSERT_EQ(
        RunKeys(*cluster_, i, *dir_, {"remove", "--auth-key-file", new_key, "--key-file", old_key}),
        0);
  }
  CheckClusterWorks("remove");
  for (size_t i = 0; i < 3; ++i) {
    ASSERT_EQ(RunKeys(*cluster_, i, *dir_, {"list", "--auth-key-file", new_key, "--json"}, &out),
              0);
    const size_t brace = out.find('{');
    ASSERT_NE(brace, std::string::npos) << out;
    const json list = json::parse(out.substr(brace), nullptr, false);
    ASSERT_TRUE(list.is_object()) << out;
    EXPECT_EQ(list["primary"], new_id);
    EXPECT_EQ(list["keys"].size(), 1u);
    EXPECT_TRUE(list["persisted"].get<bool>());
    // The old key no longer opens the admin API.
    EXPECT_EQ(RunKeys(*cluster_, i, *dir_, {"list", "--auth-key-file", old_key}), 1);
  }

  // A restart keeps what was installed: the keyring file (new key) wins over the cluster key
  // file (still the old key), so the node rejoins. Its block keys come from the block-key secret
  // file, not the new primary key, so its prefix matches still agree with the others': the shared
  // prefix entering at the restarted node is forwarded to the holder too.
  const size_t restart = holder_ == 2 ? 1 : 2;
  ASSERT_TRUE(cluster_->Stop(restart).ok());
  const Status restarted = cluster_->Restart(restart);
  ASSERT_TRUE(restarted.ok()) << restarted.ToString() << "\n" << cluster_->AllLogTails();
  // The restarted node routes by what gossip has told it since: wait until it knows the holder's
  // cache and its delay to it (on a loaded machine that takes a few rounds).
  Result<size_t> holder_after = WaitForSoleHolder(*cluster_, 15s);
  ASSERT_TRUE(holder_after.ok() && *holder_after == holder_)
      << (holder_after.ok() ? "holder " + std::to_string(*holder_after)
                            : holder_after.status().ToString());
  ASSERT_NO_FATAL_FAILURE(WaitForRttToHolder(restart));
  CheckClusterWorks("restart");

  // A node that holds only the old key: its gossip is dropped and it never becomes a member.
  Result<std::vector<uint16_t>> ports = launch::PickFreeLoopbackPorts(2, /*udp_too=*/true);
  ASSERT_TRUE(ports.ok());
  const std::string outsider_http = "127.0.0.1:" + std::to_string((*ports)[0]);
  const std::string log = dir_->File("outsider.log");
  auto outsider = launch::ChildProcess::Spawn(
      {HEARSAY_BINARY, "node", "--http", outsider_http, "--gossip",
       "127.0.0.1:" + std::to_string((*ports)[1]), "--node-id", "outsider", "--cluster-key-file",
       old_key, "--join", cluster_->node(0).gossip_address},
      log);
  ASSERT_TRUE(outsider.ok()) << outsider.status().ToString();
  const double dropped_before =
      MetricOf(cluster_->node(0).http_address, kDroppedMetric, {{"reason", "envelope"}});
  const auto dropped_envelopes = [&] {
    return MetricOf(cluster_->node(0).http_address, kDroppedMetric, {{"reason", "envelope"}});
  };
  EXPECT_TRUE(testutil::Eventually([&] { return dropped_envelopes() > dropped_before; }, 20s))
      << launch::TailFile(log, 30);
  ASSERT_TRUE(Healthy(outsider_http)) << launch::TailFile(log, 30);
  // Several more of the outsider's gossip rounds are refused before the views are read.
  const double dropped_after_first = dropped_envelopes();
  EXPECT_TRUE(
      testutil::Eventually([&] { return dropped_envelopes() >= dropped_after_first + 2; }, 20s))
      << launch::TailFile(log, 30);
  for (size_t i = 0; i < cluster_->size(); ++i) {
    Result<launch::ClusterView> view = cluster_->View(i);
    ASSERT_TRUE(view.ok());
    EXPECT_EQ(view->Find("outsider"), nullptr) << "node-" << i << " lists the outsider";
  }
  Result<HttpResponse> outsider_view = testkit::HttpGet(outsider_http, "/cluster", kCallTimeout);
  ASSERT_TRUE(outsider_view.ok());
  const json ov = BodyJson(*outsider_view);
  for (const auto& m : ov["members"]) {
    if (m["id"] != "outsider") {
      EXPECT_NE(m["state"], "alive") << outsider_view->body;
    }
  }
  // A hop signed with the old key is refused; one signed with the new key is accepted.
  const auto hop = [&](const std::string& key_file) {
    std::ifstream in(key_file);
    std::string line;
    std::getline(in, line);
    const std::string body = CompletionBody("hop check", 2);
    const std::string token =
        net::SignPeerRequest(gossip::ClusterKey::Parse(line).value(),
                             {"POST", "/v1/completions", body, "tester", cluster_->node(0).node_id},
                             net::UnixMillisNow());
    return testkit::HttpPostJson(
        cluster_->node(0).http_address, "/v1/completions", body, kCallTimeout,
        {{"X-Hearsay-Hop", "1"}, {"X-Hearsay-Origin", "tester"}, {"X-Hearsay-Peer-Auth", token}});
  };
  Result<HttpResponse> refused = hop(old_key);
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ(refused->status, 403) << refused->body;
  Result<HttpResponse> accepted = hop(new_key);
  ASSERT_TRUE(accepted.ok());
  EXPECT_EQ(accepted->status, 200) << accepted->body;
  (*outsider)->Kill();
}

// A captured hop or admin request is good once, at the node it was made for: the same bytes
// replayed, or sent to another node, get 403 (net/peer_auth.h).
TEST(ReplayTest, CapturedPeerAndAdminRequestsCannotBeReplayed) {
  ASSERT_GE(sodium_init(), 0);
  std::unique_ptr<LocalCluster> cluster = StartCluster(ClusterOptions(2));
  ASSERT_NE(cluster, nullptr);
  const gossip::ClusterKey key = gossip::ClusterKey::Parse(KeyLine(cluster->key_file())).value();
  const std::string body = CompletionBody("a captured forward", 2);
  const std::string auth = net::SignPeerRequest(
      key, {"POST", "/v1/completions", body, "tester", cluster->node(0).node_id},
      net::UnixMillisNow());
  const testkit::HttpHeaders captured = {
      {"X-Hearsay-Hop", "1"}, {"X-Hearsay-Origin", "tester"}, {"X-Hearsay-Peer-Auth", auth}};
  auto send = [&](size_t node) {
    Result<HttpResponse> r = testkit::HttpPostJson(cluster->node(node).http_address,
                                                   "/v1/completions", body, kCallTimeout, captured);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : HttpResponse{};
  };
  EXPECT_EQ(send(0).status, 200);
  const HttpResponse replayed = send(0);
  EXPECT_EQ(replayed.status, 403);
  EXPECT_NE(replayed.body.find("replayed"), std::string::npos) << replayed.body;
  const HttpResponse elsewhere = send(1);
  EXPECT_EQ(elsewhere.status, 403);
  EXPECT_NE(elsewhere.body.find("bad_mac"), std::string::npos) << elsewhere.body;

  // An admin request, the same way.
  const std::string admin = net::SignAdminRequest(key, "GET", "/admin/keys", "",
                                                  cluster->node(0).node_id, net::UnixMillisNow());
  auto list = [&](size_t node) {
    testkit::HttpRequest request;
    request.target = "/admin/keys";
    request.headers = {{"X-Hearsay-Admin-Token", admin}};
    Result<HttpResponse> r =
        testkit::HttpCall(cluster->node(node).http_address, request, kCallTimeout);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? r->status : 0;
  };
  EXPECT_EQ(list(0), 200);
  EXPECT_EQ(list(0), 403);
  EXPECT_EQ(list(1), 403);
}

}  // namespace
}  // namespace hearsay::integration
