// `hearsay keys`: lists and changes a running node's cluster keys, as `serf keys` does.
//
//   hearsay keys list    [--node URL] --auth-key-file FILE [--json]
//   hearsay keys install [--node URL] --auth-key-file FILE --key-file NEW
//   hearsay keys use     [--node URL] --auth-key-file FILE (--key-file F | --id HEX)
//   hearsay keys remove  [--node URL] --auth-key-file FILE (--key-file F | --id HEX)
//
// --node may be https:// (with --tls-ca FILE, or --tls-insecure), and should name the node's admin
// listener when it has one (--admin-http). It talks to the node's /admin/keys requests
// (net/key_admin.h), which answer loopback clients only: run it on the node's machine. The admin
// authenticator is made with the first key of
// --auth-key-file, which must be installed on the node (the node's key file works until its key
// is removed). It asks GET /health for the node's id first: each admin request carries an
// authenticator made for that request and that node (net/peer_auth.h). Keys are read from files
// ("-" is stdin), never from the command line, so they do not show in `ps`. Exit status: 0 done; 1
// the node refused or could not be reached (its message is printed); 2 bad usage or an unreadable
// key file.
#include <cstdio>
#include <iostream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "hearsay/cli/client_tls.h"
#include "hearsay/cli/commands.h"
#include "hearsay/gossip/keyring.h"
#include "hearsay/http/sync_call.h"
#include "hearsay/loadgen/target_url.h"
#include "hearsay/net/key_admin.h"
#include "hearsay/net/keyring_file.h"
#include "hearsay/net/peer_auth.h"

namespace hearsay::cli {
namespace {

struct KeysFlags {
  std::string node = "http://127.0.0.1:8080";
  std::string auth_key_file;
  std::string key_file;
  std::string id;
  bool json = false;
  ClientTlsFlags tls;
};

Result<gossip::Keyring> ReadKeys(const std::string& path) {
  if (path != "-") return net::ReadKeyFile(path);
  const std::string text((std::istreambuf_iterator<char>(std::cin)),
                         std::istreambuf_iterator<char>());
  Result<gossip::Keyring> ring = gossip::Keyring::ParseFile(text);
  if (!ring.ok()) return InvalidArgumentError("stdin: " + ring.status().message());
  return ring;
}

void PrintKeys(const nlohmann::json& body) {
  if (!body.contains("keys") || !body["keys"].is_array()) return;
  for (const auto& k : body["keys"]) {
    std::printf("%s %s\n", k.value("primary", false) ? "primary  " : "installed",
                k.value("id", std::string("?")).c_str());
  }
  std::printf("persisted: %s\n",
              body.value("persisted", false) ? "yes (keyring file)" : "no (until the node stops)");
}

// The node's id, which every admin authenticator names (GET /health tells it).
Result<std::string> FetchNodeId(const std::string& address, std::shared_ptr<http::TlsContext> tls) {
  http::ClientRequest req;
  req.method = "GET";
  req.host_port = address;
  req.target = "/health";
  req.connect_timeout = req.response_timeout = req.idle_timeout = std::chrono::seconds(10);
  HEARSAY_ASSIGN_OR_RETURN(http::SyncResponse r, http::CallSync(std::move(req), std::move(tls)));
  const nlohmann::json j = nlohmann::json::parse(r.body, nullptr, false);
  if (!j.is_object() || !j.contains("node") || !j["node"].is_string()) {
    return UnavailableError("GET /health did not name the node (HTTP " + std::to_string(r.status) +
                            ")");
  }
  return j["node"].get<std::string>();
}

int Run(const std::string& op, const KeysFlags& f) {
  Result<loadgen::TargetUrl> url = loadgen::ParseTargetUrl(f.node);
  if (!url.ok()) {
    std::fprintf(stderr, "hearsay keys: --node: %s\n", url.status().message().c_str());
    return 2;
  }
  Result<std::shared_ptr<http::TlsContext>> tls = ClientTls(f.tls, url->https);
  if (!tls.ok()) {
    std::fprintf(stderr, "hearsay keys: %s\n", tls.status().message().c_str());
    return 2;
  }
  const std::string* address = &url->host_port;
  Result<gossip::Keyring> auth = net::ReadKeyFile(f.auth_key_file);
  if (!auth.ok()) {
    std::fprintf(stderr, "hearsay keys: --auth-key-file: %s\n", auth.status().message().c_str());
    return 2;
  }
  Result<std::string> node_id = FetchNodeId(*address, *tls);
  if (!node_id.ok()) {
    std::fprintf(stderr, "hearsay keys: %s: %s\n", f.node.c_str(),
                 node_id.status().ToString().c_str());
    return 1;
  }
  http::ClientRequest req;
  req.host_port = *address;
  req.connect_timeout = req.response_timeout = req.idle_timeout = std::chrono::seconds(10);
  if (op == "list") {
    req.method = "GET";
    req.target = "/admin/keys";
  } else {
    req.method = "POST";
    req.target = "/admin/keys/" + op;
    req.headers.emplace_back("Content-Type", "application/json");
    const bool by_key = !f.key_file.empty();
    if (by_key == !f.id.empty()) {
      std::fprintf(stderr, "hearsay keys %s: give %s\n", op.c_str(),
                   op == "install" ? "--key-file" : "exactly one of --key-file and --id");
      return 2;
    }
    if (by_key) {
      Result<gossip::Keyring> ring = ReadKeys(f.key_file);
      if (!ring.ok()) {
        std::fprintf(stderr, "hearsay keys: --key-file: %s\n", ring.status().message().c_str());
        return 2;
      }
      if (ring->size() != 1) {
        std::fprintf(stderr, "hearsay keys: --key-file must hold one key, it holds %zu\n",
                     ring->size());
        return 2;
      }
      req.body = nlohmann::json{{"key", ring->primary()->ToBase64()}}.dump();
    } else {
      req.body = nlohmann::json{{"id", f.id}}.dump();
    }
  }
  // Signed last: the authenticator covers the method, path, body and the node's id.
  req.headers.emplace_back(std::string(net::kAdminTokenHeader),
                           net::SignAdminRequest(*auth->primary(), req.method, req.target, req.body,
                                                 *node_id, net::UnixMillisNow()));
  Result<http::SyncResponse> r = http::CallSync(std::move(req), *tls);
  if (!r.ok()) {
    std::fprintf(stderr, "hearsay keys: %s: %s\n", f.node.c_str(), r.status().ToString().c_str());
    return 1;
  }
  const nlohmann::json body = nlohmann::json::parse(r->body, nullptr, false);
  if (r->status != 200) {
    std::string message = r->body;
    if (body.is_object() && body.contains("error") && body["error"].is_object()) {
      message = body["error"].value("message", r->body);
    }
    std::fprintf(stderr, "hearsay keys %s: %s refused (HTTP %d): %s\n", op.c_str(), f.node.c_str(),
                 r->status, message.c_str());
    return 1;
  }
  if (f.json) {
    std::printf("%s\n", r->body.c_str());
    return 0;
  }
  if (op != "list" && body.is_object()) {
    std::printf("%s %s: %s\n", op.c_str(), body.value("key_id", std::string("?")).c_str(),
                body.value("changed", false) ? "done" : "nothing to change");
  }
  PrintKeys(body);
  return 0;
}

}  // namespace

void AddKeysCommand(CLI::App& app, int& exit_code) {
  auto* keys = app.add_subcommand("keys", "List and change a running node's cluster keys");
  keys->require_subcommand(1);
  auto flags = std::make_shared<KeysFlags>();
  const struct {
    const char* name;
    const char* help;
  } ops[] = {
      {"list", "List the node's keys (ids only) and which one is primary"},
      {"install", "Install a key: the node opens messages sealed with it"},
      {"use", "Make an installed key primary: the node seals with it"},
      {"remove", "Remove an installed key that is not primary"},
  };
  for (const auto& o : ops) {
    const std::string op = o.name;
    auto* cmd = keys->add_subcommand(op, o.help);
    cmd->add_option("--node", flags->node,
                    "the node's URL (loopback; http:// or https://, its admin listener if it has "
                    "one)")
        ->default_val(flags->node);
    AddClientTlsOptions(cmd, flags->tls);
    cmd->add_option(
           "--auth-key-file", flags->auth_key_file,
           "a key file whose first key is installed on the node (signs the admin requests)")
        ->required();
    if (op != "list") {
      cmd->add_option("--key-file", flags->key_file, "file holding the one key (- for stdin)");
    }
    if (op == "use" || op == "remove") {
      cmd->add_option("--id", flags->id, "the key's id, as `hearsay keys list` prints it");
    }
    cmd->add_flag("--json", flags->json, "print the node's JSON answer");
    cmd->callback([op, flags, &exit_code] { exit_code = Run(op, *flags); });
  }
}

}  // namespace hearsay::cli
