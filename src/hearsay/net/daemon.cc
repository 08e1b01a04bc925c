#include "hearsay/net/daemon.h"

#include <fmt/format.h>
#include <sodium.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>

#include "hearsay/engine/composite_engine.h"
#include "hearsay/engine/cost_model.h"
#include "hearsay/gossip/types.h"
#include "hearsay/http/host_port.h"
#include "hearsay/net/engine_factory.h"
#include "hearsay/net/keyring_file.h"
#include "hearsay/net/log_guard.h"
#include "hearsay/net/logging_peer_client.h"
#include "hearsay/net/node_service.h"
#include "hearsay/node/router_cost.h"
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
  // Keys first: a bad key file must stop the node before anything binds.
  std::string key_source = "none (insecure)";
  for (const std::string* file : {&config_.cluster_key_file, &config_.keyring_file,
                                  &config_.block_key_secret_file, &config_.signing_key_file}) {
    if (file->empty()) continue;
    if (std::optional<std::string> w = KeyFileModeWarning(*file)) {
      spdlog::warn("event=key_file_mode msg=\"{}\"", *w);
    }
  }
  if (!config_.insecure) {
    HEARSAY_ASSIGN_OR_RETURN(StartupKeyring k,
                             LoadStartupKeyring(config_.cluster_key_file, config_.keyring_file));
    keyring_ = std::make_unique<gossip::Keyring>(std::move(k.keyring));
    key_source = std::move(k.source);
  }

  seed_ = config_.seed != 0 ? config_.seed : OsRandomSeed();
  rng_ = std::make_unique<Rng>(seed_);
  // A fresh generation per start, increasing across restarts: the wall clock in ns.
  generation_ = static_cast<Generation>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                            std::chrono::system_clock::now().time_since_epoch())
                                            .count());
  created_unix_ = std::chrono::duration_cast<std::chrono::seconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  // Offloaded work (decoding an engine's /slots page) runs on the I/O threads, when there are any.
  scheduler_ =
      std::make_unique<AsioScheduler>(core_io_, config_.io_threads == 0 ? nullptr : &io_context_);

  HEARSAY_RETURN_IF_ERROR(OpenSockets());
  HEARSAY_RETURN_IF_ERROR(InitGossipSecurity());
  HEARSAY_ASSIGN_OR_RETURN(prefix::BlockKeyer keyer, MakeBlockKeyer());
  HEARSAY_ASSIGN_OR_RETURN(KeyingConfig keying, ResolveKeying(config_));
  HEARSAY_ASSIGN_OR_RETURN(prompt_tokenizer_, PromptTokenizer::Create(&io_, std::move(keying)));
  keying_metrics_ = std::make_unique<KeyingMetrics>(metrics_.mutable_registry());
  isolation_metrics_ = std::make_unique<IsolationMetrics>(metrics_.mutable_registry());
  IsolationOptions isolation;
  isolation.has_seeds = !config_.join.empty();
  isolation_ = std::make_unique<IsolationMonitor>(isolation, scheduler_->clock().Now());
  HEARSAY_RETURN_IF_ERROR(InitTenants(keyer));
  InitForwarding();
  HEARSAY_RETURN_IF_ERROR(InitEngineAndNode(keyer));
  StartThreads();
  LogStart(key_source);
  return OkStatus();
}

// Sockets: gossip, then HTTP. Either failing (a port in use) fails the start.
Status Daemon::OpenSockets() {
  const DaemonConfig& c = config_;
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
  so.one_thread = IoOneThread();
  if (!c.tls_cert.empty()) {
    // Every node of a pool serves TLS or none does: forwards speak what the API speaks.
    const http::TlsFiles files{c.tls_cert, c.tls_key, c.tls_ca};
    HEARSAY_ASSIGN_OR_RETURN(tls_, http::TlsContext::Load(files, http::TlsRole::kServer));
    HEARSAY_ASSIGN_OR_RETURN(peer_tls_, http::TlsContext::Load(files, http::TlsRole::kClient));
    mutual_tls_ = !c.tls_ca.empty();
    if (!mutual_tls_) {
      spdlog::warn(
          "event=config_warning msg=\"tls.cert without tls.ca: forwards to peers check their "
          "certificates against the system's trust store and their host names, and peer requests "
          "rely on the per-request authenticator alone; set tls.ca for mutual TLS\"");
    }
    so.tls = tls_;
    so.handshake_timeout = std::chrono::milliseconds(c.tls_handshake_timeout_ms);
  }
  HEARSAY_ASSIGN_OR_RETURN(
      server_,
      http::Server::Start(io_, so, [this](http::Request req, std::shared_ptr<http::Responder> r) {
        Handle(Listener::kApi, std::move(req), std::move(r));
      }));
  HEARSAY_ASSIGN_OR_RETURN(HostPort http_hp, ParseHostPort(c.http_listen));
  http_address_ = FormatHostPort(http_hp.host, server_->port());
  if (!c.admin_listen.empty()) {
    // The same limits and, with TLS, the same certificate (one TlsContext, reloaded once).
    http::ServerOptions admin = so;
    admin.listen = c.admin_listen;
    HEARSAY_ASSIGN_OR_RETURN(
        admin_server_,
        http::Server::Start(io_, admin,
                            [this](http::Request req, std::shared_ptr<http::Responder> r) {
                              Handle(Listener::kAdmin, std::move(req), std::move(r));
                            }));
    HEARSAY_ASSIGN_OR_RETURN(HostPort admin_hp, ParseHostPort(c.admin_listen));
    admin_address_ = FormatHostPort(admin_hp.host, admin_server_->port());
  }
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
  return OkStatus();
}

bool Daemon::IsLiveMember(const std::string& id) const {
  const std::optional<gossip::MemberView> m = node_->gossip().Member(id);
  return m &&
         (m->state == gossip::MemberState::kAlive || m->state == gossip::MemberState::kSuspect);
}

void Daemon::ReloadTls() {
  if (!tls_) return;
  Status s = tls_->Reload();
  if (s.ok()) s = peer_tls_->Reload();
  if (!s.ok()) {
    spdlog::error("event=tls_reload_failed msg=\"{}; the certificate in use stays\"", s.message());
    return;
  }
  spdlog::info("event=tls_reload cert={} msg=\"new connections use the new certificate\"",
               tls_->files().cert);
}

Status Daemon::InitGossipSecurity() {
  const DaemonConfig& c = config_;
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
  auth_ = std::make_unique<PeerAuthenticator>(
      c.insecure ? PeerAuthenticator::Insecure()
                 : PeerAuthenticator(*keyring_, AuthPurpose::kPeer));
  return OkStatus();
}

// Block keys: the namespace secret is the block-key secret file's key when given (it never
// rotates), else the primary cluster key at start (BlockKeyer derives its own keys from either
// with a distinct label), so clusters with different keys never share keys.
Result<prefix::BlockKeyer> Daemon::MakeBlockKeyer() const {
  const DaemonConfig& c = config_;
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
  return prefix::BlockKeyer::Create(secret, c.model, KeyNamespace(c), ko);
}

Status Daemon::InitTenants(const prefix::BlockKeyer& keyer) {
  namespace_keyer_.emplace(keyer);
  tenant_metrics_ = std::make_unique<TenantMetrics>(metrics_.mutable_registry());
  if (!config_.api_keys_file.empty()) {
    HEARSAY_ASSIGN_OR_RETURN(api_keys_, ApiKeyStore::Open(config_.api_keys_file));
  }
  return OkStatus();
}

void Daemon::PollApiKeys(bool force) {
  if (!api_keys_) return;
  const ApiKeyStore::ReloadResult r = api_keys_->Reload(force);
  if (r.outcome == ApiKeyStore::ReloadOutcome::kReloaded) {
    spdlog::info("event=api_keys_reloaded node={} keys={} tenants={}", node_id_, r.entries,
                 api_keys_->Current()->tenants().size());
  } else if (r.outcome == ApiKeyStore::ReloadOutcome::kFailed) {
    spdlog::error("event=api_keys_reload_failed node={} keys_in_use={} error=\"{}\"", node_id_,
                  r.entries, LogField(r.status.message()));
  }
}

void Daemon::InitForwarding() {
  const DaemonConfig& c = config_;
  http::ClientOptions peer_client_options;
  peer_client_options.one_thread = IoOneThread();
  peer_client_options.tls = peer_tls_;
  http_client_ = std::make_unique<http::Client>(io_, peer_client_options);
  http::PeerClientOptions po;
  po.sign = [this](std::string_view method, std::string_view path, std::string_view body,
                   std::string_view receiver, std::string_view tenant) {
    return auth_->Sign({method, path, body, node_id_, receiver, tenant}, UnixMillisNow());
  };
  po.origin_node_id = node_id_;
  po.first_token_timeout = std::chrono::milliseconds(c.forward_timeout_ms);
  po.check_peer_certificate = mutual_tls_;
  peer_client_ = std::make_unique<http::HttpPeerClient>(*http_client_, PostToCore(), po);
  delayed_peer_client_ = std::make_unique<DelayedPeerClient>(*peer_client_, *scheduler_);
  logging_peer_client_ = std::make_unique<LoggingPeerClient>(*delayed_peer_client_, node_id_);
  if (!c.insecure) {
    KeyAdminOptions ka{c.keyring_file, c.admin_allow_remote, node_id_, UnixMillisNow};
    // Runs on the core thread, where the peer client lives.
    key_admin_ = std::make_unique<KeyAdmin>(
        *keyring_, std::move(ka), [this](const gossip::Keyring& ring) { auth_->Update(ring); });
  }
}

// Signed origin state: the mode, and the signing key's seed from its file or the OS.
Status Daemon::ConfigureSigning(gossip::Config& g) {
  const DaemonConfig& c = config_;
  if (c.state_signatures == "off") return OkStatus();
  g.signatures = gossip::SignatureMode::kEd25519;
  std::array<uint8_t, gossip::kSigningSeedBytes> seed{};
  if (!c.signing_key_file.empty()) {
    Result<gossip::Keyring> read = ReadKeyFile(c.signing_key_file);
    if (!read.ok() || read->size() != 1) {
      return InvalidArgumentError("security.signing_key_file: " +
                                  (read.ok() ? std::string("want exactly one key (hearsay keygen)")
                                             : read.status().message()));
    }
    std::copy_n(read->primary()->bytes().begin(), seed.size(), seed.begin());
  } else {
    randombytes_buf(seed.data(), seed.size());
  }
  g.signing_seed = seed;
  const gossip::PublicKey pub = gossip::SigningKey::FromSeed(seed).public_key();
  signing_public_key_.assign(pub.begin(), pub.end());
  if (mutual_tls_) {
    // A member's key is bound only as the member states it over a link its certificate
    // authenticates (certified_key_source.h), never as gossip announces it.
    key_source_ = std::make_unique<CertifiedKeySource>(
        [this](const NodeId& id, const Address& api_address, CertifiedKeySource::Done done) {
          FetchPeerHealth(id, api_address, std::move(done));
        },
        [this] { return scheduler_->clock().Now(); }, std::chrono::seconds(2));
    g.key_source = key_source_.get();
  }
  spdlog::info("event=state_signing node={} mode=ed25519 key={} peer_keys={}", node_id_,
               c.signing_key_file.empty() ? "drawn at start" : c.signing_key_file,
               mutual_tls_ ? "certified" : "first_seen");
  return OkStatus();
}

void Daemon::FetchPeerHealth(const NodeId& id, const Address& api_address,
                             CertifiedKeySource::Done done) {
  http::ClientRequest r;
  r.host_port = api_address;
  r.target = "/health";
  r.tls_peer_id = id;
  r.connect_timeout = std::chrono::seconds(5);
  r.response_timeout = std::chrono::seconds(5);
  r.idle_timeout = std::chrono::seconds(5);
  struct Reply {
    int status = 0;
    std::string body;
  };
  auto reply = std::make_shared<Reply>();
  http::ResponseHandlers h;
  h.on_headers = [reply](int status, const http::Headers&) { reply->status = status; };
  h.on_body = [reply](std::string_view chunk) {
    if (reply->body.size() + chunk.size() <= 64 * 1024) reply->body.append(chunk);
  };
  h.on_done = [reply, post = PostToCore(), done = std::move(done)](Status s) mutable {
    Result<std::string> body = std::move(reply->body);
    if (!s.ok()) {
      body = Result<std::string>(std::move(s));
    } else if (reply->status != 200 && reply->status != 503) {
      body = UnavailableError("/health answered " + std::to_string(reply->status));
    }
    post([body = std::move(body), done = std::move(done)]() mutable { done(std::move(body)); });
  };
  http_client_->Send(std::move(r), std::move(h));
}

Status Daemon::InitEngineAndNode(const prefix::BlockKeyer& keyer) {
  const DaemonConfig& c = config_;
  EngineEnv env;
  env.scheduler = scheduler_.get();
  env.keyer = &keyer;
  env.seed = rng_->NextU64();
  env.io = &io_;
  env.io_one_thread = IoOneThread();
  env.post_to_core = PostToCore();
  // The engine's HTTP client reports only from I/O handlers, never inside a call into it, so on
  // the core thread itself (--io-threads 0) its events run at once instead of queued.
  env.deliver_to_core = [this](std::function<void()> fn) {
    asio::dispatch(core_io_, std::move(fn));
  };
  HEARSAY_ASSIGN_OR_RETURN(engine_, MakeEngine(c, std::move(env)));
  composite_ = dynamic_cast<engine::CompositeEngine*>(engine_.get());
  engine_configs_ = c.EngineConfigs();
  served_.assign(engine_configs_.size(), std::nullopt);
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
  HEARSAY_RETURN_IF_ERROR(ConfigureSigning(no.gossip));
  no.policy = c.policy;
  no.policy_options.host = route::Host::kDaemon;
  // Gossip draws from rng_ on timers: routing draws from its own stream, so that the same seed
  // and the same requests give the same choices.
  no.policy_options.decision_seed = rng_->NextU64();
  // The engine's cost model prices routing: the simulated engine's own, or for an upstream the
  // starting point (a preset, or the coefficients `hearsay calibrate` measured) that measured
  // speeds then scale.
  // With several engines, the first one's preset: one cost model prices the node (the weakness
  // CompositeEngine's comment describes), and measured speeds correct it.
  HEARSAY_ASSIGN_OR_RETURN(engine::CostModel cm,
                           engine::CostModel::FromPreset(engine_configs_.front().engine_preset));
  no.policy_options.cost = node::RouterCostModel(cm.params());
  const bool any_upstream = std::any_of(engine_configs_.begin(), engine_configs_.end(),
                                        [](const DaemonConfig& e) { return e.engine != "sim"; });
  if (any_upstream) {
    // An upstream engine's speed is only known by measuring it (a CPU llama.cpp is ~100x slower
    // per token than the default model): without this, cache savings would be priced at GPU speed
    // against real queue waits, and routing would all but ignore the caches.
    no.price_by_measured_prefill = true;
    // Measured speeds and queues err by tens of percent (decision records: a CPU llama.cpp's
    // prefill came in at 0.5-2x the price), so a peer bounces a forward only when it is well
    // past what was asked, not on noise.
    no.bounce_margin_fraction = 0.5;
    // Judging members by their claims (peer_trust.h) compares answers with these estimates; at
    // their tens of percent of error it discounted honest cache holders (llama e2e: hit rate
    // 0.80x the paper policy's with it, against 0.96-1.01x without). The record is kept and
    // shown; routing believes the claims until the judgement is tuned on real engines.
    no.trust.enabled = false;
    // No first-token deadline but the forward timeout (below, else).
    no.forward_deadline_factor = 0;
  } else {
    // A silent peer (partitioned, stopped) costs a few expected first tokens, not the whole
    // forward timeout. Not with upstream engines: their speeds are measured, so the first
    // estimates are the preset's (a CPU llama.cpp is ~100x slower), and a cut forward's work
    // is redone elsewhere.
    no.forward_deadline_factor = double(c.forward_deadline_factor);
    no.forward_deadline_floor = std::chrono::milliseconds(c.forward_deadline_floor_ms);
  }
  no.suspect_silence = std::chrono::milliseconds(c.suspect_silence_ms);
  // What the node serves: its configured model now, and what the engine lists once read.
  no.service = CurrentService().service;
  // Tenants' rate limits hold across the cluster: the node gossips this node's usage.
  no.limiter = &tenant_limiter_.cluster();
  HEARSAY_ASSIGN_OR_RETURN(
      node_, node::Node::Create(std::move(no), *engine_, keyer, *scheduler_, *rng_, *transport_,
                                *logging_peer_client_, framer_.get()));
  spdlog::info("event=service node={} service=\"{}\"", node_id_,
               gossip::ServiceSummary(node_->service()));
  for (size_t i = 0; i < engine_configs_.size(); ++i) {
    engine::Engine& e = composite_ != nullptr ? composite_->child(i) : *engine_;
    if (auto* hosted = dynamic_cast<upstream::HostedOpenAiEngine*>(&e)) {
      hosted->mutable_openai().set_on_served_models(
          [this, i](const upstream::ServedModels& served) { UpdateService(i, served); });
    }
  }
  if (!c.records_path.empty()) {
    HEARSAY_ASSIGN_OR_RETURN(records_, RecordsFile::Open(c.records_path));
  }
  // The status board (GET /status) is the node's recorder only while /status is read; it passes
  // every record on to the file.
  status_board_ = std::make_unique<StatusBoard>(scheduler_->clock(), node_id_, records_.get());
  node_->SetRecorder(records_.get());
  transport_->Start(&node_->gossip_sink());
  return OkStatus();
}

// Threads, then join the cluster on the core thread.
void Daemon::StartThreads() {
  core_work_ = std::make_unique<asio::executor_work_guard<asio::io_context::executor_type>>(
      core_io_.get_executor());
  io_work_ = std::make_unique<asio::executor_work_guard<asio::io_context::executor_type>>(
      io_.get_executor());
  core_thread_ = std::thread([this] { core_io_.run(); });
  for (uint64_t i = 0; i < config_.io_threads; ++i) {
    io_threads_.emplace_back([this] { io_.run(); });
  }
  RunOnCore([this] {
    node_->Start(config_.join);
    RefreshTick();
  });
}

void Daemon::LogStart(const std::string& key_source) const {
  if (config_.insecure) {
    spdlog::warn(
        "event=insecure msg=\"INSECURE: no cluster key; gossip is neither authenticated "
        "nor encrypted and peer requests are not authenticated; anyone who can reach "
        "{} and {} can join this cluster and submit forwarded requests\"",
        gossip_address_, http_address_);
  }
  if (api_keys_) {
    spdlog::info("event=api_keys node={} file={} keys={} tenants={}", node_id_,
                 LogField(api_keys_->path()), api_keys_->Current()->entries().size(),
                 api_keys_->Current()->tenants().size());
  } else {
    spdlog::warn(
        "event=api_open node={} msg=\"no --api-keys-file: the OpenAI API at {} serves anyone "
        "who reaches it, with one shared cache\"",
        node_id_, http_address_);
  }
  // The settings that differ from their defaults; every one at debug level.
  spdlog::info(
      "event=start node={} generation={} http={} gossip={} api_address={} seed={} "
      "keys={} key_source=\"{}\" settings=\"{}\"",
      node_id_, generation_, http_address_, gossip_address_, api_address_, seed_,
      keyring_ ? keyring_->size() : 0, key_source, config_.Describe());
  spdlog::debug("event=config node={} {}", node_id_, config_.Describe(/*all=*/true));
}

std::function<void(std::function<void()>)> Daemon::PostToCore() {
  return [this](std::function<void()> fn) { asio::post(core_io_, std::move(fn)); };
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
  // Connections are still accepted: /health answers 503 and completions 503 until the end.
  if (server_) server_->Drain();
  if (admin_server_) admin_server_->Drain();
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
  if (admin_server_) admin_server_->Close();
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
  admin_server_.reset();
  sinks_.clear();
  node_.reset();
  key_source_.reset();
  engine_.reset();
  logging_peer_client_.reset();
  delayed_peer_client_.reset();
  peer_client_.reset();
  http_client_.reset();
  prompt_tokenizer_.reset();
  transport_.reset();
}

void Daemon::RefreshTick() {
  PollApiKeys(/*force=*/false);
  CheckIsolation();
  RefreshMetrics();
  const gossip::Counters& g = node_->gossip().counters();
  status_board_->SampleGossip(g.bytes_sent, g.bytes_received);
  status_board_->SampleRouting(node_->stats().forwards_bounced, node_->stats().forward_failures);
  // Decision records cost the node a record per request: only while someone reads /status.
  if (!status_board_->Watched()) node_->SetRecorder(records_.get());
  LogMemberChanges();
  scheduler_->RunAfter(kRefreshInterval, [this] { RefreshTick(); });
}

void Daemon::RefreshMetrics() {
  metrics_.Refresh(*node_, engine_->Load(), transport_->counters(), server_->stats(),
                   server_->open_connections(), scheduler_->clock().Now());
  keying_metrics_->Refresh(prompt_tokenizer_->stats(), openai_engine_);
  isolation_metrics_->Refresh(opener_->drops(), isolation_->report());
  const TimePoint now = scheduler_->clock().Now();
  tenant_metrics_->RefreshShares(tenant_limiter_.cluster().Tenants(now),
                                 tenant_limiter_.cluster().fresh_peers(now));
  if (const upstream::HostedOpenAiEngine* e = KvEventsEngine(); e && kv_events_metrics_) {
    kv_events_metrics_->Refresh(*e->kv_events(), e->kv_events_subscriber()->stats());
  }
}

const upstream::HostedOpenAiEngine* Daemon::KvEventsEngine() const {
  const auto* e = dynamic_cast<const upstream::HostedOpenAiEngine*>(engine_.get());
  return e != nullptr && e->kv_events() != nullptr ? e : nullptr;
}

void Daemon::CheckIsolation() {
  const TimePoint now = scheduler_->clock().Now();
  isolation_->Update(now, opener_->drops(), node_->gossip().live_member_count());
  const HealthReport& r = isolation_->report();
  HealthReport report = r;
  CheckServiceConflicts(report);
  {
    std::lock_guard<std::mutex> lock(health_mu_);
    health_ = std::move(report);
  }
  if (!isolation_->ShouldLog(now)) return;
  if (r.issues.empty()) {
    spdlog::info("event=health node={} status=ok", node_id_);
    return;
  }
  for (const HealthIssue& i : r.issues) {
    spdlog::warn("event=health node={} status={} issue={} msg=\"{}\"", node_id_,
                 r.degraded ? "degraded" : "ok", i.code, i.message);
  }
}

NodeServiceResult Daemon::CurrentService() {
  if (composite_ == nullptr) return BuildNodeService(config_, served_.front());
  std::vector<std::vector<std::string>> models;
  NodeServiceResult r = BuildNodeService(engine_configs_, served_, &models);
  for (size_t i = 0; i < models.size(); ++i) composite_->SetModels(i, std::move(models[i]));
  return r;
}

void Daemon::UpdateService(size_t engine, const upstream::ServedModels& served) {
  served_.at(engine) = served;
  NodeServiceResult r = CurrentService();
  if (r.names_left_out > 0) {
    spdlog::warn(
        "event=service node={} left_out={} msg=\"the engine lists more models, aliases or "
        "adapters than a service carries; the rest are not advertised\"",
        node_id_, r.names_left_out);
  }
  if (r.service == node_->service()) return;
  if (Status s = node_->SetService(r.service); !s.ok()) {
    spdlog::error("event=service node={} error=\"{}\"", node_id_, s.message());
    return;
  }
  spdlog::info("event=service node={} service=\"{}\"", node_id_,
               gossip::ServiceSummary(node_->service()));
}

void Daemon::CheckServiceConflicts(HealthReport& health) {
  std::set<std::pair<std::string, NodeId>> now;
  for (const node::ServiceConflict& c : node_->ServiceConflicts()) {
    const std::string message = fmt::format(
        "peer {} serves model {} with tokenizer fingerprint {:016x} and block size {}, this node "
        "with {:016x} and {}: their cache keys disagree, so the two never route this model to "
        "each other",
        c.peer, c.model, c.peer_fingerprint, c.peer_block_tokens, c.own_fingerprint,
        c.own_block_tokens);
    health.issues.push_back({"service_conflict", message, false});
    if (now.emplace(c.model, c.peer).second && !logged_conflicts_.contains({c.model, c.peer})) {
      spdlog::error(
          "event=service_conflict node={} model={} peer={} msg=\"{}; make "
          "node.tokenizer, node.chat_template and node.block_size agree\"",
          node_id_, c.model, c.peer, message);
    }
  }
  logged_conflicts_ = std::move(now);
}

void Daemon::LogMemberChanges() {
  for (const gossip::MemberView& m : node_->gossip().Members()) {
    auto [it, fresh] = logged_states_.try_emplace(m.id, m.state);
    if (!fresh && it->second == m.state) continue;
    it->second = m.state;
    if (m.state == gossip::MemberState::kSuspect) status_board_->CountSuspicion();
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

}  // namespace hearsay::net
