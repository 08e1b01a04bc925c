// The TLS options of the commands that call a running node (`hearsay status`, `keys`, `bench`):
// an https:// URL, `--tls-ca FILE` (the CA the node's certificate must chain to; without it the
// system's trust store) and `--tls-insecure` (no verification at all: a test node, never across a
// network anyone else shares).
//
// Thread-safety: plain functions; the context they return may be shared by any thread.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "hearsay/common/status.h"
#include "hearsay/http/tls_context.h"

namespace hearsay::cli {

struct ClientTlsFlags {
  std::string ca;
  bool insecure = false;
};

// Registers --tls-ca and --tls-insecure on `cmd`.
void AddClientTlsOptions(CLI::App* cmd, ClientTlsFlags& flags);

// The client context for a node reached over `https` (null for plain HTTP). INVALID_ARGUMENT
// when the flags ask for TLS on an http:// URL, or the CA file does not load.
Result<std::shared_ptr<http::TlsContext>> ClientTls(const ClientTlsFlags& flags, bool https);

}  // namespace hearsay::cli
