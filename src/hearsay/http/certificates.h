// X.509 for a cluster's own certificate authority: make the CA, issue a node's certificate, and
// read the node id a certificate names. OpenSSL's C API (EVP, X509); keys are ECDSA P-256, which
// every TLS client (curl, Node.js, Python) accepts.
//
// A node certificate names its node twice: the subject CN is the node id, and a URI subject
// alternative name "hearsay:node:<id>" carries it unambiguously (NodeIdOf reads the URI first).
// It also carries the DNS names and IP addresses clients reach the node by, so the same
// certificate serves the client API (clients check the host name) and peer links (peers check
// the node id).
//
// Thread-safety: free functions, safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hearsay/common/status.h"

typedef struct x509_st X509;

namespace hearsay::http {

inline constexpr std::string_view kNodeUriPrefix = "hearsay:node:";

// A certificate and its private key, both PEM.
struct PemPair {
  std::string cert;
  std::string key;
};

// When a certificate is valid, relative to now: from now + `from_s` to now + `from_s` +
// `for_s` (seconds). A negative `from_s` back-dates it (an expired certificate for a test).
struct Validity {
  int64_t from_s = 0;
  int64_t for_s = 365 * 86400;
};

// A self-signed CA certificate (basicConstraints CA:TRUE, keyCertSign) named `name`.
Result<PemPair> MakeCertificateAuthority(std::string_view name, Validity validity);

struct NodeCertificateRequest {
  // 1..128 printable ASCII bytes.
  std::string node_id;
  std::vector<std::string> dns_names;
  // IPv4 or IPv6 literals.
  std::vector<std::string> ip_addresses;
  Validity validity;
};

// A node certificate signed by `ca`, for both TLS server and client use. INVALID_ARGUMENT for a
// bad node id, DNS name or IP address, or a CA pair that does not parse.
Result<PemPair> IssueNodeCertificate(const PemPair& ca, const NodeCertificateRequest& request);

// The node id of a certificate: its URI SAN "hearsay:node:<id>", else its subject CN; empty
// when it has neither.
std::string NodeIdOf(X509* cert);
// The same, of a PEM certificate; INVALID_ARGUMENT if it does not parse.
Result<std::string> NodeIdOfPem(std::string_view pem);

// True when `node_id` may name a node in a certificate (1..128 printable ASCII, no space).
bool ValidCertificateNodeId(std::string_view node_id);

}  // namespace hearsay::http
