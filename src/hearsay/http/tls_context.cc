#include "hearsay/http/tls_context.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <boost/asio/ssl/context.hpp>
#include <utility>

namespace hearsay::http {

namespace ssl = boost::asio::ssl;
using boost::system::error_code;

namespace {

// OpenSSL's reason for the last failure (its error queue), or the error code's message.
std::string Reason(const error_code& ec) {
  const unsigned long e = ERR_peek_last_error();
  ERR_clear_error();
  if (e != 0) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    return buf;
  }
  return ec.message();
}

Result<std::shared_ptr<ssl::context>> Build(const TlsFiles& files, TlsRole role) {
  const bool server = role == TlsRole::kServer;
  auto ctx =
      std::make_shared<ssl::context>(server ? ssl::context::tls_server : ssl::context::tls_client);
  error_code ec;
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                       ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 |
                       ssl::context::single_dh_use,
                   ec);
  if (ec) return InternalError("tls: cannot set the context's options: " + Reason(ec));
  SSL_CTX* native = ctx->native_handle();
  if (server) {
    // No session tickets or cache: a ticket sent after the handshake would make an idle pooled
    // client connection look stale, and resumption would skip the client certificate check.
    SSL_CTX_set_num_tickets(native, 0);
    SSL_CTX_set_session_cache_mode(native, SSL_SESS_CACHE_OFF);
  }
  if (!files.ca.empty()) {
    ctx->load_verify_file(files.ca, ec);
    if (ec)
      return InvalidArgumentError("tls: cannot load the CA '" + files.ca + "': " + Reason(ec));
    // A server asks for a certificate but serves clients without one (the client API); a
    // certificate shown must verify.
    ctx->set_verify_mode(ssl::verify_peer, ec);
  } else if (!server) {
    ctx->set_default_verify_paths(ec);
    if (!ec) ctx->set_verify_mode(ssl::verify_peer, ec);
  }
  if (ec) return InternalError("tls: cannot set up verification: " + Reason(ec));
  if (files.cert.empty() && !server) return ctx;
  ctx->use_certificate_chain_file(files.cert, ec);
  if (ec) {
    return InvalidArgumentError("tls: cannot load the certificate '" + files.cert +
                                "': " + Reason(ec));
  }
  ctx->use_private_key_file(files.key, ssl::context::pem, ec);
  if (ec) {
    return InvalidArgumentError("tls: cannot load the private key '" + files.key +
                                "': " + Reason(ec));
  }
  if (SSL_CTX_check_private_key(ctx->native_handle()) != 1) {
    return InvalidArgumentError("tls: the key '" + files.key +
                                "' does not belong to the certificate '" + files.cert +
                                "': " + Reason(ec));
  }
  return ctx;
}

}  // namespace

Result<std::shared_ptr<TlsContext>> TlsContext::Load(TlsFiles files, TlsRole role) {
  if (files.cert.empty() != files.key.empty() || (role == TlsRole::kServer && files.cert.empty())) {
    return InvalidArgumentError("tls: a certificate and its key go together");
  }
  std::shared_ptr<TlsContext> tls(new TlsContext(std::move(files), role));
  HEARSAY_ASSIGN_OR_RETURN(tls->current_, Build(tls->files_, role));
  return tls;
}

Status TlsContext::Reload() {
  HEARSAY_ASSIGN_OR_RETURN(std::shared_ptr<ssl::context> ctx, Build(files_, role_));
  std::lock_guard lock(mu_);
  current_ = std::move(ctx);
  ++reloads_;
  return OkStatus();
}

std::shared_ptr<ssl::context> TlsContext::Current() const {
  std::lock_guard lock(mu_);
  return current_;
}

uint64_t TlsContext::reloads() const {
  std::lock_guard lock(mu_);
  return reloads_;
}

}  // namespace hearsay::http
