// The daemon's HTTP request handling: routing by path, completions from parsing to the node, and
// the small JSON endpoints.

#include <spdlog/spdlog.h>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <charconv>
#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "hearsay/engine/sim_engine.h"
#include "hearsay/gossip/types.h"
#include "hearsay/http/bounce_header.h"
#include "hearsay/http/host_port.h"
#include "hearsay/http/peer_headers.h"
#include "hearsay/net/console_page.h"
#include "hearsay/net/daemon.h"
#include "hearsay/net/log_guard.h"

namespace hearsay::net {

using http::ParseHostPort;
namespace asio = boost::asio;

namespace {

// Appends v in lower-case hex without leading zeros ("0" for 0): what "{:x}" prints, without
// fmt's formatting machinery on every request (about a thousand instructions).
void AppendHex(uint64_t v, std::string* out) {
  char digits[16];
  int n = 0;
  do {
    digits[n++] = "0123456789abcdef"[v & 0xf];
    v >>= 4;
  } while (v != 0);
  while (n > 0) out->push_back(digits[--n]);
}

// The forwarding node's request id (http::kRequestIdHeader), 0 when absent or not a number.
uint64_t ParseRequestId(std::string_view text) {
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  return ec == std::errc{} && end == text.data() + text.size() ? v : 0;
}

// GET /status `tenants[]`: names and counts, never keys or key ids.
nlohmann::json TenantsJson(const std::vector<TenantMetrics::TenantCounts>& tenants) {
  nlohmann::json out = nlohmann::json::array();
  for (const TenantMetrics::TenantCounts& t : tenants) {
    out.push_back({{"name", t.tenant},
                   {"requests", t.requests},
                   {"rate_limited", {{"rps", t.rps_limited}, {"tpm", t.tpm_limited}}},
                   {"tokens", t.tokens}});
  }
  return out;
}

}  // namespace

http::Headers Daemon::OwnAnswerHeaders(http::Headers h) const {
  h.emplace_back(http::kServedByHeader, node_id_);
  h.emplace_back(http::kEntryHeader, node_id_);
  return h;
}

void Daemon::RespondError(const std::shared_ptr<http::Responder>& responder, const api::ApiError& e,
                          http::Headers extra) {
  metrics_.CountHttpError(e.http_status);
  http::Headers h = OwnAnswerHeaders(JsonHeaders());
  for (auto& kv : extra) h.push_back(std::move(kv));
  responder->Respond(e.http_status, std::move(h), api::RenderError(e));
}

bool Daemon::Serves(Listener listener, std::string_view path) const {
  if (admin_server_ == nullptr) return true;
  const bool api = path.starts_with("/v1/");
  if (listener == Listener::kAdmin) return !api;
  return api || path == "/health";
}

void Daemon::Handle(Listener listener, http::Request request,
                    std::shared_ptr<http::Responder> responder) {
  const std::string& path = request.path;
  // With an admin listener, each port answers only its own paths: the others do not exist there.
  if (!Serves(listener, path)) return RespondError(responder, api::NotFound(path));
  const bool get = request.method == "GET";
  const bool post = request.method == "POST";
  // Bodies are read as they are: a body in an encoding the node does not decode is refused.
  if (auto encoding = request.Header("content-encoding");
      encoding && !http::EqualsIgnoreCase(*encoding, "identity")) {
    return RespondError(responder, api::UnsupportedEncoding(*encoding));
  }
  if (path == "/v1/completions" || path == "/v1/chat/completions") {
    if (!post) return RespondError(responder, api::MethodNotAllowed(request.method, path));
    const api::Endpoint ep =
        path == "/v1/completions" ? api::Endpoint::kCompletions : api::Endpoint::kChatCompletions;
    return HandleCompletion(ep, std::move(request), std::move(responder));
  }
  if (path == "/health") {
    if (!get) return RespondError(responder, api::MethodNotAllowed(request.method, path));
    nlohmann::json j = HealthJson();
    if (draining_) j["status"] = "draining";
    j["node"] = node_id_;
    j["generation"] = std::to_string(generation_);  // above 2^53: a string, exact in JSON
    // Peers under mutual TLS bind this node's gossip signing key from here (the certificate of
    // the connection names the node): certified_key_source.h.
    if (!signing_public_key_.empty()) {
      j["signing_key"] = CertifiedKeySource::EncodeKey(signing_public_key_);
    }
    if (draining_) metrics_.CountHttpError(503);
    responder->Respond(draining_ ? 503 : 200, OwnAnswerHeaders(JsonHeaders()), j.dump());
    return;
  }
  if (path == "/v1/models") {
    if (!get) return RespondError(responder, api::MethodNotAllowed(request.method, path));
    Tenant tenant;
    if (!AuthenticateClient(request, responder, &tenant)) return;
    asio::post(core_io_, [this, responder] {
      if (!node_) return;
      responder->Respond(200, OwnAnswerHeaders(JsonHeaders()),
                         RenderPoolModels(node_->PoolModels(), created_unix_));
    });
    return;
  }
  if (path == "/metrics" || path == "/cluster") {
    if (!get) return RespondError(responder, api::MethodNotAllowed(request.method, path));
    const bool metrics = path == "/metrics";
    // Core state is read on the core thread, which answers through the (thread-safe) responder.
    asio::post(core_io_, [this, metrics, responder] {
      if (!node_) return;
      if (metrics) {
        RefreshMetrics();
        responder->Respond(
            200, OwnAnswerHeaders({{"content-type", "text/plain; version=0.0.4; charset=utf-8"}}),
            metrics_.Render());
      } else {
        responder->Respond(200, OwnAnswerHeaders(JsonHeaders()), RenderCluster());
      }
    });
    return;
  }
  if (path == "/status") {
    if (!get) return RespondError(responder, api::MethodNotAllowed(request.method, path));
    asio::post(core_io_, [this, responder] {
      if (!node_) return;
      // Someone is watching: the node records its routing decisions for the board until
      // nobody has read /status for StatusBoard::kWatchWindow (RefreshTick).
      status_board_->MarkWatched();
      node_->SetRecorder(status_board_.get());
      // Read-only, no secrets: a console served by another member may read it too.
      responder->Respond(200,
                         OwnAnswerHeaders({{"content-type", "application/json"},
                                           {"cache-control", "no-store"},
                                           {"access-control-allow-origin", "*"}}),
                         RenderStatus());
    });
    return;
  }
  if (path == "/" || path == "/index.html") {
    if (!get) return RespondError(responder, api::MethodNotAllowed(request.method, path));
    responder->Respond(200,
                       OwnAnswerHeaders({{"content-type", "text/html; charset=utf-8"},
                                         {"cache-control", "no-cache"},
                                         {"content-security-policy",
                                          "default-src 'self'; style-src 'unsafe-inline'; "
                                          "script-src 'unsafe-inline'; connect-src *"}}),
                       std::string(ConsoleHtml()));
    return;
  }
  if (IsKeyAdminPath(path)) return HandleKeyAdmin(std::move(request), std::move(responder));
  if (path == "/debug/faults" && config_.debug_faults) {
    if (!post) return RespondError(responder, api::MethodNotAllowed(request.method, path));
    return HandleFaults(std::move(request), std::move(responder));
  }
  RespondError(responder, api::NotFound(path));
}

bool Daemon::AuthenticateClient(const http::Request& request,
                                const std::shared_ptr<http::Responder>& responder, Tenant* out) {
  if (!api_keys_) return true;
  const std::shared_ptr<const ApiKeys> keys = api_keys_->Current();
  const std::optional<std::string_view> token =
      BearerToken(request.Header("authorization").value_or(""));
  const Tenant* tenant = token ? keys->Authenticate(*token) : nullptr;
  if (tenant == nullptr) {
    tenant_metrics_->CountAuthFailure();
    RespondError(responder,
                 api::Unauthorized(token ? "Incorrect API key provided."
                                         : "You didn't provide an API key: send it as "
                                           "'Authorization: Bearer KEY'."),
                 {{"www-authenticate", "Bearer"}});
    return false;
  }
  *out = *tenant;
  return true;
}

void Daemon::HandleFaults(http::Request request, std::shared_ptr<http::Responder> responder) {
  // The keyring is the core thread's: the admin check runs there.
  asio::post(core_io_, [this, request = std::move(request), responder = std::move(responder)] {
    if (key_admin_) {
      if (std::optional<KeyAdminResponse> refused = key_admin_->Authenticate(request)) {
        metrics_.CountHttpError(refused->status);
        return responder->Respond(refused->status, JsonHeaders(), refused->body);
      }
    } else if (!config_.admin_allow_remote && !IsLoopbackRemote(request.remote)) {
      return RespondError(responder, api::Forbidden("/debug/faults is served to loopback only"));
    }
    ApplyFaults(request, responder);
  });
}

void Daemon::ApplyFaults(const http::Request& request,
                         const std::shared_ptr<http::Responder>& responder) {
  // Each key present replaces its setting: "block" (gossip to and from these addresses is
  // dropped), "delay_ms" (every gossip message and forward this node sends waits this long),
  // "loss" (each gossip datagram it sends is lost with this probability) and "engine_slowdown"
  // (the sim engine's iterations take this many times their modelled time; 1 restores). Nothing
  // is applied unless every key is valid.
  nlohmann::json j = nlohmann::json::parse(request.body, nullptr, /*allow_exceptions=*/false);
  const bool any = j.is_object() && (j.contains("block") || j.contains("delay_ms") ||
                                     j.contains("loss") || j.contains("engine_slowdown"));
  if (j.is_discarded() || !any) {
    return RespondError(responder,
                        api::InvalidRequest("block",
                                            "expected any of {\"block\": [\"host:port\", ...], "
                                            "\"delay_ms\": ms, \"loss\": p, "
                                            "\"engine_slowdown\": factor}"));
  }
  Faults next = faults_;
  if (j.contains("block")) {
    if (!j["block"].is_array()) {
      return RespondError(responder, api::InvalidRequest("block", "expected [\"host:port\", ...]"));
    }
    next.block.clear();
    for (const auto& a : j["block"]) {
      if (!a.is_string() || !ParseHostPort(a.get<std::string>()).ok()) {
        return RespondError(responder, api::InvalidRequest("block", "addresses are \"host:port\""));
      }
      next.block.push_back(a.get<std::string>());
    }
  }
  const nlohmann::json delay = j.value("delay_ms", nlohmann::json(faults_.delay_ms));
  if (!delay.is_number() || !(delay.get<double>() >= 0) || delay.get<double>() > 10000) {
    return RespondError(responder, api::InvalidRequest("delay_ms", "0 to 10000 ms"));
  }
  next.delay_ms = delay.get<double>();
  const nlohmann::json loss = j.value("loss", nlohmann::json(faults_.loss));
  if (!loss.is_number() || !(loss.get<double>() >= 0) || loss.get<double>() > 1) {
    return RespondError(responder, api::InvalidRequest("loss", "a probability, 0 to 1"));
  }
  next.loss = loss.get<double>();
  auto* sim = dynamic_cast<engine::SimEngine*>(engine_.get());
  const nlohmann::json slowdown = j.value("engine_slowdown", nlohmann::json(1.0));
  if (j.contains("engine_slowdown") && sim == nullptr) {
    return RespondError(responder, api::InvalidRequest("engine_slowdown", "not a sim engine"));
  }
  if (!slowdown.is_number() || !(slowdown.get<double>() >= 1) || slowdown.get<double>() > 1e6) {
    return RespondError(responder, api::InvalidRequest("engine_slowdown", "1 to 1e6"));
  }

  if (j.contains("block")) {
    transport_->SetBlocked(std::set<std::string>(next.block.begin(), next.block.end()));
  }
  if (j.contains("delay_ms") || j.contains("loss")) {
    transport_->SetLinkFaults(FromMillis(next.delay_ms), next.loss, rng_->NextU64());
    delayed_peer_client_->set_delay(FromMillis(next.delay_ms));
  }
  if (j.contains("engine_slowdown")) sim->SetSlowdown(slowdown.get<double>());
  faults_ = std::move(next);
  const nlohmann::json now = {{"block", faults_.block},
                              {"delay_ms", faults_.delay_ms},
                              {"loss", faults_.loss},
                              {"engine_slowdown", sim != nullptr ? sim->slowdown() : 1.0}};
  spdlog::warn("event=debug_faults node={} faults={}", node_id_, now.dump());
  responder->Respond(200, JsonHeaders(), now.dump());
}

void Daemon::HandleKeyAdmin(http::Request request, std::shared_ptr<http::Responder> responder) {
  asio::post(core_io_, [this, request = std::move(request), responder = std::move(responder)] {
    const KeyAdminResponse r = key_admin_ ? key_admin_->Handle(request) : KeyAdmin::InsecureNode();
    if (r.status >= 400) metrics_.CountHttpError(r.status);
    responder->Respond(r.status, JsonHeaders(), r.body);
  });
}

void Daemon::HandleCompletion(api::Endpoint endpoint, http::Request request,
                              std::shared_ptr<http::Responder> responder) {
  if (draining_) return RespondError(responder, api::Unavailable("this node is shutting down"));
  const bool hop = request.Header(http::kHopHeader).has_value();
  if (hop && mutual_tls_) {
    // The TLS layer verified the certificate against the cluster CA; it must name the sender.
    const std::string_view origin = request.Header(http::kOriginHeader).value_or("");
    if (request.tls_peer_id.empty() || request.tls_peer_id != origin) {
      metrics_.CountPeerCertificateRefusal();
      if (const std::optional<uint64_t> held_back =
              auth_log_limiter_.Admit(LogRateLimiter::Clock::now())) {
        spdlog::warn(
            "event=peer_certificate_refused remote={} certificate_node={} origin={} "
            "suppressed={}",
            LogField(request.remote), LogField(request.tls_peer_id), LogField(origin), *held_back);
      }
      return RespondError(
          responder, api::Forbidden(request.tls_peer_id.empty()
                                        ? "a hop request needs a node certificate of the cluster CA"
                                        : "the client certificate names another node than the "
                                          "sender"));
    }
  }
  if (hop) {
    const PeerAuthenticator::Verdict v =
        auth_->Verify(request.Header(http::kPeerAuthHeader).value_or(""),
                      {request.method, request.target, request.body,
                       request.Header(http::kOriginHeader).value_or(""), node_id_,
                       request.Header(http::kTenantHeader).value_or("")},
                      UnixMillisNow());
    if (v != PeerAuthenticator::Verdict::kOk) {
      metrics_.CountPeerAuthFailure();
      // Every field from outside is escaped and cut, and a flood is logged a few lines a second.
      if (const std::optional<uint64_t> held_back =
              auth_log_limiter_.Admit(LogRateLimiter::Clock::now())) {
        spdlog::warn("event=peer_auth_failed remote={} reason={} origin={} suppressed={}",
                     LogField(request.remote), VerdictName(v),
                     LogField(request.Header(http::kOriginHeader).value_or("")), *held_back);
      }
      return RespondError(responder,
                          api::Forbidden("a hop request needs a valid peer authenticator (" +
                                         std::string(VerdictName(v)) + ")"));
    }
  }
  // The tenant: from the API key of a client, or from a peer whose authenticator (checked above)
  // binds it; never from a client's header. Limits apply where a request enters the cluster.
  Tenant tenant;
  if (hop) {
    const std::string_view name = request.Header(http::kTenantHeader).value_or("");
    if (ValidTenantName(name)) {
      tenant.name = std::string(name);
      if (api_keys_) {
        const std::shared_ptr<const ApiKeys> keys = api_keys_->Current();
        if (const Tenant* known = keys->FindTenant(name)) tenant.shared_cache = known->shared_cache;
      }
    }
  } else {
    if (!AuthenticateClient(request, responder, &tenant)) return;
    if (!tenant.name.empty()) {
      tenant_metrics_->CountRequest(tenant.name);
      const TenantLimiter::Verdict v =
          tenant_limiter_.AdmitRequest(tenant.name, tenant.limits, scheduler_->clock().Now());
      if (!v.ok) {
        tenant_metrics_->CountRateLimited(tenant.name, v.limit);
        return RespondError(responder, api::TenantRateLimited("requests per second"),
                            {{"retry-after", RetryAfterSeconds(v.retry_after)}});
      }
    }
  }
  std::variant<api::ApiRequest, api::ApiError> parsed =
      api::ParseRequest(endpoint, request.body, limits_);
  if (auto* e = std::get_if<api::ApiError>(&parsed)) return RespondError(responder, *e);
  api::ApiRequest& req = std::get<api::ApiRequest>(parsed);
  // Any model some live member serves is accepted: the node resolves it, and answers 404
  // model_not_found (CompletionSink) when no live member serves it.
  if (in_flight_.fetch_add(1) >= static_cast<int64_t>(config_.max_concurrent_requests)) {
    in_flight_.fetch_sub(1);
    return RespondError(responder, api::TooManyRequests(), {{"retry-after", "1"}});
  }
  // The cache namespace: the tenant's own (or the shared one it opted into), split by the
  // request's cache_salt.
  const uint64_t cache_namespace =
      namespace_keyer_->NamespaceId(tenant.shared_cache ? "" : tenant.name, req.cache_salt);
  // Engine tokenization answers on an I/O thread later; bytes keying answers at once. The
  // request lives on the heap meanwhile, so the views Tokenize reads stay valid.
  auto parsed_completion = std::make_shared<ParsedCompletion>(
      ParsedCompletion{endpoint, hop, std::move(req), std::move(request), std::move(responder),
                       scheduler_->clock().Now(), std::move(tenant), cache_namespace});
  const ParsedCompletion& pc = *parsed_completion;
  prompt_tokenizer_->Tokenize(endpoint, pc.req.prompt, pc.request.body,
                              [this, c = std::move(parsed_completion)](PromptTokens tokens) {
                                SubmitTokenized(*c, std::move(tokens));
                              });
}

void Daemon::SubmitTokenized(ParsedCompletion& c, PromptTokens prompt_tokens) {
  const api::Endpoint endpoint = c.endpoint;
  const bool hop = c.hop;
  api::ApiRequest& req = c.req;
  http::Request& request = c.request;
  std::shared_ptr<http::Responder>& responder = c.responder;
  std::vector<uint32_t> tokens = std::move(prompt_tokens.tokens);
  if (std::optional<api::ApiError> e = api::CheckContext(static_cast<uint32_t>(tokens.size()),
                                                         req.max_tokens, limits_, endpoint)) {
    in_flight_.fetch_sub(1);
    return RespondError(responder, *e);
  }
  if (!hop && !c.tenant.name.empty()) {
    const uint64_t cost = tokens.size() + uint64_t{req.max_tokens};
    const TenantLimiter::Verdict v = tenant_limiter_.AdmitTokens(c.tenant.name, c.tenant.limits,
                                                                 cost, scheduler_->clock().Now());
    if (!v.ok) {
      in_flight_.fetch_sub(1);
      tenant_metrics_->CountRateLimited(c.tenant.name, v.limit);
      return RespondError(responder, api::TenantRateLimited("tokens per minute"),
                          {{"retry-after", RetryAfterSeconds(v.retry_after)}});
    }
    tenant_metrics_->CountTokens(c.tenant.name, cost);
  }
  metrics_.in_flight().Set(static_cast<double>(in_flight_.load()));

  const uint64_t id = next_request_id_.fetch_add(1);
  CompletionOptions o;
  o.meta.endpoint = endpoint;
  o.meta.id = endpoint == api::Endpoint::kCompletions ? "cmpl-" : "chatcmpl-";
  AppendHex(generation_ & 0xffffffffffff, &o.meta.id);
  o.meta.id.push_back('-');
  AppendHex(id, &o.meta.id);
  o.meta.created = std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  o.meta.model = req.model;  // answers name the model as the client asked for it
  o.meta.system_fingerprint = node_id_;
  o.stream = req.stream;
  o.include_usage = req.include_usage;
  o.hop = hop;
  o.max_tokens = req.max_tokens;
  o.node_id = node_id_;

  PeerRequest pr;
  pr.id = id;
  pr.prompt = std::move(tokens);
  pr.max_output_tokens = req.max_tokens;
  pr.forwarded = hop;
  pr.cache_namespace = c.cache_namespace;
  pr.tenant = c.tenant.name;
  pr.model = req.model;
  if (hop) {  // peer-authenticated above; a bad value only means "serve it"
    if (auto above = request.Header(http::kBounceAboveHeader)) {
      pr.bounce_above_ms = http::ParseBounceAboveMs(*above).value_or(0);
    }
    pr.origin = std::string(request.Header(http::kOriginHeader).value_or("").substr(0, 256));
    pr.origin_request = ParseRequestId(request.Header(http::kRequestIdHeader).value_or(""));
  }
  pr.api_path = request.path;
  pr.api_body = std::move(request.body);
  pr.stream = req.stream;
  const TimePoint arrived = c.arrived;
  // Submit is queued (or, on the core thread itself with --io-threads 0, run) before OnClose is
  // registered, so a cancel always finds its request.
  asio::dispatch(core_io_,
                 [this, id, pr = std::move(pr), o = std::move(o), responder, arrived]() mutable {
                   Submit(id, std::move(pr), std::move(o), std::move(responder), arrived);
                 });
  responder->OnClose([this, id] { asio::post(core_io_, [this, id] { CancelRequest(id); }); });
}

void Daemon::Submit(uint64_t id, PeerRequest request, CompletionOptions options,
                    std::shared_ptr<http::Responder> responder, TimePoint arrived) {
  const bool hop = options.hop;
  if (hop && mutual_tls_ && !IsLiveMember(request.origin)) {
    // Its certificate named it (checked on arrival), but a node this one does not see as a live
    // member (never joined, dead, left) gets no service.
    in_flight_.fetch_sub(1);
    metrics_.CountPeerCertificateRefusal();
    return RespondError(responder,
                        api::Forbidden("the sender is not a live member of this cluster"));
  }
  auto on_first = [this, hop, arrived,
                   origin = hop ? request.origin : std::string()](const PeerFirstToken& first) {
    if (hop) {
      status_board_->OnServedForPeer(origin);
      return;
    }
    const Duration ttft = scheduler_->clock().Now() - arrived;
    metrics_.ObserveTtft(ttft);
    status_board_->OnClientFirstToken(first.served_by, first.prompt_tokens, first.cached_tokens,
                                      ToMillis(ttft));
  };
  auto on_done = [this, id, hop](int status, bool /*failed*/, bool bounced) {
    // A bounce is counted by hearsay_peer_requests_bounced_total, not as an error.
    if (status >= 400 && !bounced) metrics_.CountHttpError(status);
    if (status >= 400 && !hop) status_board_->OnClientFailed();
    FinishRequest(id);
  };
  auto sink = std::make_unique<CompletionSink>(std::move(options), std::move(responder), tokenizer_,
                                               on_first, on_done);
  CompletionSink* raw = sink.get();
  sinks_[id] = std::move(sink);
  node_->Submit(std::move(request), raw);
}

void Daemon::FinishRequest(uint64_t id) {
  in_flight_.fetch_sub(1);
  metrics_.in_flight().Set(static_cast<double>(in_flight_.load()));
  // Called from inside the sink's callback: free it after the callback returns.
  scheduler_->Post([this, id] { sinks_.erase(id); });
}

void Daemon::CancelRequest(uint64_t id) {
  auto it = sinks_.find(id);
  if (it == sinks_.end() || it->second->done()) return;
  node_->Cancel(id, it->second.get());
  it->second->Abandon();
  sinks_.erase(it);
  in_flight_.fetch_sub(1);
  metrics_.in_flight().Set(static_cast<double>(in_flight_.load()));
}

nlohmann::json Daemon::HealthJson() const {
  std::lock_guard<std::mutex> lock(health_mu_);
  nlohmann::json j = {{"status", health_.degraded ? "degraded" : "ok"}};
  if (!health_.issues.empty()) {
    nlohmann::json issues = nlohmann::json::array();
    for (const HealthIssue& i : health_.issues) {
      issues.push_back({{"code", i.code}, {"message", i.message}, {"degrading", i.degrading}});
    }
    j["issues"] = std::move(issues);
  }
  return j;
}

std::string Daemon::RenderCluster() const {
  const TimePoint now = scheduler_->clock().Now();
  const engine::EngineLoad l = engine_->Load();
  const gossip::Node& g = node_->gossip();
  nlohmann::json self = {
      {"id", node_id_},
      // Generations exceed 2^53 (JavaScript's and jq's exact integers): sent as decimal strings.
      {"generation", std::to_string(generation_)},
      {"incarnation", g.incarnation()},
      {"address", gossip_address_},
      {"api_address", api_address_},
      {"overloaded", g.overloaded()},
      {"local_health", g.local_health()},
      {"load",
       {{"queue_depth", l.waiting_requests},
        {"running", l.running_requests},
        {"kv_used_tokens", l.kv_used_tokens},
        {"kv_capacity_tokens", l.kv_capacity_tokens},
        {"prefill_ms_per_token", l.prefill_ms_per_token}}},
      {"cache_entries", g.own_store().live_count()},
      {"draining", draining_.load()},
  };
  const nlohmann::json health = HealthJson();
  self["health"] = health["status"];
  if (health.contains("issues")) self["issues"] = health["issues"];
  nlohmann::json members = nlohmann::json::array();
  for (const gossip::MemberView& m : g.Members()) {
    const gossip::OriginStore* store = g.PeerStore(m.id);
    nlohmann::json j = {
        {"id", m.id},
        {"state", gossip::MemberStateName(m.state)},
        {"address", m.address},
        {"api_address", m.api_address},
        {"generation", std::to_string(m.generation)},
        {"incarnation", m.incarnation},
        {"overloaded", m.has_load && m.load.overloaded},
        {"cache_entries", store ? store->live_count() : 0},
        {"known_version", m.known_version},
        {"state_age_ms", ToMillis(now - m.state_since)},
    };
    if (m.has_load) {
      j["load"] = {{"queue_depth", m.load.queue_depth},
                   {"running", m.load.running},
                   {"kv_used_tokens", m.load.kv_used_tokens},
                   {"kv_capacity_tokens", m.load.kv_capacity_tokens},
                   {"prefill_ms_per_token", m.load.prefill_ms_per_token}};
      j["view_age_ms"] = ToMillis(now - m.load_updated);
    } else {
      j["load"] = nullptr;
      j["view_age_ms"] = nullptr;
    }
    j["rtt_ms"] = m.rtt_ms ? nlohmann::json(*m.rtt_ms) : nlohmann::json(nullptr);
    members.push_back(std::move(j));
  }
  const node::NodeStats& s = node_->stats();
  nlohmann::json stats = {{"client_requests", s.client_requests},
                          {"served_local", s.served_local},
                          {"forwarded", s.forwarded_out},
                          {"forward_attempts", s.forward_attempts},
                          {"forward_failures", s.forward_failures},
                          {"served", s.served},
                          {"served_cached_tokens", s.served_cached_tokens},
                          {"failed", s.failed},
                          {"cancelled", s.cancelled}};
  nlohmann::json out = {
      {"self", self}, {"policy", config_.policy}, {"members", members}, {"stats", stats}};
  return out.dump();
}

namespace {

// A member's standing in this node's judgement of its claims (node/peer_trust.h), and the work
// listers report there that its own reports leave out (node/shared_backlog.h).
nlohmann::json TrustJson(const node::PeerTrustView& v, const node::SharedBacklog& reported,
                         const std::vector<gossip::BacklogEntry>& own_list) {
  double listed = 0;
  for (const gossip::BacklogEntry& e : own_list) {
    if (e.member == v.member) listed = e.work_ms;
  }
  return {
      {"trust", v.trust()},
      {"cache_trust", v.cache_trust},
      {"time_trust", v.time_trust},
      {"delivery", v.delivery},
      {"ttft_ratio", v.ttft_ratio >= 0 ? nlohmann::json(v.ttft_ratio) : nlohmann::json(nullptr)},
      {"samples", v.samples},
      {"listed_work_ms", listed},
      {"reported_work_ms", reported.WorkMs(v.member)}};
}

nlohmann::json LoadJson(uint32_t queue_depth, uint32_t running, double queue_wait_ms,
                        uint64_t kv_used, uint64_t kv_capacity, uint64_t kv_pinned,
                        double prefill_ms_per_token) {
  return {{"queue_depth", queue_depth},
          {"running", running},
          {"queue_wait_ms", queue_wait_ms},
          {"kv_used_tokens", kv_used},
          {"kv_capacity_tokens", kv_capacity},
          {"kv_pinned_tokens", kv_pinned},
          {"prefill_ms_per_token", prefill_ms_per_token}};
}

// A member's models for /status: the canonical names, in service order.
nlohmann::json ServiceModelsJson(const gossip::Service& service) {
  nlohmann::json out = nlohmann::json::array();
  for (const gossip::EngineService& e : service.engines) out.push_back(e.model);
  return out;
}

}  // namespace

std::string RenderPoolModels(const std::vector<node::PoolModel>& models, int64_t created) {
  nlohmann::json data = nlohmann::json::array();
  for (const node::PoolModel& m : models) {
    nlohmann::json e = {
        {"id", m.model},
        {"object", "model"},
        {"created", created},
        {"owned_by", "hearsay"},
        {"live_nodes", m.live_members},
        {"served_here", m.served_here},
        {"aliases", m.aliases},
        {"context_length",
         m.context_tokens == 0 ? nlohmann::json(nullptr) : nlohmann::json(m.context_tokens)}};
    data.push_back(std::move(e));
    // Adapters as vLLM lists them: entries of their own with the model as `parent`.
    for (size_t i = 0; i < m.adapters.size() && i < kMaxListedAdapters; ++i) {
      data.push_back({{"id", m.adapters[i]},
                      {"object", "model"},
                      {"created", created},
                      {"owned_by", "hearsay"},
                      {"parent", m.model}});
    }
  }
  return nlohmann::json{{"object", "list"}, {"data", std::move(data)}}.dump();
}

std::string Daemon::RenderStatus() {
  const TimePoint now = scheduler_->clock().Now();
  const node::SharedBacklog reported = node_->ReportedBacklog(now);
  const engine::EngineLoad l = engine_->Load();
  const gossip::Node& g = node_->gossip();
  const nlohmann::json health = HealthJson();
  nlohmann::json members = nlohmann::json::array();
  members.push_back({
      {"id", node_id_},
      {"self", true},
      {"state", draining_ ? "leaving" : "alive"},
      {"generation", std::to_string(generation_)},
      {"address", gossip_address_},
      {"api_address", api_address_},
      {"rtt_ms", nullptr},
      {"overloaded", g.overloaded()},
      {"models", ServiceModelsJson(node_->service())},
      {"service", gossip::ServiceSummary(node_->service())},
      {"report_age_ms", 0},
      {"cache_entries", g.own_store().live_count()},
      {"load", LoadJson(l.waiting_requests, l.running_requests, ToMillis(l.estimated_queue_wait),
                        l.kv_used_tokens, l.kv_capacity_tokens, l.kv_pinned_tokens,
                        l.prefill_ms_per_token)},
      {"trust", TrustJson(node_->trust().Of(node_id_), reported, node_->own_backlog())},
  });
  double view_age_ms = 0;
  int suspect = 0;
  for (const gossip::MemberView& m : g.Members()) {
    nlohmann::json j = {
        {"id", m.id},
        {"self", false},
        {"state", gossip::MemberStateName(m.state)},
        {"generation", std::to_string(m.generation)},
        {"address", m.address},
        {"api_address", m.api_address},
        {"rtt_ms", m.rtt_ms ? nlohmann::json(*m.rtt_ms) : nlohmann::json(nullptr)},
        {"overloaded", m.has_load && m.load.overloaded},
        {"models", nullptr},
        {"service", nullptr},
        {"cache_entries", g.PeerStore(m.id) ? g.PeerStore(m.id)->live_count() : 0},
        {"state_age_ms", ToMillis(now - m.state_since)},
        {"trust", TrustJson(node_->trust().Of(m.id), reported, node_->own_backlog())},
    };
    if (std::optional<gossip::Service> service = node_->MemberService(m.id)) {
      j["models"] = ServiceModelsJson(*service);
      j["service"] = gossip::ServiceSummary(*service);
    }
    if (m.has_load) {
      const double age = ToMillis(now - m.load_updated);
      j["report_age_ms"] = age;
      j["load"] = LoadJson(m.load.queue_depth, m.load.running, m.load.queue_wait_us / 1000.0,
                           m.load.kv_used_tokens, m.load.kv_capacity_tokens,
                           m.load.running_context_tokens, m.load.prefill_ms_per_token);
      if (m.state == gossip::MemberState::kAlive) view_age_ms = std::max(view_age_ms, age);
    } else {
      j["report_age_ms"] = nullptr;
      j["load"] = nullptr;
    }
    if (m.state == gossip::MemberState::kSuspect) ++suspect;
    members.push_back(std::move(j));
  }
  const node::NodeStats& s = node_->stats();
  nlohmann::json gossip = status_board_->RenderGossip();
  gossip["view_age_ms"] = view_age_ms;
  gossip["suspect_members"] = suspect;
  gossip["local_health"] = g.local_health();
  nlohmann::json out = {
      {"version", 1},
      {"node", node_id_},
      {"generation", std::to_string(generation_)},
      {"model", config_.model},
      {"policy", config_.policy},
      {"health", health["status"]},
      {"draining", draining_.load()},
      {"members", std::move(members)},
      {"routing", status_board_->RenderRouting()},
      {"decisions", status_board_->RenderDecisions()},
      {"gossip", std::move(gossip)},
      {"totals",
       {{"client_requests", s.client_requests},
        {"served_local", s.served_local},
        {"forwarded", s.forwarded_out},
        {"forward_failures", s.forward_failures},
        {"forwards_bounced", s.forwards_bounced},
        {"peer_requests_bounced", s.bounced},
        {"served", s.served},
        {"failed", s.failed},
        {"cancelled", s.cancelled},
        {"api_auth_failures", tenant_metrics_->auth_failures()}}},
      {"tenants", TenantsJson(tenant_metrics_->Snapshot())},
  };
  if (health.contains("issues")) out["issues"] = health["issues"];
  return out.dump();
}

}  // namespace hearsay::net
