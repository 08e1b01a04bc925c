// net::Daemon: one `hearsay node` process, composed from a DaemonConfig.
//
// It owns two io_contexts: the core one, run by one core thread, where the AsioScheduler, the
// node::Node (with its gossip::Node, policy and engine) and every CompletionSink live; and the
// I/O one, run by config.io_threads threads, for the HTTP server, the HTTP client that forwards to
// peers, and the gossip sockets (UdpTcpTransport). With io_threads 0 the I/O work runs on the core
// io_context instead (one thread for everything, as one nginx worker). I/O code reaches core state
// only by posting to the core io_context, and the core answers by posting back (or through the
// thread-safe http::Responder). See docs/daemon.md for the endpoints and the peer protocol.
//
// Lifecycle: Create() validates the configuration, loads the cluster key, binds every socket
// (so a port in use is an error here) and starts the threads; the node joins the cluster at
// once. Shutdown() drains: it stops accepting, answers /health with 503, leaves the cluster, lets
// in-flight requests finish up to config.drain_timeout_ms, then stops everything. The destructor
// shuts down without draining if Shutdown() was not called.
//
// Thread-safety: Create, Shutdown and the destructor from one controlling thread (not an I/O or
// core thread); the accessors from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "hearsay/api/openai_request.h"
#include "hearsay/api/tokenizer.h"
#include "hearsay/common/status.h"
#include "hearsay/engine/engine.h"
#include "hearsay/gossip/envelope.h"
#include "hearsay/gossip/envelope_framer.h"
#include "hearsay/gossip/keyring.h"
#include "hearsay/http/client.h"
#include "hearsay/http/peer_client.h"
#include "hearsay/http/server.h"
#include "hearsay/net/api_key_store.h"
#include "hearsay/net/asio_runtime.h"
#include "hearsay/net/certified_key_source.h"
#include "hearsay/net/completion_sink.h"
#include "hearsay/net/daemon_config.h"
#include "hearsay/net/daemon_metrics.h"
#include "hearsay/net/delayed_peer_client.h"
#include "hearsay/net/isolation.h"
#include "hearsay/net/key_admin.h"
#include "hearsay/net/keying_metrics.h"
#include "hearsay/net/kv_events_metrics.h"
#include "hearsay/net/log_guard.h"
#include "hearsay/net/logging_peer_client.h"
#include "hearsay/net/node_service.h"
#include "hearsay/net/peer_auth.h"
#include "hearsay/net/prompt_tokenizer.h"
#include "hearsay/net/records_file.h"
#include "hearsay/net/status_board.h"
#include "hearsay/net/tenant_limiter.h"
#include "hearsay/net/tenant_metrics.h"
#include "hearsay/net/udp_tcp_transport.h"
#include "hearsay/node/node.h"
#include "hearsay/prefix/block_keys.h"

namespace hearsay::engine {
class CompositeEngine;
}  // namespace hearsay::engine

namespace hearsay::upstream {
class HostedOpenAiEngine;
struct ServedModels;
}  // namespace hearsay::upstream

namespace hearsay::net {

// GET /v1/models of a pool: the OpenAI list of every model a live member serves, each with
// `live_nodes` (members serving it, this one included), `served_here`, `aliases` and
// `context_length` (null when unknown); then its LoRA adapters as entries with `parent` (as vLLM
// lists them), at most kMaxListedAdapters per model.
inline constexpr size_t kMaxListedAdapters = 1024;
std::string RenderPoolModels(const std::vector<node::PoolModel>& models, int64_t created);

class Daemon {
 public:
  // Builds and starts a node. FAILED_PRECONDITION without a key and without insecure;
  // INVALID_ARGUMENT for a bad config or key file; NOT_FOUND for an unreadable key file;
  // UNAVAILABLE when a port is in use.
  static Result<std::unique_ptr<Daemon>> Create(DaemonConfig config);
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Drains and stops (see the file comment). Returns true if every in-flight request finished
  // within the drain timeout. Idempotent.
  bool Shutdown();

  // The bound addresses (actual ports when the config asked for port 0).
  const std::string& http_address() const { return http_address_; }
  // The admin listener's bound address (config.admin_listen); empty without one.
  const std::string& admin_address() const { return admin_address_; }
  const std::string& gossip_address() const { return gossip_address_; }
  const std::string& node_id() const { return node_id_; }
  Generation generation() const { return generation_; }
  const DaemonConfig& config() const { return config_; }
  // Completion requests in progress.
  int64_t in_flight() const { return in_flight_.load(); }
  // Reads the API-keys file again now (SIGHUP) and logs the outcome; a file that does not parse
  // leaves the keys in use. Nothing without --api-keys-file. Any thread.
  void ReloadApiKeys() { PollApiKeys(/*force=*/true); }
  // Reads the TLS certificate and key again now (SIGHUP) and logs the outcome: connections
  // accepted after it use them, open ones keep theirs; files that do not load leave the current
  // ones in use. Nothing without TLS. Any thread.
  void ReloadTls();
  // True when the API serves HTTPS.
  bool tls() const { return tls_ != nullptr; }

 private:
  explicit Daemon(DaemonConfig config);

  // Init's steps, in order (daemon.cc): sockets, gossip security, block keys, forwarding, the
  // engine and node, threads, then the start log line.
  Status Init();
  Status OpenSockets();
  Status InitGossipSecurity();
  Result<prefix::BlockKeyer> MakeBlockKeyer() const;
  void InitForwarding();
  // Tenants: the API-keys file (if any) and the namespace keyer.
  Status InitTenants(const prefix::BlockKeyer& keyer);
  // Reloads the API-keys file if it changed (or always with `force`) and logs a reload.
  void PollApiKeys(bool force);
  // The tenant of a client request: true with `out` set (an empty name on an open node), or
  // false once it is answered 401.
  bool AuthenticateClient(const http::Request& request,
                          const std::shared_ptr<http::Responder>& responder, Tenant* out);
  Status InitEngineAndNode(const prefix::BlockKeyer& keyer);
  // security.state_signatures and security.signing_key_file, into the gossip config; with
  // mutual TLS, members' keys come from key_source_ (bound to their certificates).
  Status ConfigureSigning(gossip::Config& g);
  // GET /health at `api_address` over mutual TLS, the certificate naming `id` (key_source_).
  void FetchPeerHealth(const NodeId& id, const Address& api_address, CertifiedKeySource::Done done);
  void StartThreads();
  void LogStart(const std::string& key_source) const;
  // One thread runs the I/O context: its connections and exchanges need no strands.
  bool IoOneThread() const { return config_.io_threads <= 1; }
  // Posts a function to the core io_context.
  std::function<void(std::function<void()>)> PostToCore();
  // Runs `fn` on the core thread and waits for it (setup and tests; never from an I/O thread).
  void RunOnCore(std::function<void()> fn);
  void StopThreads();
  // True when `id` is a member this node sees alive or suspect (core thread).
  bool IsLiveMember(const std::string& id) const;

  // Which listener a request arrived on. With an admin listener (config.admin_listen) the API
  // listener serves only /v1/* and /health, and the admin listener everything but /v1/*; without
  // one, the API listener serves everything.
  enum class Listener { kApi, kAdmin };
  // True when `path` may be answered on `listener`.
  bool Serves(Listener listener, std::string_view path) const;

  // HTTP handlers (I/O threads; daemon_requests.cc).
  void Handle(Listener listener, http::Request request, std::shared_ptr<http::Responder> responder);
  void HandleCompletion(api::Endpoint endpoint, http::Request request,
                        std::shared_ptr<http::Responder> responder);
  // A completion request between parsing and tokenization.
  struct ParsedCompletion {
    api::Endpoint endpoint;
    bool hop = false;
    api::ApiRequest req;
    http::Request request;
    std::shared_ptr<http::Responder> responder;
    TimePoint arrived{};  // TTFT counts from here, tokenization included
    Tenant tenant;        // empty name: an open node's client, or a peer without a tenant
    uint64_t cache_namespace = 0;
  };
  // The second half of HandleCompletion, once the prompt is tokenized (see PromptTokenizer).
  void SubmitTokenized(ParsedCompletion& c, PromptTokens tokens);
  // POST /debug/faults: the admin authenticator (KeyAdmin::Authenticate; on an insecure node,
  // loopback alone) checked on the core thread, then ApplyFaults.
  void HandleFaults(http::Request request, std::shared_ptr<http::Responder> responder);
  void ApplyFaults(const http::Request& request, const std::shared_ptr<http::Responder>& r);
  // /admin/keys*: answered on the core thread, which owns the keyring (key_admin.h).
  void HandleKeyAdmin(http::Request request, std::shared_ptr<http::Responder> responder);
  void RespondError(const std::shared_ptr<http::Responder>& responder, const api::ApiError& e,
                    http::Headers extra = {});
  // `h` plus X-Hearsay-Served-By and X-Hearsay-Entry naming this node: an answer it made itself.
  http::Headers OwnAnswerHeaders(http::Headers h) const;
  // Core thread.
  void Submit(uint64_t id, PeerRequest request, CompletionOptions options,
              std::shared_ptr<http::Responder> responder, TimePoint arrived);
  void CancelRequest(uint64_t id);
  void FinishRequest(uint64_t id);
  void RefreshTick();
  void RefreshMetrics();
  // The engine when it consumes vLLM KV events, else nullptr.
  const upstream::HostedOpenAiEngine* KvEventsEngine() const;
  void LogMemberChanges();
  // The node's service from its engines' configurations and what each one lists; with several
  // engines it also tells the composite which models each engine serves (core thread).
  NodeServiceResult CurrentService();
  // Advertises what engine `engine` (an index of engine_configs_) now lists (core thread; the
  // engine's callback).
  void UpdateService(size_t engine, const upstream::ServedModels& served);
  // Adds an issue per peer whose service conflicts with this node's on a model, and logs each new
  // conflict loudly once (core thread).
  void CheckServiceConflicts(HealthReport& health);
  // Updates the isolation report (core thread; logs it at a bounded rate).
  void CheckIsolation();
  // The /health body's status and issues, from the last report.
  nlohmann::json HealthJson() const;
  std::string RenderCluster() const;
  // GET /status: the documented JSON the console and `hearsay status` read (core thread).
  std::string RenderStatus();

  DaemonConfig config_;
  api::Limits limits_;
  api::Tokenizer tokenizer_;
  std::string node_id_;
  Generation generation_ = 0;
  std::string http_address_;
  std::string admin_address_;
  std::string gossip_address_;
  std::string api_address_;
  int64_t created_unix_ = 0;

  boost::asio::io_context core_io_;
  // The I/O io_context: a second one, run by config.io_threads threads, or with io_threads 0 the
  // core's own (sockets and core then share one thread, and a post between them is a queue push,
  // not a wake-up of another thread).
  boost::asio::io_context io_context_;
  boost::asio::io_context& io_;
  std::unique_ptr<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>>
      core_work_, io_work_;
  std::thread core_thread_;
  std::vector<std::thread> io_threads_;

  uint64_t seed_ = 0;
  std::unique_ptr<Rng> rng_;
  std::unique_ptr<AsioScheduler> scheduler_;
  std::unique_ptr<gossip::Keyring> keyring_;
  std::unique_ptr<gossip::Sealer> sealer_;
  std::unique_ptr<gossip::Opener> opener_;
  std::unique_ptr<gossip::EnvelopeFramer> framer_;
  std::unique_ptr<PeerAuthenticator> auth_;
  std::unique_ptr<UdpTcpTransport> transport_;
  std::unique_ptr<http::Client> http_client_;
  // This node's public signing key (empty: signatures off), announced in /health; and under
  // mutual TLS where members' keys come from (core thread; outlives node_).
  std::string signing_public_key_;
  std::unique_ptr<CertifiedKeySource> key_source_;
  std::unique_ptr<http::HttpPeerClient> peer_client_;
  std::unique_ptr<DelayedPeerClient> delayed_peer_client_;  // POST /debug/faults "delay_ms"
  // What POST /debug/faults has set (core thread).
  struct Faults {
    std::vector<std::string> block;
    double delay_ms = 0;
    double loss = 0;
  };
  Faults faults_;
  std::unique_ptr<LoggingPeerClient> logging_peer_client_;
  std::unique_ptr<KeyAdmin> key_admin_;  // null in insecure mode
  LogRateLimiter auth_log_limiter_{10};  // refused hop requests: 10 log lines a second
  std::unique_ptr<engine::Engine> engine_;
  // With [[engine]] entries, engine_ is a composite of one engine per entry; else null.
  engine::CompositeEngine* composite_ = nullptr;
  // Each engine's configuration and what it lists (nullopt until read); one entry without
  // [[engine]] entries (core thread).
  std::vector<DaemonConfig> engine_configs_;
  std::vector<std::optional<upstream::ServedModels>> served_;
  std::unique_ptr<RecordsFile> records_;       // with --records only; outlives node_
  std::unique_ptr<StatusBoard> status_board_;  // GET /status; outlives node_
  std::unique_ptr<node::Node> node_;
  std::shared_ptr<http::TlsContext> tls_;       // the API's; null: plain HTTP
  std::shared_ptr<http::TlsContext> peer_tls_;  // forwards' client side; null: plain HTTP
  // Mutual TLS (tls.ca): peer requests need a client certificate naming their sender.
  bool mutual_tls_ = false;
  std::unique_ptr<http::Server> server_;
  std::unique_ptr<http::Server> admin_server_;  // with config.admin_listen only
  DaemonMetrics metrics_;
  // Keying: the prompt tokenizer (I/O threads) and its metrics; the openai engine if any.
  std::unique_ptr<PromptTokenizer> prompt_tokenizer_;
  std::unique_ptr<KeyingMetrics> keying_metrics_;
  const upstream::OpenAiEngine* openai_engine_ = nullptr;
  std::unique_ptr<KvEventsMetrics> kv_events_metrics_;  // with --kv-events only
  // Whether the node can join (core thread), and its last report for /health (I/O threads).
  std::unique_ptr<IsolationMonitor> isolation_;
  std::unique_ptr<IsolationMetrics> isolation_metrics_;
  mutable std::mutex health_mu_;
  HealthReport health_;  // guarded by health_mu_

  // Tenants (api_keys.h): the keys (null without --api-keys-file: an open API), their limits on
  // this node, their metrics, and the keyer that names cache namespaces.
  std::unique_ptr<ApiKeyStore> api_keys_;
  TenantLimiter tenant_limiter_;
  std::unique_ptr<TenantMetrics> tenant_metrics_;
  std::optional<prefix::BlockKeyer> namespace_keyer_;

  // Core thread: live requests and their sinks.
  std::map<uint64_t, std::unique_ptr<CompletionSink>> sinks_;
  std::map<NodeId, gossip::MemberState> logged_states_;
  // Service conflicts (model, peer) at the last check, each logged once (core thread).
  std::set<std::pair<std::string, NodeId>> logged_conflicts_;
  bool leaving_ = false;

  std::atomic<uint64_t> next_request_id_{1};
  std::atomic<int64_t> in_flight_{0};
  std::atomic<bool> draining_{false};
  std::atomic<bool> stopped_{false};
};

}  // namespace hearsay::net
