// A real client: the official OpenAI JavaScript client (npm `openai`, the version pinned in
// tests/js/package-lock.json) runs completions, chat completions and streaming chat against a
// node (tests/js/openai_client_test.cjs). The client is installed by tests/js/install-client.sh
// with the machine's Node.js into a cache outside the source tree, reused on later runs. The same
// runs over HTTPS against TLS nodes, the client trusting the cluster CA.
#include <gtest/gtest.h>

#include "hearsay/launch/child_process.h"
#include "hearsay/launch/temp_dir.h"
#include "integration_env.h"
#include "run_tool.h"
#include "tls_cluster.h"

namespace hearsay::integration {
namespace {

// The pinned client, installed once per lock file (npm ci; network only on the first run): the
// folder holding its node_modules, or "" with the failure recorded.
std::string InstallClient(const launch::TempDir& dir) {
  const std::string install_log = dir.File("install.log");
  if (RunToEnd({"/bin/bash", std::string(HEARSAY_JS_DIR) + "/install-client.sh"}, install_log,
               280s) != 0) {
    ADD_FAILURE() << "installing the OpenAI client failed:\n" << launch::TailFile(install_log, 40);
    return "";
  }
  std::string deps = launch::TailFile(install_log, 1);
  while (!deps.empty() && (deps.back() == '\n' || deps.back() == '\r')) deps.pop_back();
  if (::access((deps + "/node_modules/openai/package.json").c_str(), R_OK) != 0) {
    ADD_FAILURE() << "no client in '" << deps << "'";
    return "";
  }
  return deps;
}

// Runs the JS test file against `url` (node:test exits non-zero on any failed assertion), with
// `env` ("NAME=value") added to its environment.
void RunJsTest(const launch::TempDir& dir, const LocalCluster& cluster, const std::string& url,
               const std::string& deps, const std::vector<std::string>& env = {}) {
  const std::string node = FindInPath("node");
  ASSERT_FALSE(node.empty()) << "Node.js (>= 20) is required for this test: `node` is not in PATH";
  std::vector<std::string> argv = {"/usr/bin/env"};
  argv.insert(argv.end(), env.begin(), env.end());
  argv.insert(argv.end(),
              {node, std::string(HEARSAY_JS_DIR) + "/openai_client_test.cjs", url, deps});
  const std::string test_log = dir.File("node-test.log");
  const int code = RunToEnd(argv, test_log, 120s);
  EXPECT_EQ(code, 0) << launch::TailFile(test_log, 80) << "\n--- nodes ---\n"
                     << cluster.AllLogTails(20);
  const std::string summary = launch::TailFile(test_log, 10);
  EXPECT_NE(summary.find("# fail 0"), std::string::npos) << summary;
}

TEST(OpenAiJsClientTest, CompletionsChatAndStreamingChat) {
  auto dir = launch::TempDir::Create("hearsay-js-test-");
  ASSERT_TRUE(dir.ok());
  const std::string deps = InstallClient(**dir);
  ASSERT_FALSE(deps.empty());
  // Two nodes, so the client's requests may be forwarded as well as served locally.
  std::unique_ptr<LocalCluster> cluster = StartCluster(ClusterOptions(2));
  ASSERT_NE(cluster, nullptr);
  RunJsTest(**dir, *cluster, cluster->node(0).http_url(), deps);
}

// The same over HTTPS: Node.js trusts the cluster CA through NODE_EXTRA_CA_CERTS, and the two
// nodes forward to each other over mutual TLS.
TEST(OpenAiJsClientTest, OverHttpsWithTheClusterCa) {
  auto dir = launch::TempDir::Create("hearsay-js-tls-test-");
  ASSERT_TRUE(dir.ok());
  const std::string deps = InstallClient(**dir);
  ASSERT_FALSE(deps.empty());
  ASSERT_TRUE(MakeClusterPki((*dir)->path(), 2));
  std::unique_ptr<LocalCluster> cluster =
      StartCluster(TlsClusterOptions(2, (*dir)->path(), /*mutual=*/true));
  ASSERT_NE(cluster, nullptr);
  ASSERT_EQ(cluster->node(0).http_url().substr(0, 8), "https://");
  RunJsTest(**dir, *cluster, cluster->node(0).http_url(), deps,
            {"NODE_EXTRA_CA_CERTS=" + (*dir)->File("ca.crt")});
}

}  // namespace
}  // namespace hearsay::integration
