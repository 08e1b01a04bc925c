// A real client: the official OpenAI JavaScript client (npm `openai`, the version pinned in
// tests/js/package-lock.json) runs completions, chat completions and streaming chat against a
// node (tests/js/openai_client_test.cjs). The client is installed by tests/js/install-client.sh
// with the machine's Node.js into a cache outside the source tree, reused on later runs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>

#include "hearsay/launch/child_process.h"
#include "hearsay/launch/temp_dir.h"
#include "integration_env.h"

namespace hearsay::integration {
namespace {

// `name` resolved through $PATH, or "" if it is not there.
std::string FindInPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

// Runs `argv` to completion (bounded), returning its exit code; the output goes to `log`.
int RunToEnd(const std::vector<std::string>& argv, const std::string& log,
             std::chrono::milliseconds timeout) {
  auto child = launch::ChildProcess::Spawn(argv, log);
  if (!child.ok()) {
    ADD_FAILURE() << child.status().ToString();
    return -1;
  }
  Status waited = (*child)->Wait(timeout);
  if (!waited.ok()) {
    ADD_FAILURE() << argv[0] << " " << (argv.size() > 1 ? argv[1] : "") << ": " << waited.ToString()
                  << "\n"
                  << launch::TailFile(log, 40);
    (*child)->Kill();
    return -1;
  }
  return (*child)->exit_code().value_or(-1);
}

TEST(OpenAiJsClientTest, CompletionsChatAndStreamingChat) {
  const std::string node = FindInPath("node");
  ASSERT_FALSE(node.empty()) << "Node.js (>= 20) is required for this test: `node` is not in PATH";
  auto dir = launch::TempDir::Create("hearsay-js-test-");
  ASSERT_TRUE(dir.ok());

  // 1. The pinned client, installed once per lock file (npm ci; network only on the first run).
  const std::string install_log = (*dir)->File("install.log");
  ASSERT_EQ(RunToEnd({"/bin/bash", std::string(HEARSAY_JS_DIR) + "/install-client.sh"}, install_log,
                     280s),
            0)
      << "installing the OpenAI client failed:\n"
      << launch::TailFile(install_log, 40);
  std::string deps = launch::TailFile(install_log, 1);
  while (!deps.empty() && (deps.back() == '\n' || deps.back() == '\r')) deps.pop_back();
  ASSERT_EQ(::access((deps + "/node_modules/openai/package.json").c_str(), R_OK), 0)
      << "no client in '" << deps << "'";

  // 2. Two nodes, so the client's requests may be forwarded as well as served locally.
  std::unique_ptr<LocalCluster> cluster = StartCluster(ClusterOptions(2));
  ASSERT_NE(cluster, nullptr);

  // 3. The JS test file; node:test exits non-zero on any failed assertion.
  const std::string test_log = (*dir)->File("node-test.log");
  const int code = RunToEnd({node, std::string(HEARSAY_JS_DIR) + "/openai_client_test.cjs",
                             cluster->node(0).http_url(), deps},
                            test_log, 120s);
  EXPECT_EQ(code, 0) << launch::TailFile(test_log, 80) << "\n--- nodes ---\n"
                     << cluster->AllLogTails(20);
  const std::string summary = launch::TailFile(test_log, 10);
  EXPECT_NE(summary.find("# fail 0"), std::string::npos) << summary;
}

}  // namespace
}  // namespace hearsay::integration
