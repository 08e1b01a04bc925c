// TLS on the HTTP server and client (tls_context.h), and the cluster CA's certificates
// (certificates.h): real handshakes over loopback, with certificates made by the code under test.
#include <gtest/gtest.h>
#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <future>

#include "hearsay/http/certificates.h"
#include "hearsay/http/client.h"
#include "hearsay/http/server.h"
#include "hearsay/http/sync_call.h"
#include "hearsay/http/test_util.h"
#include "hearsay/http/tls_context.h"
#include "hearsay/testutil/eventually.h"

namespace hearsay::http {
namespace {

using testing::IoThread;
using testing::RawClient;
using testutil::Eventually;
using namespace std::chrono_literals;

constexpr int64_t kDay = 86400;

// A folder of PEM files, removed at the end.
class PemDir {
 public:
  PemDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "hearsay-tls-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~PemDir() { std::filesystem::remove_all(path_); }
  // Writes `text` to `name` (replacing it) and returns its path.
  std::string Write(const std::string& name, const std::string& text) const {
    const std::string p = path_ + "/" + name;
    std::ofstream(p, std::ios::trunc) << text;
    return p;
  }

 private:
  std::string path_;
};

PemPair Ca(const std::string& name = "test CA") {
  Result<PemPair> ca = MakeCertificateAuthority(name, {0, 30 * kDay});
  EXPECT_TRUE(ca.ok()) << ca.status().ToString();
  return ca.ok() ? *ca : PemPair{};
}

PemPair Node(const PemPair& ca, const std::string& id, Validity validity = {0, 30 * kDay}) {
  NodeCertificateRequest req;
  req.node_id = id;
  req.ip_addresses = {"127.0.0.1"};
  req.dns_names = {"localhost"};
  req.validity = validity;
  Result<PemPair> pair = IssueNodeCertificate(ca, req);
  EXPECT_TRUE(pair.ok()) << pair.status().ToString();
  return pair.ok() ? *pair : PemPair{};
}

TEST(CertificatesTest, ANodeCertificateNamesItsNodeAndVerifiesAgainstItsCa) {
  const PemPair ca = Ca();
  const PemPair node = Node(ca, "node-7:9000");
  Result<std::string> id = NodeIdOfPem(node.cert);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_EQ(*id, "node-7:9000");

  BIO* ca_bio = BIO_new_mem_buf(ca.cert.data(), static_cast<int>(ca.cert.size()));
  X509* ca_cert = PEM_read_bio_X509(ca_bio, nullptr, nullptr, nullptr);
  BIO* node_bio = BIO_new_mem_buf(node.cert.data(), static_cast<int>(node.cert.size()));
  X509* node_cert = PEM_read_bio_X509(node_bio, nullptr, nullptr, nullptr);
  ASSERT_NE(ca_cert, nullptr);
  ASSERT_NE(node_cert, nullptr);
  EXPECT_EQ(X509_verify(node_cert, X509_get0_pubkey(ca_cert)), 1);
  EXPECT_EQ(X509_check_ip_asc(node_cert, "127.0.0.1", 0), 1);
  EXPECT_EQ(X509_check_host(node_cert, "localhost", 0, 0, nullptr), 1);
  EXPECT_NE(X509_verify(node_cert, X509_get0_pubkey(node_cert)), 1);  // not self-signed
  X509_free(node_cert);
  X509_free(ca_cert);
  BIO_free(node_bio);
  BIO_free(ca_bio);
}

TEST(CertificatesTest, RefusesBadNamesAndAForeignCaKey) {
  const PemPair ca = Ca();
  NodeCertificateRequest req;
  for (const std::string& bad :
       std::vector<std::string>{"", "a b", "a,b", std::string(129, 'x'), "a\nb"}) {
    req.node_id = bad;
    EXPECT_EQ(IssueNodeCertificate(ca, req).status().code(), StatusCode::kInvalidArgument) << bad;
  }
  req.node_id = "n";
  req.dns_names = {"bad name"};
  EXPECT_EQ(IssueNodeCertificate(ca, req).status().code(), StatusCode::kInvalidArgument);
  req.dns_names = {};
  req.ip_addresses = {"1.2.3.4/8"};
  EXPECT_EQ(IssueNodeCertificate(ca, req).status().code(), StatusCode::kInvalidArgument);
  req.ip_addresses = {};
  const PemPair other = Ca("other");
  EXPECT_EQ(IssueNodeCertificate({ca.cert, other.key}, req).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(IssueNodeCertificate({"not pem", ca.key}, req).status().code(),
            StatusCode::kInvalidArgument);
  // A long id is whole in the URI, though the CN holds 64 characters at most.
  req.node_id = std::string(128, 'n');
  Result<PemPair> pair = IssueNodeCertificate(ca, req);
  ASSERT_TRUE(pair.ok()) << pair.status().ToString();
  EXPECT_EQ(NodeIdOfPem(pair->cert).value_or(""), req.node_id);
}

TEST(TlsContextTest, RefusesAKeyOfAnotherCertificateAndKeepsTheOldOneOnABadReload) {
  PemDir dir;
  const PemPair ca = Ca();
  const PemPair a = Node(ca, "a");
  const PemPair b = Node(ca, "b");
  EXPECT_EQ(TlsContext::Load({dir.Write("a.crt", a.cert), dir.Write("b.key", b.key), ""},
                             TlsRole::kServer)
                .status()
                .code(),
            StatusCode::kInvalidArgument);
  EXPECT_FALSE(TlsContext::Load({dir.Write("x.crt", "junk"), dir.Write("a.key", a.key), ""},
                                TlsRole::kServer)
                   .ok());
  auto tls = TlsContext::Load({dir.Write("s.crt", a.cert), dir.Write("s.key", a.key), ""},
                              TlsRole::kServer);
  ASSERT_TRUE(tls.ok()) << tls.status().ToString();
  auto before = (*tls)->Current();
  dir.Write("s.crt", "junk");
  EXPECT_FALSE((*tls)->Reload().ok());
  EXPECT_EQ((*tls)->Current(), before);
  EXPECT_EQ((*tls)->reloads(), 0u);
}

// A TLS server on loopback, and clients of it.
class TlsServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ca_ = Ca();
    ca_file_ = dir_.Write("ca.crt", ca_.cert);
    const PemPair server = Node(ca_, "node-a");
    cert_file_ = dir_.Write("server.crt", server.cert);
    key_file_ = dir_.Write("server.key", server.key);
  }
  void TearDown() override {
    clients_.clear();
    if (server_) server_->Close();
    io_.Stop();
  }

  // Starts the server; with `ca` it asks clients for certificates of that CA.
  void Start(bool mutual, Duration handshake_timeout = 10s) {
    auto tls = TlsContext::Load({cert_file_, key_file_, mutual ? ca_file_ : ""}, TlsRole::kServer);
    ASSERT_TRUE(tls.ok()) << tls.status().ToString();
    tls_ = *tls;
    ServerOptions o;
    o.listen = "127.0.0.1:0";
    o.tls = tls_;
    o.handshake_timeout = handshake_timeout;
    auto s = Server::Start(io_.io(), o, [this](Request req, std::shared_ptr<Responder> r) {
      {
        std::lock_guard lock(mu_);
        seen_peer_ids_.push_back(req.tls_peer_id);
      }
      if (req.path == "/stream") {
        r->StartStream(200, {{"Content-Type", "text/event-stream"}});
        for (int i = 0; i < 50; ++i) r->Write("data: " + std::to_string(i) + "\n\n");
        r->End();
        return;
      }
      r->Respond(200, {}, std::string(req.tls ? "tls " : "plain ") + req.path);
    });
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(s).value();
    host_port_ = "127.0.0.1:" + std::to_string(server_->port());
  }

  // A client context trusting `ca`, showing `own` if it has a certificate.
  std::shared_ptr<TlsContext> ClientTls(const PemPair& ca, const PemPair& own = {}) {
    const std::string n = std::to_string(files_++);
    TlsFiles f;
    f.ca = dir_.Write("client-ca" + n + ".crt", ca.cert);
    if (!own.cert.empty()) {
      f.cert = dir_.Write("client" + n + ".crt", own.cert);
      f.key = dir_.Write("client" + n + ".key", own.key);
    }
    auto tls = TlsContext::Load(f, TlsRole::kClient);
    EXPECT_TRUE(tls.ok()) << tls.status().ToString();
    return tls.ok() ? *tls : nullptr;
  }

  Result<SyncResponse> Get(std::shared_ptr<TlsContext> tls, const std::string& target = "/x",
                           const std::string& peer_id = "") {
    ClientRequest r;
    r.host_port = host_port_;
    r.target = target;
    r.tls_peer_id = peer_id;
    r.connect_timeout = r.response_timeout = r.idle_timeout = 5s;
    return CallSync(std::move(r), std::move(tls));
  }

  // A request on a pooling client kept by the test (connections are reused across calls).
  Result<SyncResponse> GetPooled(Client& client, const std::string& peer_id) {
    ClientRequest r;
    r.host_port = host_port_;
    r.target = "/pooled";
    r.tls_peer_id = peer_id;
    auto response = std::make_shared<SyncResponse>();
    auto done = std::make_shared<std::promise<Status>>();
    ResponseHandlers h;
    h.on_headers = [response](int status, const Headers&) { response->status = status; };
    h.on_body = [response](std::string_view b) { response->body.append(b); };
    h.on_done = [done](Status s) { done->set_value(std::move(s)); };
    client.Send(std::move(r), std::move(h));
    auto f = done->get_future();
    if (f.wait_for(10s) != std::future_status::ready) return DeadlineExceededError("no answer");
    Status s = f.get();
    if (!s.ok()) return s;
    return *response;
  }

  Client& NewClient(std::shared_ptr<TlsContext> tls) {
    clients_.push_back(std::make_unique<Client>(io_.io(), ClientOptions{.tls = std::move(tls)}));
    return *clients_.back();
  }

  std::vector<std::string> SeenPeerIds() {
    std::lock_guard lock(mu_);
    return seen_peer_ids_;
  }

  PemDir dir_;
  PemPair ca_;
  std::string ca_file_, cert_file_, key_file_;
  int files_ = 0;
  IoThread io_;
  std::shared_ptr<TlsContext> tls_;
  std::unique_ptr<Server> server_;
  std::vector<std::unique_ptr<Client>> clients_;
  std::string host_port_;
  std::mutex mu_;
  std::vector<std::string> seen_peer_ids_;
};

TEST_F(TlsServerTest, ServesHttpsToAClientThatTrustsItsCa) {
  Start(/*mutual=*/false);
  Result<SyncResponse> r = Get(ClientTls(ca_));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "tls /x");
  EXPECT_EQ(SeenPeerIds(), std::vector<std::string>{""});  // no client certificate asked
}

TEST_F(TlsServerTest, StreamsChunkedResponsesOverTls) {
  Start(/*mutual=*/false);
  Result<SyncResponse> r = Get(ClientTls(ca_), "/stream");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::string want;
  for (int i = 0; i < 50; ++i) want += "data: " + std::to_string(i) + "\n\n";
  EXPECT_EQ(r->body, want);
}

TEST_F(TlsServerTest, AClientRefusesAServerOfAnotherCa) {
  Start(/*mutual=*/false);
  Result<SyncResponse> r = Get(ClientTls(Ca("another CA")));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("TLS handshake"), std::string::npos) << r.status().ToString();
  EXPECT_TRUE(Eventually([&] { return server_->stats().tls_handshake_failures == 1; }));
}

TEST_F(TlsServerTest, AClientRefusesAServerThatNamesAnotherNode) {
  Start(/*mutual=*/false);
  Result<SyncResponse> wrong = Get(ClientTls(ca_), "/x", "node-b");
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("names node 'node-a', not 'node-b'"), std::string::npos)
      << wrong.status().ToString();
  Result<SyncResponse> right = Get(ClientTls(ca_), "/x", "node-a");
  ASSERT_TRUE(right.ok()) << right.status().ToString();
  EXPECT_EQ(right->status, 200);
  EXPECT_EQ(SeenPeerIds().size(), 1u);  // the refused one sent no request
}

TEST_F(TlsServerTest, MutualTlsHandsTheVerifiedNodeIdToTheHandler) {
  Start(/*mutual=*/true);
  // A node certificate of the CA: the handler learns its node id.
  Result<SyncResponse> r = Get(ClientTls(ca_, Node(ca_, "node-c")));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // No certificate (an API client): served, with no id.
  r = Get(ClientTls(ca_));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(SeenPeerIds(), (std::vector<std::string>{"node-c", ""}));
}

TEST_F(TlsServerTest, MutualTlsRefusesACertificateOfAnotherCaAndAnExpiredOne) {
  Start(/*mutual=*/true);
  const PemPair other = Ca("another CA");
  EXPECT_FALSE(Get(ClientTls(ca_, Node(other, "node-c"))).ok());
  EXPECT_FALSE(Get(ClientTls(ca_, Node(ca_, "node-c", {-3 * kDay, kDay}))).ok());
  EXPECT_TRUE(Eventually([&] { return server_->stats().tls_handshake_failures == 2; }));
  EXPECT_TRUE(SeenPeerIds().empty());
  // Not yet valid either.
  EXPECT_FALSE(Get(ClientTls(ca_, Node(ca_, "node-c", {2 * kDay, kDay}))).ok());
}

TEST_F(TlsServerTest, AReloadReachesNewConnectionsWhileOpenOnesCarryOn) {
  Start(/*mutual=*/false);
  Client& old_client = NewClient(ClientTls(ca_));
  Result<SyncResponse> r = GetPooled(old_client, "node-a");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(old_client.stats().idle_connections, 1u);

  const PemPair renewed = Node(ca_, "node-b");
  dir_.Write("server.crt", renewed.cert);
  dir_.Write("server.key", renewed.key);
  ASSERT_TRUE(tls_->Reload().ok());
  EXPECT_EQ(tls_->reloads(), 1u);

  // The open connection still works, with the certificate it began with.
  r = GetPooled(old_client, "node-a");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(old_client.stats().connections_reused, 1u);
  EXPECT_EQ(old_client.stats().connections_opened, 1u);
  // A new connection gets the new certificate.
  EXPECT_TRUE(Get(ClientTls(ca_), "/x", "node-b").ok());
  EXPECT_FALSE(Get(ClientTls(ca_), "/x", "node-a").ok());
}

TEST_F(TlsServerTest, AStalledOrPlainHandshakeIsClosed) {
  Start(/*mutual=*/false, /*handshake_timeout=*/200ms);
  RawClient silent(server_->port());
  ASSERT_TRUE(silent.connected());
  EXPECT_TRUE(silent.ReadUntilClosed());  // nothing sent: closed at the handshake deadline
  EXPECT_TRUE(Eventually([&] { return server_->stats().tls_handshake_timeouts == 1; }));

  RawClient plain(server_->port());
  ASSERT_TRUE(plain.Send("GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_TRUE(plain.ReadUntilClosed());
  EXPECT_TRUE(Eventually([&] { return server_->stats().tls_handshake_failures == 1; }));
  EXPECT_TRUE(SeenPeerIds().empty());
}

}  // namespace
}  // namespace hearsay::http
