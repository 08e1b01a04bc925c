#include "hearsay/net/key_admin.h"

#include <sodium.h>
#include <spdlog/spdlog.h>

#include <boost/asio/ip/address.hpp>
#include <nlohmann/json.hpp>
#include <optional>
#include <variant>

#include "hearsay/api/api_error.h"
#include "hearsay/net/keyring_file.h"
#include "hearsay/net/peer_auth.h"

namespace hearsay::net {
namespace {

constexpr std::string_view kBasePath = "/admin/keys";

KeyAdminResponse Error(int status, std::string_view type, std::string_view code,
                       std::string message) {
  api::ApiError e;
  e.http_status = status;
  e.type = std::string(type);
  e.code = std::string(code);
  e.message = std::move(message);
  return {status, api::RenderError(e)};
}

KeyAdminResponse BadRequest(std::string message) {
  return Error(400, "invalid_request_error", "invalid_key_request", std::move(message));
}

std::optional<gossip::KeyId> ParseKeyIdHex(std::string_view hex) {
  if (hex.size() != 8) return std::nullopt;
  gossip::KeyId id = 0;
  for (char c : hex) {
    int v;
    if (c >= '0' && c <= '9') {
      v = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      v = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      v = c - 'A' + 10;
    } else {
      return std::nullopt;
    }
    id = id << 4 | static_cast<gossip::KeyId>(v);
  }
  return id;
}

// The key a use/remove/install request names: {"key": base64} or (not for install) {"id": hex}.
std::variant<gossip::ClusterKey, KeyAdminResponse> NamedKey(const std::string& body,
                                                            const gossip::Keyring& ring,
                                                            bool allow_id) {
  const nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  const std::string expected = allow_id ? R"(expected {"key": "<base64>"} or {"id": "<8 hex>"})"
                                        : R"(expected {"key": "<base64>"})";
  if (j.is_discarded() || !j.is_object())
    return BadRequest("body is not a JSON object; " + expected);
  const bool has_key = j.contains("key");
  const bool has_id = allow_id && j.contains("id");
  if (has_key == has_id) return BadRequest(expected);
  if (has_key) {
    if (!j["key"].is_string()) return BadRequest("\"key\" must be a string; " + expected);
    Result<gossip::ClusterKey> key = gossip::ClusterKey::Parse(j["key"].get<std::string>());
    if (!key.ok()) return BadRequest(key.status().message());
    return *key;
  }
  if (!j["id"].is_string()) return BadRequest("\"id\" must be a string of 8 hex digits");
  const std::optional<gossip::KeyId> id = ParseKeyIdHex(j["id"].get<std::string>());
  if (!id) return BadRequest("\"id\" must be 8 hex digits, as `hearsay keys list` prints");
  const std::vector<const gossip::ClusterKey*> found = ring.FindById(*id);
  if (found.empty()) {
    return Error(404, "invalid_request_error", "key_not_installed",
                 "no installed key has id " + j["id"].get<std::string>());
  }
  if (found.size() > 1) {
    return Error(
        409, "invalid_request_error", "ambiguous_key_id",
        "several installed keys share id " + j["id"].get<std::string>() + "; name the key itself");
  }
  return *found.front();
}

}  // namespace

bool IsKeyAdminPath(std::string_view path) {
  return path == kBasePath ||
         (path.size() > kBasePath.size() && path.substr(0, kBasePath.size()) == kBasePath &&
          path[kBasePath.size()] == '/');
}

std::string SignAdminRequest(const gossip::ClusterKey& key, std::string_view method,
                             std::string_view target, std::string_view body,
                             std::string_view receiver, int64_t now_ms) {
  return PeerAuthenticator(gossip::Keyring(key), AuthPurpose::kAdmin)
      .Sign({method, target, body, kAdminSender, receiver}, now_ms);
}

bool IsLoopbackRemote(std::string_view remote) {
  std::string_view host = remote;
  if (!host.empty() && host.front() == '[') {
    const size_t close = host.find(']');
    if (close == std::string_view::npos) return false;
    host = host.substr(1, close - 1);
  } else if (const size_t colon = host.rfind(':');
             colon != std::string_view::npos && host.find(':') == colon) {
    host = host.substr(0, colon);  // "ip:port"; a bare IPv6 address has several colons
  }
  boost::system::error_code ec;
  const boost::asio::ip::address a = boost::asio::ip::make_address(std::string(host), ec);
  if (ec) return false;
  if (a.is_v6() && a.to_v6().is_v4_mapped()) {
    return boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, a.to_v6()).is_loopback();
  }
  return a.is_loopback();
}

KeyAdmin::KeyAdmin(gossip::Keyring& keyring, KeyAdminOptions options, OnChange on_change)
    : keyring_(keyring),
      options_(std::move(options)),
      on_change_(std::move(on_change)),
      auth_(keyring, AuthPurpose::kAdmin) {
  if (!options_.now_ms) options_.now_ms = UnixMillisNow;
}

KeyAdminResponse KeyAdmin::InsecureNode() {
  return Error(409, "invalid_request_error", "insecure_node",
               "this node runs --insecure and has no keyring; restart it with a key file");
}

KeyAdminResponse KeyAdmin::Refuse(const http::Request& request, std::string why) {
  spdlog::warn("event=key_admin_refused node={} remote={} path={} reason=\"{}\"", options_.node_id,
               request.remote, request.path, why);
  return Error(403, "permission_error", "key_admin_forbidden", std::move(why));
}

std::optional<KeyAdminResponse> KeyAdmin::Authenticate(const http::Request& request) {
  if (!options_.allow_remote && !IsLoopbackRemote(request.remote)) {
    return Refuse(request,
                  "key administration is served to loopback clients only; run `hearsay keys` on "
                  "the node's machine");
  }
  const std::optional<std::string_view> token = request.Header(kAdminTokenHeader);
  if (!token) return Refuse(request, "missing X-Hearsay-Admin-Token");
  const PeerAuthenticator::Verdict v = auth_.Verify(
      *token, {request.method, request.target, request.body, kAdminSender, options_.node_id},
      options_.now_ms());
  if (v != PeerAuthenticator::Verdict::kOk) {
    return Refuse(request, "X-Hearsay-Admin-Token refused (" + std::string(VerdictName(v)) +
                               "): it must be made for this request, this node and now, with an "
                               "installed key");
  }
  return std::nullopt;
}

KeyAdminResponse KeyAdmin::Handle(const http::Request& request) {
  if (std::optional<KeyAdminResponse> refused = Authenticate(request)) return std::move(*refused);
  const std::string_view path = request.path;
  const std::string_view op =
      path.size() > kBasePath.size() ? path.substr(kBasePath.size() + 1) : std::string_view();
  const bool known = op.empty() || op == "install" || op == "use" || op == "remove";
  if (!known) {
    return Error(404, "invalid_request_error", "unknown_url",
                 "unknown admin path; use /admin/keys and /admin/keys/{install,use,remove}");
  }
  const std::string_view want = op.empty() ? "GET" : "POST";
  if (request.method != want) {
    return Error(405, "invalid_request_error", "method_not_allowed",
                 std::string(path) + " takes " + std::string(want));
  }
  if (op.empty()) return List("list", "", false);

  std::variant<gossip::ClusterKey, KeyAdminResponse> named =
      NamedKey(request.body, keyring_, /*allow_id=*/op != "install");
  if (auto* r = std::get_if<KeyAdminResponse>(&named)) return std::move(*r);
  const gossip::ClusterKey& key = std::get<gossip::ClusterKey>(named);
  const std::string id = key.IdHex();

  gossip::Keyring next = keyring_;
  if (op == "install") {
    if (keyring_.Contains(key)) return List("install", id, false);
    const Status s = next.Install(key);
    if (!s.ok()) return Error(409, "invalid_request_error", "keyring_full", s.message());
  } else if (op == "use") {
    if (keyring_.primary() != nullptr && *keyring_.primary() == key) return List("use", id, false);
    const Status s = next.Use(key);
    if (!s.ok()) return Error(404, "invalid_request_error", "key_not_installed", s.message());
  } else {
    const Status s = next.Remove(key);
    if (s.code() == StatusCode::kFailedPrecondition) {
      return Error(409, "invalid_request_error", "key_is_primary", s.message());
    }
    if (!s.ok()) return Error(404, "invalid_request_error", "key_not_installed", s.message());
  }
  return Commit(std::move(next), op, id, request);
}

KeyAdminResponse KeyAdmin::Commit(gossip::Keyring next, std::string_view op,
                                  const std::string& key_id, const http::Request& request) {
  if (!options_.keyring_file.empty()) {
    const Status written = WriteKeyringFile(options_.keyring_file, next);
    if (!written.ok()) {
      spdlog::error("event=keyring_persist_failed node={} op={} key_id={} error=\"{}\"",
                    options_.node_id, op, key_id, written.message());
      return Error(500, "server_error", "keyring_not_persisted",
                   "could not write the keyring file, so nothing changed: " + written.message());
    }
  }
  keyring_ = std::move(next);
  auth_.Update(keyring_);
  if (on_change_) on_change_(keyring_);
  spdlog::info(
      "event=keys_changed node={} op={} key_id={} primary={} keys={} persisted={} remote={}",
      options_.node_id, op, key_id, keyring_.primary()->IdHex(), keyring_.size(),
      !options_.keyring_file.empty(), request.remote);
  return List(op, key_id, true);
}

KeyAdminResponse KeyAdmin::List(std::string_view op, const std::string& key_id,
                                bool changed) const {
  nlohmann::json keys = nlohmann::json::array();
  bool first = true;  // List() puts the primary first
  for (const gossip::ClusterKey& k : keyring_.List()) {
    keys.push_back({{"id", k.IdHex()}, {"primary", first}});
    first = false;
  }
  nlohmann::json out = {
      {"op", op},
      {"changed", changed},
      {"primary", keyring_.primary() ? nlohmann::json(keyring_.primary()->IdHex()) : nullptr},
      {"keys", keys},
      {"persisted", !options_.keyring_file.empty()},
  };
  if (!key_id.empty()) out["key_id"] = key_id;
  return {200, out.dump()};
}

}  // namespace hearsay::net
