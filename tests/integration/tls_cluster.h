// Clusters of TLS nodes for the integration tests: a cluster CA and node certificates made with
// the real `hearsay ca` commands, and the options that start nodes with them.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "hearsay/http/tls_context.h"
#include "integration_env.h"
#include "run_tool.h"

namespace hearsay::integration {

// `hearsay ca init` in `dir`, then `hearsay ca issue` for node-0 .. node-<nodes-1> (reachable
// as 127.0.0.1 and localhost). False, with the failure recorded, if a command fails.
inline bool MakeClusterPki(const std::string& dir, size_t nodes) {
  const std::string log = dir + "/ca.log";
  if (RunToEnd({HEARSAY_BINARY, "ca", "init", "--dir", dir}, log, 30s) != 0) {
    ADD_FAILURE() << "hearsay ca init failed:\n" << launch::TailFile(log, 20);
    return false;
  }
  for (size_t i = 0; i < nodes; ++i) {
    if (RunToEnd({HEARSAY_BINARY, "ca", "issue", "--dir", dir, "--node-id",
                  "node-" + std::to_string(i), "--ip", "127.0.0.1", "--dns", "localhost"},
                 log, 30s) != 0) {
      ADD_FAILURE() << "hearsay ca issue failed:\n" << launch::TailFile(log, 20);
      return false;
    }
  }
  return true;
}

// A client context that trusts the CA in `dir` (and shows no certificate).
inline std::shared_ptr<http::TlsContext> TrustingClient(const std::string& dir) {
  auto tls = http::TlsContext::Load({"", "", dir + "/ca.crt"}, http::TlsRole::kClient);
  EXPECT_TRUE(tls.ok()) << tls.status().ToString();
  return tls.ok() ? *tls : nullptr;
}

// Nodes serving HTTPS with their certificates from `dir`; with `mutual`, forwards use mutual TLS
// (--tls-ca). The launcher probes them over TLS.
inline LocalClusterOptions TlsClusterOptions(size_t nodes, const std::string& dir, bool mutual,
                                             std::string policy = "hearsay") {
  LocalClusterOptions o = ClusterOptions(nodes, std::move(policy));
  for (size_t i = 0; i < nodes; ++i) {
    const std::string stem = dir + "/node-" + std::to_string(i);
    o.per_node_flags.push_back({"--tls-cert", stem + ".crt", "--tls-key", stem + ".key"});
  }
  if (mutual) o.extra_flags = {"--tls-ca", dir + "/ca.crt"};
  o.probe_tls = TrustingClient(dir);
  return o;
}

}  // namespace hearsay::integration
