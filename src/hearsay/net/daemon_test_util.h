// Helpers for the tests that run whole Daemons in-process on loopback: a configuration on free
// ports, a started daemon, prompts of a known token count, and one /metrics value.
#pragma once

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <string>

#include "hearsay/net/daemon.h"

namespace hearsay::net::testing {

// A fixed cluster key (tests only).
inline constexpr const char* kTestClusterKey = "3q2+7wABAgMEBQYHCAkKCwwNDg8QERITFBUWFxgZGhs=";

// A path in the test's temporary folder, unique to this process and to `suite`.
inline std::string TempPath(const std::string& suite, const std::string& name) {
  return ::testing::TempDir() + "/hearsay_" + suite + "_" + std::to_string(::getpid()) + "_" + name;
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

}  // namespace hearsay::net::testing
