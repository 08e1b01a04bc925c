// TLS on real nodes (docs/security.md#tls): the client API over HTTPS (curl with the cluster CA),
// the certificate reloaded on SIGHUP for new connections while an open one carries on, and
// mutual TLS between nodes: forwards flow, and a peer request with a certificate of another CA,
// an expired one, one that names another node than its sender, or one of a node that is not a
// member is refused.
#include <gtest/gtest.h>
#include <signal.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <fstream>
#include <future>
#include <regex>
#include <sstream>
#include <thread>

#include "hearsay/gossip/keyring.h"
#include "hearsay/http/certificates.h"
#include "hearsay/http/client.h"
#include "hearsay/http/peer_headers.h"
#include "hearsay/http/sync_call.h"
#include "hearsay/launch/temp_dir.h"
#include "hearsay/net/peer_auth.h"
#include "integration_env.h"
#include "run_tool.h"
#include "tls_cluster.h"

namespace hearsay::integration {
namespace {

constexpr int64_t kDay = 86400;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class TlsNodeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = launch::TempDir::Create("hearsay-tls-");
    ASSERT_TRUE(dir.ok());
    dir_ = std::move(dir).value();
  }
  std::string Path(const std::string& name) const { return dir_->File(name); }

  // A client context that trusts the cluster CA and shows `own` (PEM) as its certificate.
  std::shared_ptr<http::TlsContext> PeerTls(const http::PemPair& own) {
    const std::string stem = Path("peer-" + std::to_string(files_++));
    std::ofstream(stem + ".crt") << own.cert;
    std::ofstream(stem + ".key") << own.key;
    auto tls = http::TlsContext::Load({stem + ".crt", stem + ".key", Path("ca.crt")},
                                      http::TlsRole::kClient);
    EXPECT_TRUE(tls.ok()) << tls.status().ToString();
    return tls.ok() ? *tls : nullptr;
  }
  http::PemPair FilePair(const std::string& stem) const {
    return {ReadAll(Path(stem + ".crt")), ReadAll(Path(stem + ".key"))};
  }
  // A node certificate made by `ca` (not through the CLI: validity back-dated for a test).
  http::PemPair Issue(const http::PemPair& ca, const std::string& id, http::Validity v) {
    http::NodeCertificateRequest req;
    req.node_id = id;
    req.ip_addresses = {"127.0.0.1"};
    req.validity = v;
    Result<http::PemPair> pair = http::IssueNodeCertificate(ca, req);
    EXPECT_TRUE(pair.ok()) << pair.status().ToString();
    return pair.ok() ? *pair : http::PemPair{};
  }

  // A forwarded completion to node `to` as a peer would send it: the hop marker, `origin` and a
  // valid peer authenticator made with the cluster key; over TLS with `tls`.
  Result<http::SyncResponse> SendAsPeer(const LocalCluster& cluster, size_t to,
                                        std::shared_ptr<http::TlsContext> tls,
                                        const std::string& origin) {
    http::ClientRequest r;
    r.method = "POST";
    r.host_port = cluster.node(to).http_address;
    r.target = "/v1/completions";
    r.body = CompletionBody(Words("peer" + std::to_string(files_), 24), 4);
    const std::string keys = ReadAll(cluster.key_file());
    Result<gossip::ClusterKey> key = gossip::ClusterKey::Parse(keys.substr(0, keys.find('\n')));
    if (!key.ok()) return key.status();
    const std::string auth = net::SignPeerRequest(
        *key, {r.method, r.target, r.body, origin, cluster.node(to).node_id}, net::UnixMillisNow());
    r.headers = {{"Content-Type", "application/json"},
                 {std::string(http::kHopHeader), "1"},
                 {std::string(http::kOriginHeader), origin},
                 {std::string(http::kPeerAuthHeader), auth}};
    r.connect_timeout = r.response_timeout = r.idle_timeout = kCallTimeout;
    return http::CallSync(std::move(r), std::move(tls));
  }

  double Metric(const LocalCluster& cluster, size_t i, const std::string& name,
                const testkit::MetricLabels& labels = {}) {
    Result<http::SyncResponse> r = http::GetSync(cluster.node(i).http_address, "/metrics",
                                                 kCallTimeout, TrustingClient(dir_->path()));
    if (!r.ok() || r->status != 200) {
      ADD_FAILURE() << "GET /metrics: "
                    << (r.ok() ? std::to_string(r->status) : r.status().ToString());
      return -1;
    }
    auto samples = testkit::ParsePrometheusText(r->body);
    if (!samples.ok()) return -1;
    return testkit::SumMetric(*samples, name, labels);
  }

  std::unique_ptr<launch::TempDir> dir_;
  int files_ = 0;
};

TEST_F(TlsNodeTest, CurlReachesTheApiOverHttpsWithTheClusterCa) {
  const std::string curl = FindInPath("curl");
  ASSERT_FALSE(curl.empty()) << "curl is required for this test";
  ASSERT_TRUE(MakeClusterPki(dir_->path(), 1));
  std::unique_ptr<LocalCluster> cluster = StartCluster(TlsClusterOptions(1, dir_->path(), false));
  ASSERT_NE(cluster, nullptr);
  const std::string url = cluster->node(0).http_url() + "/v1/completions";
  ASSERT_EQ(url.substr(0, 8), "https://");
  const std::string body = CompletionBody(Words("curl", 20), 4);
  const std::vector<std::string> post = {
      "-sS", "--max-time", "20", "-H", "Content-Type: application/json", "-d", body, url};

  std::vector<std::string> trusting = {curl, "--fail-with-body", "--cacert", Path("ca.crt")};
  trusting.insert(trusting.end(), post.begin(), post.end());
  EXPECT_EQ(RunToEnd(trusting, Path("curl-ca.log"), 30s), 0) << ReadAll(Path("curl-ca.log"));
  const std::string answer = ReadAll(Path("curl-ca.log"));
  EXPECT_NE(answer.find("\"choices\""), std::string::npos) << answer;

  // Without the CA curl cannot authenticate the node: exit 60.
  std::vector<std::string> untrusting = {curl};
  untrusting.insert(untrusting.end(), post.begin(), post.end());
  EXPECT_EQ(RunToEnd(untrusting, Path("curl-no-ca.log"), 30s), 60)
      << ReadAll(Path("curl-no-ca.log"));
  // Plain HTTP to the TLS port gets no answer.
  EXPECT_NE(RunToEnd({curl, "-sS", "--max-time", "10",
                      "http://" + cluster->node(0).http_address + "/health"},
                     Path("curl-plain.log"), 30s),
            0);
  EXPECT_GE(Metric(*cluster, 0, "hearsay_tls_handshake_failures_total", {{"reason", "error"}}), 1);
}

// The CLIs reach a TLS node: `hearsay status` on its admin listener (--admin-http, HTTPS with
// the API's certificate) with the cluster CA, and `hearsay bench` on its API. The launcher itself
// finds /cluster on the admin listener.
TEST_F(TlsNodeTest, TheClisReachATlsNodeAndItsAdminListenerWithTheClusterCa) {
  ASSERT_TRUE(MakeClusterPki(dir_->path(), 1));
  ASSERT_EQ(
      RunToEnd({HEARSAY_BINARY, "apikey", "create", "--tenant", "acme", "--file", Path("api.keys")},
               Path("apikey.log"), 30s),
      0);
  std::smatch key;
  const std::string apikey_log = ReadAll(Path("apikey.log"));
  ASSERT_TRUE(std::regex_search(apikey_log, key, std::regex("hsk_[0-9a-f]{12}_[0-9a-f]{64}")))
      << apikey_log;
  LocalClusterOptions o = TlsClusterOptions(1, dir_->path(), false);
  o.extra_flags = {"--api-keys-file", Path("api.keys")};
  o.admin_listener = true;
  std::unique_ptr<LocalCluster> cluster = StartCluster(o);
  ASSERT_NE(cluster, nullptr);
  const std::string admin = cluster->admin_address(0);
  ASSERT_FALSE(admin.empty());
  EXPECT_EQ(cluster->status_address(0), admin);
  // The launcher's faults go to the admin listener (POST /debug/faults is not on the API port).
  Status faults = cluster->SlowEngine(0, 1.0);
  EXPECT_TRUE(faults.ok()) << faults.ToString();
  // The API port serves no /status; the admin port does.
  Result<http::SyncResponse> r = http::GetSync(cluster->node(0).http_address, "/status",
                                               kCallTimeout, TrustingClient(dir_->path()));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 404);

  const std::string url = "https://" + admin;
  EXPECT_EQ(
      RunToEnd({HEARSAY_BINARY, "status", "--node", url, "--tls-ca", Path("ca.crt"), "--json"},
               Path("status.log"), 30s),
      0)
      << ReadAll(Path("status.log"));
  EXPECT_NE(ReadAll(Path("status.log")).find("\"node\": \"node-0\""), std::string::npos)
      << ReadAll(Path("status.log"));
  // Without the CA the node's certificate does not verify; --tls-insecure skips the check.
  EXPECT_EQ(
      RunToEnd({HEARSAY_BINARY, "status", "--node", url, "--json"}, Path("status-no-ca.log"), 30s),
      1)
      << ReadAll(Path("status-no-ca.log"));
  EXPECT_EQ(RunToEnd({HEARSAY_BINARY, "status", "--node", url, "--tls-insecure", "--json"},
                     Path("status-insecure.log"), 30s),
            0)
      << ReadAll(Path("status-insecure.log"));
  // `hearsay keys` reaches /admin/keys there too (loopback, signed with the cluster key).
  EXPECT_EQ(RunToEnd({HEARSAY_BINARY, "keys", "list", "--node", url, "--tls-ca", Path("ca.crt"),
                      "--auth-key-file", cluster->key_file()},
                     Path("keys.log"), 30s),
            0)
      << ReadAll(Path("keys.log"));
  EXPECT_NE(ReadAll(Path("keys.log")).find("primary"), std::string::npos);
  // A plain URL to the TLS port fails; TLS flags with a plain URL are bad usage.
  EXPECT_EQ(
      RunToEnd({HEARSAY_BINARY, "status", "--node", "http://" + admin, "--tls-ca", Path("ca.crt")},
               Path("status-usage.log"), 30s),
      2);

  // `hearsay bench` over HTTPS: with the tenant's key every request is served; without it none
  // is (401), and bench exits 3.
  const std::vector<std::string> bench = {
      HEARSAY_BINARY, "bench",        "--target",   cluster->node(0).http_url(),
      "--tls-ca",     Path("ca.crt"), "--requests", "4",
      "--rate",       "20",           "--json"};
  std::vector<std::string> with_key = bench;
  with_key.insert(with_key.end(), {"--api-key", key.str()});
  EXPECT_EQ(RunToEnd(with_key, Path("bench.log"), 60s), 0) << ReadAll(Path("bench.log"));
  EXPECT_EQ(RunToEnd(bench, Path("bench-no-key.log"), 60s), 3) << ReadAll(Path("bench-no-key.log"));
}

TEST_F(TlsNodeTest, SighupReloadsTheCertificateForNewConnectionsWhileAnOpenOneCarriesOn) {
  ASSERT_TRUE(MakeClusterPki(dir_->path(), 1));
  ASSERT_EQ(RunToEnd({HEARSAY_BINARY, "ca", "issue", "--dir", dir_->path(), "--node-id", "renewed",
                      "--ip", "127.0.0.1"},
                     Path("issue.log"), 30s),
            0);
  std::unique_ptr<LocalCluster> cluster = StartCluster(TlsClusterOptions(1, dir_->path(), false));
  ASSERT_NE(cluster, nullptr);
  const std::string address = cluster->node(0).http_address;
  auto trusting = TrustingClient(dir_->path());

  // One keep-alive connection, opened before the reload and kept in the client's pool.
  boost::asio::io_context io;
  auto work = boost::asio::make_work_guard(io);
  std::thread runner([&io] { io.run(); });
  auto client = std::make_unique<http::Client>(io, http::ClientOptions{.tls = trusting});
  auto get = [&](const std::string& peer_id) {
    http::ClientRequest r;
    r.host_port = address;
    r.target = "/health";
    r.tls_peer_id = peer_id;
    auto status = std::make_shared<std::promise<Status>>();
    http::ResponseHandlers h;
    h.on_done = [status](Status s) { status->set_value(std::move(s)); };
    client->Send(std::move(r), std::move(h));
    auto f = status->get_future();
    return f.wait_for(20s) == std::future_status::ready ? f.get()
                                                        : DeadlineExceededError("no answer");
  };
  ASSERT_TRUE(get("node-0").ok());
  ASSERT_EQ(client->stats().idle_connections, 1u);

  // The renewed certificate (it names "renewed", so a client can tell which one it got).
  namespace fs = std::filesystem;
  fs::copy_file(Path("renewed.crt"), Path("node-0.crt"), fs::copy_options::overwrite_existing);
  fs::copy_file(Path("renewed.key"), Path("node-0.key"), fs::copy_options::overwrite_existing);
  ASSERT_TRUE(cluster->Signal(0, SIGHUP).ok());
  auto fresh = [&](const std::string& peer_id) {
    http::ClientRequest r;
    r.host_port = address;
    r.target = "/health";
    r.tls_peer_id = peer_id;
    r.connect_timeout = r.response_timeout = r.idle_timeout = kCallTimeout;
    return http::CallSync(std::move(r), trusting);
  };
  EXPECT_TRUE(testutil::Eventually([&] { return fresh("renewed").ok(); })) << cluster->LogTail(0);
  EXPECT_FALSE(fresh("node-0").ok());

  // The connection opened before the reload still works, on its old certificate.
  EXPECT_TRUE(get("node-0").ok());
  EXPECT_EQ(client->stats().connections_reused, 1u);
  EXPECT_EQ(client->stats().connections_opened, 1u);
  client.reset();
  work.reset();
  io.stop();
  runner.join();
}

class MutualTlsTest : public TlsNodeTest {
 protected:
  void SetUp() override {
    TlsNodeTest::SetUp();
    ASSERT_TRUE(MakeClusterPki(dir_->path(), 3));
    cluster_ = StartCluster(TlsClusterOptions(3, dir_->path(), true, "round-robin"));
    ASSERT_NE(cluster_, nullptr);
    ca_ = FilePair("ca");
  }
  std::unique_ptr<LocalCluster> cluster_;
  http::PemPair ca_;
};

TEST_F(MutualTlsTest, ForwardsFlowBetweenNodesOverMutualTls) {
  auto trusting = TrustingClient(dir_->path());
  for (int i = 0; i < 6; ++i) {
    http::ClientRequest r;
    r.method = "POST";
    r.host_port = cluster_->node(0).http_address;
    r.target = "/v1/completions";
    r.body = CompletionBody(Words("fwd" + std::to_string(i), 24), 4);
    r.headers = {{"Content-Type", "application/json"}};
    r.connect_timeout = r.response_timeout = r.idle_timeout = kCallTimeout;
    Result<http::SyncResponse> answer = http::CallSync(std::move(r), trusting);
    ASSERT_TRUE(answer.ok()) << answer.status().ToString();
    EXPECT_EQ(answer->status, 200) << answer->body;
  }
  // Round robin over three members: the peers served some of them, over mutual TLS.
  EXPECT_GE(Metric(*cluster_, 1, kPeerServedMetric) + Metric(*cluster_, 2, kPeerServedMetric), 2)
      << cluster_->AllLogTails(20);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(Metric(*cluster_, i, "hearsay_peer_certificate_refusals_total"), 0);
  }
}

TEST_F(MutualTlsTest, APeerRequestWithTheSendersOwnCertificateIsServed) {
  Result<http::SyncResponse> r = SendAsPeer(*cluster_, 0, PeerTls(FilePair("node-1")), "node-1");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200) << r->body;
}

TEST_F(MutualTlsTest, ACertificateOfAnotherCaIsRefused) {
  Result<http::PemPair> other = http::MakeCertificateAuthority("another CA", {0, 30 * kDay});
  ASSERT_TRUE(other.ok());
  Result<http::SyncResponse> r =
      SendAsPeer(*cluster_, 0, PeerTls(Issue(*other, "node-1", {0, 30 * kDay})), "node-1");
  EXPECT_FALSE(r.ok()) << "served with a certificate of another CA: HTTP " << r->status;
  EXPECT_GE(Metric(*cluster_, 0, "hearsay_tls_handshake_failures_total", {{"reason", "error"}}), 1);
}

TEST_F(MutualTlsTest, AnExpiredCertificateIsRefused) {
  Result<http::SyncResponse> r =
      SendAsPeer(*cluster_, 0, PeerTls(Issue(ca_, "node-1", {-3 * kDay, kDay})), "node-1");
  EXPECT_FALSE(r.ok()) << "served with an expired certificate: HTTP " << r->status;
  EXPECT_GE(Metric(*cluster_, 0, "hearsay_tls_handshake_failures_total", {{"reason", "error"}}), 1);
}

TEST_F(MutualTlsTest, ACertificateThatNamesAnotherNodeThanTheSenderIsRefused) {
  // node-2's own, valid certificate, sent as node-1.
  Result<http::SyncResponse> r = SendAsPeer(*cluster_, 0, PeerTls(FilePair("node-2")), "node-1");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 403) << r->body;
  EXPECT_NE(r->body.find("names another node"), std::string::npos) << r->body;
  // No certificate at all, with a valid authenticator.
  r = SendAsPeer(*cluster_, 0, TrustingClient(dir_->path()), "node-1");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 403) << r->body;
  EXPECT_EQ(Metric(*cluster_, 0, "hearsay_peer_certificate_refusals_total"), 2);
}

TEST_F(MutualTlsTest, ACertificateOfANodeThatIsNotAMemberIsRefused) {
  Result<http::SyncResponse> r =
      SendAsPeer(*cluster_, 0, PeerTls(Issue(ca_, "node-9", {0, 30 * kDay})), "node-9");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 403) << r->body;
  EXPECT_NE(r->body.find("not a live member"), std::string::npos) << r->body;
}

// Signed gossip state under mutual TLS: each node binds the others' signing keys as they state
// them over a connection their certificates authenticate, never as gossip announces them.
TEST_F(MutualTlsTest, GossipSigningKeysAreBoundToTheNodeCertificates) {
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(testutil::Eventually(
        [&] { return Metric(*cluster_, i, "hearsay_gossip_signing_keys_confirmed_total") >= 2; },
        30s))
        << i << "\n"
        << cluster_->AllLogTails(20);
    EXPECT_EQ(Metric(*cluster_, i, "hearsay_gossip_signing_key_conflicts_total"), 0) << i;
    EXPECT_EQ(Metric(*cluster_, i, "hearsay_gossip_state_dropped_total", {{"reason", "forged"}}), 0)
        << i;
  }
}

// A node whose certificate names another node (node-2 started with node-1's certificate) cannot
// prove a signing key for its own id: its peers never bind one, so they never take its signed
// "alive" and it never becomes their member (the cluster never forms), while it learns theirs.
TEST_F(TlsNodeTest, ASigningKeyNotBackedByTheMembersCertificateIsNotBound) {
  ASSERT_TRUE(MakeClusterPki(dir_->path(), 3));
  LocalClusterOptions o = TlsClusterOptions(3, dir_->path(), true, "round-robin");
  o.per_node_flags[2] = {"--tls-cert", Path("node-1.crt"), "--tls-key", Path("node-1.key")};
  o.ready_timeout = 15s;  // a join under mutual TLS takes about a second here
  const Result<std::unique_ptr<LocalCluster>> cluster = LocalCluster::Start(o);
  ASSERT_FALSE(cluster.ok());
  const std::string& why = cluster.status().message();
  EXPECT_NE(why.find("does not list node-2"), std::string::npos) << why;
  // node-2 itself saw the others (it binds their keys: their certificates are theirs).
  EXPECT_NE(why.find("node=node-2 peer=node-0 state=alive"), std::string::npos) << why;
}

}  // namespace
}  // namespace hearsay::integration
