// http::TlsContext: a TLS certificate, its private key and the CA that peers' certificates must
// chain to, loaded into an OpenSSL context that can be replaced while the program runs (a
// certificate renewed, SIGHUP).
//
// Each connection takes the context current when it opens and keeps it (a shared_ptr) for its
// whole life, so Reload never touches a connection that is open: only handshakes that start
// after it use the new files. A Reload whose files do not load leaves the current context in
// place. Only TLS 1.2 and 1.3 are offered.
//
// A server context asks clients for a certificate only with a CA (mutual TLS); a client that
// shows none is still served (the client API), one whose certificate does not verify fails its
// handshake, and the server reads the verified node id (Request::tls_peer_id). A client context
// always verifies the server: against the CA, else against the system's trust store.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "hearsay/common/status.h"

namespace boost::asio::ssl {
class context;
}  // namespace boost::asio::ssl

namespace hearsay::http {

struct TlsFiles {
  // PEM: the certificate, then any intermediates (a chain file). Optional for a client.
  std::string cert;
  // PEM: the certificate's private key (unencrypted).
  std::string key;
  // PEM: the CA certificate(s) the other side's certificate must chain to. Empty: a server asks
  // for no client certificate; a client trusts the system's store.
  std::string ca;
};

enum class TlsRole { kServer, kClient };

class TlsContext {
 public:
  // Loads `files`. INVALID_ARGUMENT naming the file when one cannot be read or parsed, or when
  // the key does not belong to the certificate.
  static Result<std::shared_ptr<TlsContext>> Load(TlsFiles files, TlsRole role);

  // Reads the same files again; on success new handshakes use them, on error (returned) the
  // current context stays.
  Status Reload();

  // The context new connections use now.
  std::shared_ptr<boost::asio::ssl::context> Current() const;

  // How many times a Reload succeeded.
  uint64_t reloads() const;

  const TlsFiles& files() const { return files_; }

 private:
  TlsContext(TlsFiles files, TlsRole role) : files_(std::move(files)), role_(role) {}

  const TlsFiles files_;
  const TlsRole role_;
  mutable std::mutex mu_;
  std::shared_ptr<boost::asio::ssl::context> current_;  // guarded by mu_
  uint64_t reloads_ = 0;                                // guarded by mu_
};

}  // namespace hearsay::http
