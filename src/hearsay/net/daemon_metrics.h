// DaemonMetrics: the daemon's Prometheus metrics (GET /metrics), what each means in
// docs/operations.md.
//
// Counters the request path updates (TTFT, HTTP errors, in-flight) are atomics, updated from any
// thread. Everything read from core state (node stats, gossip counters, member states, engine
// load) is copied by Refresh(), which runs on the core thread (on a timer and before each
// /metrics render), never from an I/O thread. Core counters are mirrored into Prometheus
// counters by their increase since the last Refresh, so they stay monotone.
//
// Thread-safety: Refresh() on the core thread only; the rest from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "hearsay/api/metrics.h"
#include "hearsay/engine/engine.h"
#include "hearsay/env/time.h"
#include "hearsay/http/server.h"
#include "hearsay/net/udp_tcp_transport.h"
#include "hearsay/node/node.h"

namespace hearsay::net {

class DaemonMetrics {
 public:
  DaemonMetrics();

  // Copies core state into the metrics. Core thread only.
  void Refresh(const node::Node& node, const engine::EngineLoad& load,
               const TransportCounters& transport, const http::ServerStats& server,
               size_t open_connections, TimePoint now);

  // A client request's time to first token.
  void ObserveTtft(Duration ttft);
  // A response with an error status (>= 400); a 4xx also counts as rejected.
  void CountHttpError(int status);
  void CountPeerAuthFailure() { peer_auth_failures_->Increment(); }
  void CountPeerCertificateRefusal() { peer_certificate_refusals_->Increment(); }
  void CountRejected429() { CountHttpError(429); }
  api::Gauge& in_flight() { return *in_flight_; }

  std::string Render() const { return registry_.Render(); }
  const api::MetricsRegistry& registry() const { return registry_; }
  // For series kept elsewhere (KeyingMetrics, KvEventsMetrics); register before any thread
  // renders.
  api::MetricsRegistry& mutable_registry() { return registry_; }

 private:
  // A Prometheus counter that follows a monotone core counter.
  struct Mirror {
    api::Counter* counter = nullptr;
    uint64_t last = 0;
    void Sync(uint64_t value) {
      if (value > last) counter->Increment(static_cast<double>(value - last));
      last = value;
    }
  };

  api::MetricsRegistry registry_;
  // Requests.
  Mirror decision_local_, decision_forwarded_, decision_retried_, client_requests_;
  Mirror forwards_bounced_, peer_requests_bounced_, forwards_aborted_member_dead_;
  Mirror forwards_aborted_suspect_silent_;
  Mirror hop_served_, failed_, cancelled_;
  Mirror models_not_found_, forwards_wrong_model_, service_conflicts_total_;
  api::Gauge* service_conflicts_ = nullptr;
  api::Gauge* peer_trust_min_ = nullptr;
  api::Gauge* peers_discounted_ = nullptr;
  api::Counter* rejected_ = nullptr;  // 4xx answers, counted with CountHttpError
  Mirror estimated_cached_, actual_cached_, served_prompt_tokens_, served_cached_tokens_;
  api::Histogram* ttft_ = nullptr;
  api::Gauge* in_flight_ = nullptr;
  api::Counter* peer_auth_failures_ = nullptr;
  api::Counter* peer_certificate_refusals_ = nullptr;
  // Gossip.
  Mirror gossip_msgs_sent_, gossip_bytes_sent_, gossip_msgs_received_, gossip_bytes_received_;
  Mirror dropped_envelope_, dropped_malformed_, dropped_spoofed_, dropped_other_;
  Mirror state_unverified_, state_forged_, signing_key_conflicts_, signing_keys_confirmed_;
  Mirror membership_unverified_, membership_forged_, membership_capped_, membership_ahead_;
  Mirror send_failures_;
  Mirror transport_msgs_sent_[2], transport_bytes_sent_[2], transport_msgs_received_[2],
      transport_bytes_received_[2];
  Mirror transport_send_errors_, transport_oversize_, transport_blocked_, transport_fault_,
      transport_rate_, transport_pool_, transport_refused_;
  api::Gauge* transport_inbound_ = nullptr;
  api::Gauge* peers_[4] = {};
  api::Gauge* view_age_max_ = nullptr;
  api::Gauge* local_health_ = nullptr;
  api::Gauge* overloaded_ = nullptr;
  // Engine.
  api::Gauge* engine_waiting_ = nullptr;
  api::Gauge* engine_running_ = nullptr;
  api::Gauge* kv_used_ = nullptr;
  api::Gauge* kv_capacity_ = nullptr;
  // HTTP.
  Mirror server_timeouts_, server_too_large_, server_header_too_large_, server_bad_,
      server_refused_, server_evicted_, client_aborts_, tls_handshake_failures_,
      tls_handshake_timeouts_;
  api::Gauge* open_connections_ = nullptr;
  std::mutex errors_mu_;
  std::map<int, api::Counter*> http_errors_;  // guarded by errors_mu_
};

}  // namespace hearsay::net
