#include "hearsay/cli/client_tls.h"

#include <boost/asio/ssl/context.hpp>

namespace hearsay::cli {

void AddClientTlsOptions(CLI::App* cmd, ClientTlsFlags& flags) {
  cmd->add_option("--tls-ca", flags.ca,
                  "With an https:// URL: the PEM CA the node's certificate must chain to "
                  "(default: the system's trust store)");
  cmd->add_flag("--tls-insecure", flags.insecure,
                "With an https:// URL: do not verify the node's certificate (tests only)");
}

Result<std::shared_ptr<http::TlsContext>> ClientTls(const ClientTlsFlags& flags, bool https) {
  if (!https) {
    if (!flags.ca.empty() || flags.insecure) {
      return InvalidArgumentError("--tls-ca and --tls-insecure need an https:// URL");
    }
    return std::shared_ptr<http::TlsContext>();
  }
  HEARSAY_ASSIGN_OR_RETURN(std::shared_ptr<http::TlsContext> tls,
                           http::TlsContext::Load({"", "", flags.ca}, http::TlsRole::kClient));
  if (flags.insecure) {
    // The command never reloads its context, so the one it holds stays unverifying.
    boost::system::error_code ec;
    tls->Current()->set_verify_mode(boost::asio::ssl::verify_none, ec);
    if (ec) return InternalError("--tls-insecure: " + ec.message());
  }
  return tls;
}

}  // namespace hearsay::cli
