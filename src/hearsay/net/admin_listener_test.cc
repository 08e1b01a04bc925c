// The admin listener (--admin-http): a real Daemon on loopback, with and without TLS. With it the
// API port serves only /v1/* and /health, and the operator's endpoints (/metrics, /cluster,
// /status, the console, /admin/*) only the admin port.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "hearsay/http/certificates.h"
#include "hearsay/http/sync_call.h"
#include "hearsay/http/tls_context.h"
#include "hearsay/net/daemon.h"
#include "hearsay/net/daemon_test_util.h"

namespace hearsay::net {
namespace {

using testing::Start;

using namespace std::chrono_literals;
using json = nlohmann::json;

constexpr const char* kKey = "3q2+7wABAgMEBQYHCAkKCwwNDg8QERITFBUWFxgZGhs=";

std::string TestFile(const std::string& name, const std::string& text) {
  const std::string path = testing::TempPath("admin_listener", name);
  std::ofstream(path) << text;
  return path;
}

DaemonConfig Config(bool admin) {
  DaemonConfig c = testing::LoopbackConfig();
  c.cluster_key_file = TestFile("cluster.key", std::string(kKey) + "\n");
  if (admin) c.admin_listen = "127.0.0.1:0";
  return c;
}

http::SyncResponse Call(const std::string& method, const std::string& address,
                        const std::string& target,
                        std::shared_ptr<http::TlsContext> tls = nullptr) {
  http::ClientRequest req;
  req.method = method;
  req.host_port = address;
  req.target = target;
  if (method == "POST") {
    req.body = "{}";
    req.headers = {{"content-type", "application/json"}};
  }
  req.connect_timeout = req.response_timeout = req.idle_timeout = 10s;
  Result<http::SyncResponse> r = http::CallSync(std::move(req), std::move(tls));
  EXPECT_TRUE(r.ok()) << method << " " << target << ": " << r.status().ToString();
  return r.ok() ? std::move(*r) : http::SyncResponse{};
}

http::SyncResponse Get(const std::string& address, const std::string& target,
                       std::shared_ptr<http::TlsContext> tls = nullptr) {
  return Call("GET", address, target, std::move(tls));
}

// A 404 in OpenAI's shape: {"error": {"type": ..., "code": "not_found", ...}}.
void ExpectOpenAiNotFound(const http::SyncResponse& r, const std::string& what) {
  EXPECT_EQ(r.status, 404) << what << ": " << r.body;
  const json j = json::parse(r.body, nullptr, false);
  ASSERT_TRUE(j.is_object() && j.contains("error")) << what << ": " << r.body;
  EXPECT_EQ(j["error"].value("code", ""), "not_found") << what;
}

const char* const kOperatorPaths[] = {"/metrics", "/status", "/cluster", "/"};

TEST(AdminListenerTest, WithoutItTheApiPortServesEverything) {
  std::unique_ptr<Daemon> d = Start(Config(/*admin=*/false));
  ASSERT_NE(d, nullptr);
  EXPECT_TRUE(d->admin_address().empty());
  for (const char* path : kOperatorPaths) {
    EXPECT_EQ(Get(d->http_address(), path).status, 200) << path;
  }
  EXPECT_EQ(Get(d->http_address(), "/v1/models").status, 200);
}

TEST(AdminListenerTest, TheApiPortRefusesOperatorPathsAndTheAdminPortServesThem) {
  std::unique_ptr<Daemon> d = Start(Config(/*admin=*/true));
  ASSERT_NE(d, nullptr);
  ASSERT_FALSE(d->admin_address().empty());
  EXPECT_NE(d->admin_address(), d->http_address());
  const std::string& api = d->http_address();
  const std::string& admin = d->admin_address();

  for (const char* path : kOperatorPaths) {
    ExpectOpenAiNotFound(Get(api, path), std::string("API port ") + path);
    EXPECT_EQ(Get(admin, path).status, 200) << "admin port " << path;
  }
  // The key administration and fault injection exist only on the admin port: there an
  // unauthenticated request is refused by the admin check, on the API port the path is unknown.
  ExpectOpenAiNotFound(Get(api, "/admin/keys"), "API port /admin/keys");
  const http::SyncResponse keys = Get(admin, "/admin/keys");
  EXPECT_NE(keys.status, 404) << keys.body;
  EXPECT_GE(keys.status, 400) << keys.body;

  // The API port keeps the API and /health; the admin port serves no /v1/*.
  EXPECT_EQ(Get(api, "/health").status, 200);
  EXPECT_EQ(Get(api, "/v1/models").status, 200);
  EXPECT_EQ(Get(admin, "/health").status, 200);
  ExpectOpenAiNotFound(Get(admin, "/v1/models"), "admin port /v1/models");
  ExpectOpenAiNotFound(Call("POST", admin, "/v1/completions"), "admin port /v1/completions");
  ExpectOpenAiNotFound(Call("POST", admin, "/v1/chat/completions"),
                       "admin port /v1/chat/completions");

  const json status = json::parse(Get(admin, "/status").body, nullptr, false);
  ASSERT_TRUE(status.is_object());
  EXPECT_EQ(status.value("node", ""), d->node_id());
}

TEST(AdminListenerTest, ServesTlsWithTheApisCertificate) {
  Result<http::PemPair> ca = http::MakeCertificateAuthority("admin-test-ca", {});
  ASSERT_TRUE(ca.ok()) << ca.status().ToString();
  http::NodeCertificateRequest cr;
  cr.node_id = "admin-node";
  cr.ip_addresses = {"127.0.0.1"};
  Result<http::PemPair> cert = http::IssueNodeCertificate(*ca, cr);
  ASSERT_TRUE(cert.ok()) << cert.status().ToString();
  DaemonConfig c = Config(/*admin=*/true);
  c.node_id = "admin-node";
  c.tls_cert = TestFile("node.crt", cert->cert);
  c.tls_key = TestFile("node.key", cert->key);
  std::unique_ptr<Daemon> d = Start(c);
  ASSERT_NE(d, nullptr);
  Result<std::shared_ptr<http::TlsContext>> client =
      http::TlsContext::Load({"", "", TestFile("ca.crt", ca->cert)}, http::TlsRole::kClient);
  ASSERT_TRUE(client.ok()) << client.status().ToString();

  EXPECT_EQ(Get(d->admin_address(), "/status", *client).status, 200);
  EXPECT_EQ(Get(d->admin_address(), "/metrics", *client).status, 200);
  ExpectOpenAiNotFound(Get(d->http_address(), "/status", *client), "API port /status over TLS");
  // Plain HTTP to the admin port is not answered: it speaks TLS only.
  http::ClientRequest plain;
  plain.method = "GET";
  plain.host_port = d->admin_address();
  plain.target = "/status";
  plain.connect_timeout = plain.response_timeout = plain.idle_timeout = 10s;
  Result<http::SyncResponse> r = http::CallSync(std::move(plain));
  EXPECT_TRUE(!r.ok() || r->status != 200);
}

TEST(AdminListenerTest, ABadAdminAddressIsAConfigurationError) {
  DaemonConfig c = Config(/*admin=*/false);
  c.admin_listen = "no-port";
  EXPECT_FALSE(c.Validate().ok());
  EXPECT_NE(c.Validate().message().find("http.admin_listen"), std::string::npos);
  EXPECT_TRUE(c.ApplyFlag("admin-http", "127.0.0.1:0").ok());
  EXPECT_EQ(c.admin_listen, "127.0.0.1:0");
}

}  // namespace
}  // namespace hearsay::net
