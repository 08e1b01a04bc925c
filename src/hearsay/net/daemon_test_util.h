// Helpers for the tests that run whole Daemons in-process on loopback: a configuration on free
// ports, a started daemon, prompts of a known token count, and one /metrics value.
#pragma once

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hearsay/http/headers.h"
#include "hearsay/net/daemon.h"
#include "hearsay/net/peer_auth.h"

namespace hearsay::net::testing {

// A fixed cluster key (tests only).
inline constexpr const char* kTestClusterKey = "3q2+7wABAgMEBQYHCAkKCwwNDg8QERITFBUWFxgZGhs=";

// This test process's private folder under the test's temporary folder, removed with what it
// holds when the process exits (one process runs each test under ctest: files named by pid alone
// piled up by the thousand).
inline const std::string& ScratchDir() {
  struct Dir {
    std::string path;
    bool made = false;
    Dir() {
      std::string pattern = ::testing::TempDir() + "/hearsay_test_XXXXXX";
      made = ::mkdtemp(pattern.data()) != nullptr;
      path = made ? pattern : ::testing::TempDir();
    }
    ~Dir() {
      std::error_code ignored;
      if (made) std::filesystem::remove_all(path, ignored);
    }
  };
  static const Dir dir;
  return dir.path;
}

// A path in ScratchDir, unique to `suite`.
inline std::string TempPath(const std::string& suite, const std::string& name) {
  return ScratchDir() + "/" + suite + "_" + name;
}

// A cluster key file holding kTestClusterKey.
inline std::string ClusterKeyFile(const std::string& suite) {
  const std::string path = TempPath(suite, "cluster.key");
  std::ofstream(path) << kTestClusterKey << "\n";
  return path;
}

// HTTP and gossip on free loopback ports, warnings only; no key yet.
inline DaemonConfig LoopbackConfig() {
  DaemonConfig c;
  c.http_listen = "127.0.0.1:0";
  c.gossip_listen = "127.0.0.1:0";
  c.log_level = "warn";
  return c;
}

// The started daemon, or nullptr (the test has then failed).
inline std::unique_ptr<Daemon> Start(DaemonConfig c) {
  spdlog::set_level(spdlog::level::warn);
  Result<std::unique_ptr<Daemon>> d = Daemon::Create(std::move(c));
  EXPECT_TRUE(d.ok()) << d.status().ToString();
  return d.ok() ? std::move(*d) : nullptr;
}

// "w0 w1 w2 ...": one token per word (the tokenizer keeps the space before a word).
inline std::string Words(const std::string& tag, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) {
    if (i > 0) s += ' ';
    s += tag + std::to_string(i);
  }
  return s;
}

// The value of the /metrics line that is exactly `series` and its value, or -1.
inline double Metric(const std::string& metrics, const std::string& series) {
  size_t at = 0;
  while ((at = metrics.find(series + " ", at)) != std::string::npos) {
    if (at == 0 || metrics[at - 1] == '\n') return std::stod(metrics.substr(at + series.size()));
    at += series.size();
  }
  return -1;
}

// A daemon on free loopback ports keyed with kTestClusterKey, or with no key at all (`insecure`).
inline DaemonConfig ClusterConfig(bool insecure) {
  DaemonConfig c = LoopbackConfig();
  if (insecure) {
    c.insecure = true;
  } else {
    c.cluster_key_file = ClusterKeyFile("daemon_test");
  }
  return c;
}

// A /v1/completions body for the simulated engine; streamed with a usage chunk if `stream`.
inline nlohmann::json CompletionBody(const std::string& prompt, int max_tokens,
                                     bool stream = false) {
  nlohmann::json j = {{"model", "hearsay-sim"}, {"prompt", prompt}, {"max_tokens", max_tokens}};
  if (stream) {
    j["stream"] = true;
    j["stream_options"] = {{"include_usage", true}};
  }
  return j;
}

// The headers of a hop request with `body` to node `receiver`, signed with `key`.
inline http::Headers SignedHopHeaders(const nlohmann::json& body, const std::string& receiver,
                                      const std::string& key = kTestClusterKey) {
  const std::string text = body.dump();
  return {
      {"x-hearsay-hop", "1"},
      {"x-hearsay-origin", "tester"},
      {"x-hearsay-peer-auth",
       SignPeerRequest(*gossip::ClusterKey::Parse(key),
                       {"POST", "/v1/completions", text, "tester", receiver}, UnixMillisNow())}};
}

// The data: payloads of an SSE body, [DONE] included.
inline std::vector<std::string> SseEvents(const std::string& body) {
  std::vector<std::string> out;
  size_t pos = 0;
  while ((pos = body.find("data: ", pos)) != std::string::npos) {
    const size_t end = body.find("\n\n", pos);
    out.push_back(body.substr(pos + 6, end - pos - 6));
    pos = end;
  }
  return out;
}

}  // namespace hearsay::net::testing
