#include "hearsay/net/daemon.h"

#include <sodium.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "hearsay/engine/cost_model.h"
#include "hearsay/gossip/types.h"
#include "hearsay/http/bounce_header.h"
#include "hearsay/http/host_port.h"
#include "hearsay/http/peer_headers.h"
#include "hearsay/net/engine_factory.h"
#include "hearsay/net/keyring_file.h"
#include "hearsay/net/log_guard.h"
#include "hearsay/net/logging_peer_client.h"
#include "hearsay/prefix/block_keys.h"
#include "hearsay/upstream/hosted_openai_engine.h"

namespace hearsay::net {

using http::FormatHostPort;
using http::HostPort;
using http::ParseHostPort;
namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

constexpr Duration kRefreshInterval = std::chrono::milliseconds(500);

std::string Hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0 || buf[0] == '\0') return "localhost";
  return buf;
}

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

bool IsUnspecified(const std::string& host) {
  boost::system::error_code ec;
  const asio::ip::address a = asio::ip::make_address(host, ec);
  return !ec && a.is_unspecified();
}

}  // namespace

// Concurrency hint 1 where one thread runs a context: asio then queues a post made on that thread
// privately, instead of locking and waking the reactor with a syscall.
Daemon::Daemon(DaemonConfig config)
    : config_(std::move(config)),
      core_io_(1),
      io_context_(config_.io_threads == 1 ? 1 : BOOST_ASIO_CONCURRENCY_HINT_DEFAULT),
      io_(config_.io_threads == 0 ? core_io_ : io_context_) {
  limits_.max_prompt_chars = config_.max_body_bytes;
  limits_.context_tokens = static_cast<uint32_t>(config_.context_tokens);
  limits_.max_output_tokens = static_cast<uint32_t>(config_.max_tokens);
  limits_.budget.max_members = config_.max_json_members;
  limits_.budget.max_array_items = config_.max_json_array_items;
  limits_.budget.max_depth = config_.max_json_depth;
}

Result<std::unique_ptr<Daemon>> Daemon::Create(DaemonConfig config) {
  HEARSAY_RETURN_IF_ERROR(config.Validate());
  std::unique_ptr<Daemon> d(new Daemon(std::move(config)));
  HEARSAY_RETURN_IF_ERROR(d->Init());
  return d;
}

Status Daemon::Init() {
  if (sodium_init() < 0) return InternalError("libsodium failed to initialise");
  const DaemonConfig& c = config_;
  // One thread runs the I/O context: its connections and exchanges need no strands.
  const bool io_one_thread = c.io_threads <= 1;

  // Keys first: a bad key file must stop the node before anything binds.
  std::string key_source = "none (insecure)";
  if (!c.insecure) {
    HEARSAY_ASSIGN_OR_RETURN(StartupKeyring k,
                             LoadStartupKeyring(c.cluster_key_file, c.keyring_file));
    keyring_ = std::make_unique<gossip::Keyring>(std::move(k.keyring));
    key_source = std::move(k.source);
  }

  seed_ = c.seed != 0 ? c.seed : OsRandomSeed();
  rng_ = std::make_unique<Rng>(seed_);
  // A fresh generation per start, increasing across restarts: the wall clock in ns.
  generation_ = static_cast<Generation>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                            std::chrono::system_clock::now().time_since_epoch())
                                            .count());
  created_unix_ = std::chrono::duration_cast<std::chrono::seconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  scheduler_ = std::make_unique<AsioScheduler>(core_io_);

  // Sockets: gossip, then HTTP. Either failing (a port in use) fails the start.
  TransportOptions to;
  to.bind = c.gossip_listen;
  to.max_incoming_per_source = c.gossip_connections_per_source;
  to.max_datagrams_per_source_per_s = c.gossip_datagrams_per_source_per_s;
  if (c.gossip_inbound_frame_bytes != 0) to.max_inbound_frame_bytes = c.gossip_inbound_frame_bytes;
  HEARSAY_ASSIGN_OR_RETURN(transport_, UdpTcpTransport::Open(io_, core_io_, to));
  gossip_address_ = c.gossip_advertise.empty() ? transport_->local_address() : c.gossip_advertise;
  node_id_ = c.node_id.empty() ? Hostname() + ":" + std::to_string(transport_->port()) : c.node_id;

  http::ServerOptions so;
  so.listen = c.http_listen;
  so.max_header_bytes = c.max_header_bytes;
  so.max_body_bytes = c.max_body_bytes;
  so.header_timeout = std::chrono::milliseconds(c.header_timeout_ms);
  so.body_timeout = std::chrono::milliseconds(c.read_timeout_ms);
  so.idle_timeout = std::chrono::milliseconds(c.idle_timeout_ms);
  so.max_connections = c.max_connections;
  so.max_connections_per_client = c.max_connections_per_client;
  so.idle_timeout_under_pressure = std::chrono::milliseconds(c.idle_timeout_under_pressure_ms);
  so.one_thread = io_one_thread;
  HEARSAY_ASSIGN_OR_RETURN(
      server_,
      http::Server::Start(io_, so, [this](http::Request req, std::shared_ptr<http::Responder> r) {
        Handle(std::move(req), std::move(r));
      }));
  HEARSAY_ASSIGN_OR_RETURN(HostPort http_hp, ParseHostPort(c.http_listen));
  http_address_ = FormatHostPort(http_hp.host, server_->port());
  if (!c.http_advertise.empty()) {
    api_address_ = c.http_advertise;
  } else if (IsUnspecified(http_hp.host)) {
    // Listening on every interface: peers reach the API on the host they gossip with.
    HEARSAY_ASSIGN_OR_RETURN(HostPort g, ParseHostPort(gossip_address_));
    api_address_ = FormatHostPort(g.host, server_->port());
    if (IsUnspecified(g.host)) {
      spdlog::warn(
          "event=config_warning msg=\"http and gossip listen on all interfaces without "
          "an advertise address; peers cannot forward here; set --advertise-http\"");
    }
  } else {
    api_address_ = http_address_;
  }

  // Gossip security.
  Result<gossip::Sealer> sealer =
      c.insecure
          ? gossip::Sealer::CreateInsecureUnauthenticated(c.cluster_name, node_id_, generation_)
          : gossip::Sealer::Create(c.cluster_name, node_id_, generation_, keyring_.get());
  if (!sealer.ok()) return sealer.status();
  Result<gossip::Opener> opener =
      c.insecure ? gossip::Opener::CreateInsecureUnauthenticated(c.cluster_name)
                 : gossip::Opener::Create(c.cluster_name, keyring_.get());
  if (!opener.ok()) return opener.status();
  sealer_ = std::make_unique<gossip::Sealer>(std::move(*sealer));
  opener_ = std::make_unique<gossip::Opener>(std::move(*opener));
  framer_ = std::make_unique<gossip::EnvelopeFramer>(*sealer_, *opener_);
  auth_ = std::make_unique<PeerAuthenticator>(c.insecure ? PeerAuthenticator::Insecure()
                                                         : PeerAuthenticator(*keyring_));

  // Block keys: the namespace secret is the block-key secret file's key when given (it never
  // rotates), else the primary cluster key at start (BlockKeyer derives its own keys from either
  // with a distinct label), so clusters with different keys never share keys.
  std::string insecure_secret = "hearsay insecure namespace/" + c.cluster_name;
  std::optional<gossip::Keyring> block_key_file;
  if (!c.block_key_secret_file.empty()) {
    Result<gossip::Keyring> read = ReadKeyFile(c.block_key_secret_file);
    if (!read.ok()) {
      return Status(read.status().code(),
                    "security.block_key_secret_file: " + read.status().message());
    }
    block_key_file = std::move(read).value();
  }
  std::span<const uint8_t> secret =
      block_key_file ? std::span<const uint8_t>(block_key_file->primary()->bytes())
      : c.insecure
          ? std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(insecure_secret.data()),
                                     insecure_secret.size())
          : std::span<const uint8_t>(keyring_->primary()->bytes());
  prefix::BlockKeyerOptions ko;
  ko.tokens_per_block = c.block_size;
  HEARSAY_ASSIGN_OR_RETURN(prefix::BlockKeyer keyer,
                           prefix::BlockKeyer::Create(secret, c.model, KeyNamespace(c), ko));
  HEARSAY_ASSIGN_OR_RETURN(KeyingConfig keying, ResolveKeying(c));
  HEARSAY_ASSIGN_OR_RETURN(prompt_tokenizer_, PromptTokenizer::Create(&io_, std::move(keying)));
  keying_metrics_ = std::make_unique<KeyingMetrics>(metrics_.mutable_registry());

  // Forwarding.
  http::ClientOptions peer_client_options;
  peer_client_options.one_thread = io_one_thread;
  http_client_ = std::make_unique<http::Client>(io_, peer_client_options);
  auto post_to_core = [this](std::function<void()> fn) { asio::post(core_io_, std::move(fn)); };
  http::PeerClientOptions po;
  po.auth_token = auth_->token();
  po.origin_node_id = node_id_;
  po.first_token_timeout = std::chrono::milliseconds(c.forward_timeout_ms);
  peer_client_ = std::make_unique<http::HttpPeerClient>(*http_client_, post_to_core, po);
  logging_peer_client_ = std::make_unique<LoggingPeerClient>(*peer_client_, node_id_);
  if (!c.insecure) {
    KeyAdminOptions ka{c.keyring_file, c.admin_allow_remote, node_id_};
    // Runs on the core thread, where the peer client lives.
    key_admin_ =
        std::make_unique<KeyAdmin>(*keyring_, std::move(ka), [this](const gossip::Keyring& ring) {
          auth_->Update(ring);
          peer_client_->SetAuthToken(auth_->token());
        });
  }

  // Engine and node.
  EngineEnv env;
  env.scheduler = scheduler_.get();
  env.keyer = &keyer;
  env.seed = rng_->NextU64();
  env.io = &io_;
  env.io_one_thread = io_one_thread;
  env.post_to_core = post_to_core;
  // The engine's HTTP client reports only from I/O handlers, never inside a call into it, so on
  // the core thread itself (--io-threads 0) its events run at once instead of queued.
  env.deliver_to_core = [this](std::function<void()> fn) {
    asio::dispatch(core_io_, std::move(fn));
  };
  HEARSAY_ASSIGN_OR_RETURN(engine_, MakeEngine(c, std::move(env)));
  if (auto* hosted = dynamic_cast<upstream::HostedOpenAiEngine*>(engine_.get())) {
    openai_engine_ = &hosted->openai();
  }
  if (KvEventsEngine() != nullptr) {
    kv_events_metrics_ = std::make_unique<KvEventsMetrics>(metrics_.mutable_registry());
  }

  node::NodeOptions no;
  no.id = node_id_;
  no.generation = generation_;
  no.address = gossip_address_;
  no.gossip.api_address = api_address_;
  no.policy = c.policy;
  no.policy_options.host = route::Host::kDaemon;
  // Gossip draws from rng_ on timers: routing draws from its own stream, so that the same seed
  // and the same requests give the same choices.
  no.policy_options.decision_seed = rng_->NextU64();
  if (c.engine == "sim") {
    HEARSAY_ASSIGN_OR_RETURN(engine::CostModel cm, engine::CostModel::FromPreset(c.engine_preset));
    const engine::CostParams& p = cm.params();
    no.policy_options.cost = {p.t0_ms, p.a_ms_per_token, p.b_ms_per_token2, p.d1_ms_per_seq,
                              p.d2_ms_per_ctx_token};
  } else {
    // An upstream engine's speed is only known by measuring it (a CPU llama.cpp is ~100x slower
    // per token than the default model): without this, cache savings would be priced at GPU speed
    // against real queue waits, and routing would all but ignore the caches.
    no.price_by_measured_prefill = true;
  }
  HEARSAY_ASSIGN_OR_RETURN(
      node_, node::Node::Create(std::move(no), *engine_, keyer, *scheduler_, *rng_, *transport_,
                                *logging_peer_client_, framer_.get()));
  transport_->Start(&node_->gossip_sink());

  // Threads, then join the cluster on the core thread.
  core_work_ = std::make_unique<asio::executor_work_guard<asio::io_context::executor_type>>(
      core_io_.get_executor());
  io_work_ = std::make_unique<asio::executor_work_guard<asio::io_context::executor_type>>(
      io_.get_executor());
  core_thread_ = std::thread([this] { core_io_.run(); });
  for (uint64_t i = 0; i < c.io_threads; ++i) io_threads_.emplace_back([this] { io_.run(); });
  RunOnCore([this] {
    node_->Start(config_.join);
    RefreshTick();
  });

  if (c.insecure) {
    spdlog::warn(
        "event=insecure msg=\"INSECURE: no cluster key; gossip is neither authenticated "
        "nor encrypted and peer requests are not authenticated; anyone who can reach "
        "{} and {} can join this cluster and submit forwarded requests\"",
        gossip_address_, http_address_);
  }
  spdlog::info(
      "event=start node={} generation={} http={} gossip={} api_address={} seed={} "
      "keys={} key_source=\"{}\" {}",
      node_id_, generation_, http_address_, gossip_address_, api_address_, seed_,
      keyring_ ? keyring_->size() : 0, key_source, c.Describe());
  return OkStatus();
}

Daemon::~Daemon() {
  if (!stopped_.exchange(true)) StopThreads();
}

void Daemon::RunOnCore(std::function<void()> fn) {
  std::promise<void> done;
  std::future<void> f = done.get_future();
  asio::post(core_io_, [&] {
    fn();
    done.set_value();
  });
  // Bounded: the core thread runs short tasks only.
  f.wait_for(5s);
}

bool Daemon::Shutdown() {
  if (stopped_.exchange(true)) return true;
  draining_ = true;
  spdlog::info("event=drain node={} in_flight={} timeout_ms={}", node_id_, in_flight_.load(),
               config_.drain_timeout_ms);
  if (server_) server_->StopAccepting();
  if (node_)
    RunOnCore([this] {
      leaving_ = true;
      node_->Leave();
    });
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(config_.drain_timeout_ms);
  while (in_flight_.load() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  const bool drained = in_flight_.load() == 0;
  // Let the goodbye messages leave the sockets.
  std::this_thread::sleep_for(50ms);
  spdlog::info("event=stop node={} drained={} abandoned={}", node_id_, drained, in_flight_.load());
  StopThreads();
  return drained;
}

void Daemon::StopThreads() {
  if (server_) server_->Close();
  if (transport_) transport_->Close();
  if (core_thread_.joinable()) {
    RunOnCore([this] {
      if (transport_) transport_->DetachSink();
      for (auto& [id, sink] : sinks_) sink->Abandon();
    });
  }
  // Closing sockets posts work onto the I/O strands; give it a moment before stopping.
  std::this_thread::sleep_for(20ms);
  core_work_.reset();
  io_work_.reset();
  core_io_.stop();
  io_.stop();
  if (core_thread_.joinable()) core_thread_.join();
  for (std::thread& t : io_threads_) {
    if (t.joinable()) t.join();
  }
  io_threads_.clear();
  // Destroy the core objects here (the threads are gone), newest first.
  server_.reset();
  sinks_.clear();
  node_.reset();
  engine_.reset();
  logging_peer_client_.reset();
  peer_client_.reset();
  http_client_.reset();
  prompt_tokenizer_.reset();
  transport_.reset();
}

void Daemon::RespondError(const std::shared_ptr<http::Responder>& responder, const api::ApiError& e,
                          http::Headers extra) {
  metrics_.CountHttpError(e.http_status);
  http::Headers h = JsonHeaders();
  for (auto& kv : extra) h.push_back(std::move(kv));
  responder->Respond(e.http_status, std::move(h), api::RenderError(e));
}

void Daemon::Handle(http::Request request, std::shared_ptr<http::Responder> responder) {
  const std::string& path = request.path;
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
    nlohmann::json j = {
        {"status", draining_ ? "draining" : "ok"}, {"node", node_id_}, {"generation", generation_}};
    if (draining_) metrics_.CountHttpError(503);
    responder->Respond(draining_ ? 503 : 200, JsonHeaders(), j.dump());
    return;
  }
  if (path == "/v1/models") {
    if (!get) return RespondError(responder, api::MethodNotAllowed(request.method, path));
    const std::string models[] = {config_.model};
    responder->Respond(200, JsonHeaders(), api::RenderModels(models, created_unix_, "hearsay"));
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
        responder->Respond(200, {{"content-type", "text/plain; version=0.0.4; charset=utf-8"}},
                           metrics_.Render());
      } else {
        responder->Respond(200, JsonHeaders(), RenderCluster());
      }
    });
    return;
  }
  if (IsKeyAdminPath(path)) return HandleKeyAdmin(std::move(request), std::move(responder));
  if (path == "/debug/faults" && config_.debug_faults) {
    if (!post) return RespondError(responder, api::MethodNotAllowed(request.method, path));
    return HandleFaults(std::move(request), std::move(responder));
  }
  RespondError(responder, api::NotFound(path));
}

bool Daemon::AdminAllowed(const http::Request& request) const {
  if (!config_.admin_allow_remote && !IsLoopbackRemote(request.remote)) return false;
  if (!keyring_) return true;  // insecure: loopback is all there is
  const std::string_view token = request.Header(kAdminTokenHeader).value_or("");
  for (const gossip::ClusterKey& key : keyring_->installed()) {
    const std::string expected = AdminToken(key);
    if (expected.size() == token.size() &&
        sodium_memcmp(expected.data(), token.data(), expected.size()) == 0) {
      return true;
    }
  }
  return false;
}

void Daemon::HandleFaults(http::Request request, std::shared_ptr<http::Responder> responder) {
  // The keyring is the core thread's: the admin check runs there.
  asio::post(core_io_, [this, request = std::move(request), responder = std::move(responder)] {
    if (!AdminAllowed(request)) {
      return RespondError(responder,
                          api::Forbidden("/debug/faults needs the admin token of an installed "
                                         "key (X-Hearsay-Admin-Token), from loopback"));
    }
    ApplyFaults(request, responder);
  });
}

void Daemon::ApplyFaults(const http::Request& request,
                         const std::shared_ptr<http::Responder>& responder) {
  nlohmann::json j = nlohmann::json::parse(request.body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("block") || !j["block"].is_array()) {
    return RespondError(responder,
                        api::InvalidRequest("block", "expected {\"block\": [\"host:port\", ...]}"));
  }
  std::set<std::string> blocked;
  for (const auto& a : j["block"]) {
    if (!a.is_string() || !ParseHostPort(a.get<std::string>()).ok()) {
      return RespondError(responder, api::InvalidRequest("block", "addresses are \"host:port\""));
    }
    blocked.insert(a.get<std::string>());
  }
  spdlog::warn("event=debug_faults node={} blocked={}", node_id_, j["block"].dump());
  transport_->SetBlocked(blocked);
  responder->Respond(200, JsonHeaders(), nlohmann::json{{"blocked", j["block"]}}.dump());
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
  if (hop && !auth_->Check(request.Header(http::kPeerAuthHeader).value_or(""))) {
    metrics_.CountPeerAuthFailure();
    // Every field from outside is escaped and cut, and a flood is logged a few lines a second.
    if (const std::optional<uint64_t> held_back =
            auth_log_limiter_.Admit(LogRateLimiter::Clock::now())) {
      spdlog::warn("event=peer_auth_failed remote={} origin={} suppressed={}",
                   LogField(request.remote),
                   LogField(request.Header(http::kOriginHeader).value_or("")), *held_back);
    }
    return RespondError(responder, api::Forbidden("a hop request needs a valid peer token"));
  }
  std::variant<api::ApiRequest, api::ApiError> parsed =
      api::ParseRequest(endpoint, request.body, limits_);
  if (auto* e = std::get_if<api::ApiError>(&parsed)) return RespondError(responder, *e);
  api::ApiRequest& req = std::get<api::ApiRequest>(parsed);
  if (req.model != config_.model) return RespondError(responder, api::UnknownModel(req.model));
  if (in_flight_.fetch_add(1) >= static_cast<int64_t>(config_.max_concurrent_requests)) {
    in_flight_.fetch_sub(1);
    return RespondError(responder, api::TooManyRequests(), {{"retry-after", "1"}});
  }
  // Engine tokenization answers on an I/O thread later; bytes keying answers at once. The
  // request lives on the heap meanwhile, so the views Tokenize reads stay valid.
  auto parsed_completion = std::make_shared<ParsedCompletion>(
      ParsedCompletion{endpoint, hop, std::move(req), std::move(request), std::move(responder),
                       scheduler_->clock().Now()});
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
  o.meta.model = config_.model;
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
  if (hop) {  // peer-authenticated above; a bad value only means "serve it"
    if (auto above = request.Header(http::kBounceAboveHeader)) {
      pr.bounce_above_ms = http::ParseBounceAboveMs(*above).value_or(0);
    }
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
  auto on_first = [this, hop, arrived](const PeerFirstToken&) {
    if (!hop) metrics_.ObserveTtft(scheduler_->clock().Now() - arrived);
  };
  auto on_done = [this, id](int status, bool /*failed*/) {
    if (status >= 400) metrics_.CountHttpError(status);
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

void Daemon::RefreshTick() {
  RefreshMetrics();
  LogMemberChanges();
  scheduler_->RunAfter(kRefreshInterval, [this] { RefreshTick(); });
}

void Daemon::RefreshMetrics() {
  metrics_.Refresh(*node_, engine_->Load(), transport_->counters(), server_->stats(),
                   server_->open_connections(), scheduler_->clock().Now());
  keying_metrics_->Refresh(prompt_tokenizer_->stats(), openai_engine_);
  if (const upstream::HostedOpenAiEngine* e = KvEventsEngine(); e && kv_events_metrics_) {
    kv_events_metrics_->Refresh(*e->kv_events(), e->kv_events_subscriber()->stats());
  }
}

const upstream::HostedOpenAiEngine* Daemon::KvEventsEngine() const {
  const auto* e = dynamic_cast<const upstream::HostedOpenAiEngine*>(engine_.get());
  return e != nullptr && e->kv_events() != nullptr ? e : nullptr;
}

void Daemon::LogMemberChanges() {
  for (const gossip::MemberView& m : node_->gossip().Members()) {
    auto [it, fresh] = logged_states_.try_emplace(m.id, m.state);
    if (!fresh && it->second == m.state) continue;
    it->second = m.state;
    const std::string_view state = gossip::MemberStateName(m.state);
    if (m.state == gossip::MemberState::kAlive) {
      spdlog::info(
          "event=member node={} peer={} state={} address={} api_address={} "
          "generation={}",
          node_id_, m.id, state, m.address, m.api_address, m.generation);
    } else {
      spdlog::warn("event=member node={} peer={} state={} address={} generation={}", node_id_, m.id,
                   state, m.address, m.generation);
    }
  }
}

std::string Daemon::RenderCluster() const {
  const TimePoint now = scheduler_->clock().Now();
  const engine::EngineLoad l = engine_->Load();
  const gossip::Node& g = node_->gossip();
  nlohmann::json self = {
      {"id", node_id_},
      {"generation", generation_},
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
  nlohmann::json members = nlohmann::json::array();
  for (const gossip::MemberView& m : g.Members()) {
    const gossip::OriginStore* store = g.PeerStore(m.id);
    nlohmann::json j = {
        {"id", m.id},
        {"state", gossip::MemberStateName(m.state)},
        {"address", m.address},
        {"api_address", m.api_address},
        {"generation", m.generation},
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

}  // namespace hearsay::net
