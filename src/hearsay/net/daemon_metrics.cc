#include "hearsay/net/daemon_metrics.h"

#include <algorithm>

namespace hearsay::net {

namespace {
constexpr const char* kStates[] = {"alive", "suspect", "dead", "left"};
}  // namespace

DaemonMetrics::DaemonMetrics() {
  auto& r = registry_;
  const char* decisions =
      "Client requests by route decision: served here (local), by a peer "
      "(forwarded), or a forward that failed before the first token and was "
      "retried elsewhere (retried)";
  decision_local_.counter =
      &r.AddCounter("hearsay_requests_total", decisions, {{"decision", "local"}});
  decision_forwarded_.counter =
      &r.AddCounter("hearsay_requests_total", decisions, {{"decision", "forwarded"}});
  decision_retried_.counter =
      &r.AddCounter("hearsay_requests_total", decisions, {{"decision", "retried"}});
  forwards_bounced_.counter =
      &r.AddCounter("hearsay_forwards_bounced_total",
                    "Forwards a busy peer sent back unserved (its queue would have made the "
                    "request slower than this node's next choice); each was routed again");
  constexpr const char* kForwardsAbortedHelp =
      "Forwards ended early: member_dead when gossip declared their member dead (or it came back "
      "with a new generation), suspect_silent when gossip suspects it and the forward heard "
      "nothing for limits.suspect_silence_ms; each retried elsewhere before the first token, else "
      "the client's stream ended";
  forwards_aborted_member_dead_.counter = &r.AddCounter(
      "hearsay_forwards_aborted_total", kForwardsAbortedHelp, {{"reason", "member_dead"}});
  forwards_aborted_suspect_silent_.counter = &r.AddCounter(
      "hearsay_forwards_aborted_total", kForwardsAbortedHelp, {{"reason", "suspect_silent"}});
  peer_requests_bounced_.counter =
      &r.AddCounter("hearsay_peer_requests_bounced_total",
                    "Forwarded requests from peers this node sent back unserved, because its own "
                    "queue would have made them slower than the sender's next choice");
  models_not_found_.counter = &r.AddCounter(
      "hearsay_models_not_found_total",
      "Client requests answered 404 model_not_found: no live member serves the model");
  forwards_wrong_model_.counter =
      &r.AddCounter("hearsay_forwards_wrong_model_total",
                    "Forwarded requests from peers for a model this node does not serve, refused "
                    "unserved (the sender routes them again)");
  service_conflicts_total_.counter =
      &r.AddCounter("hearsay_service_conflicts_total",
                    "Peer service records that claim a model this node serves with another "
                    "tokenizer or block size");
  service_conflicts_ = &r.AddGauge(
      "hearsay_service_conflicts",
      "Live peers whose tokenizer or block size for a model this node serves differs from its "
      "own; the two never route that model to each other");
  peer_trust_min_ = &r.AddGauge(
      "hearsay_peer_trust_min",
      "The least trust this node has in any member's claims (1 = believed; /status members[].trust "
      "has each member's)");
  peers_discounted_ = &r.AddGauge(
      "hearsay_peers_discounted",
      "Members whose claims this node discounts in routing (trust below 0.9): their answers "
      "delivered less cache, or took longer, than they claimed");
  client_requests_.counter = &r.AddCounter("hearsay_client_requests_total",
                                           "Completion requests accepted from clients (not peers)");
  hop_served_.counter = &r.AddCounter("hearsay_peer_requests_served_total",
                                      "Forwarded requests from peers served by this node");
  failed_.counter = &r.AddCounter("hearsay_requests_failed_total",
                                  "Requests that ended in an error for their client");
  cancelled_.counter = &r.AddCounter("hearsay_requests_cancelled_total",
                                     "Requests cancelled because their client went away");
  rejected_ = &r.AddCounter("hearsay_requests_rejected_total",
                            "Requests answered with a 4xx status: invalid, unknown path or "
                            "model, too large, over the concurrency limit, or refused auth");
  const char* cached =
      "Prompt tokens the router estimated cached at the chosen node "
      "(estimated) and that its engine reported (actual), over client requests";
  estimated_cached_.counter =
      &r.AddCounter("hearsay_cached_tokens_total", cached, {{"kind", "estimated"}});
  actual_cached_.counter =
      &r.AddCounter("hearsay_cached_tokens_total", cached, {{"kind", "actual"}});
  served_prompt_tokens_.counter = &r.AddCounter(
      "hearsay_engine_prompt_tokens_total", "Prompt tokens of requests this node's engine served");
  served_cached_tokens_.counter =
      &r.AddCounter("hearsay_engine_cached_tokens_total",
                    "Prompt tokens this node's engine found in its prefix cache");
  ttft_ = &r.AddHistogram("hearsay_ttft_seconds",
                          "Time to first token of client requests, as this entry node saw it",
                          api::ExponentialBuckets(0.001, 2, 16));
  in_flight_ = &r.AddGauge("hearsay_requests_in_flight",
                           "Completion requests in progress (clients and peers)");
  peer_certificate_refusals_ = &r.AddCounter(
      "hearsay_peer_certificate_refusals_total",
      "Hop requests refused under mutual TLS: no client certificate, or one naming another node "
      "than the sender, or a sender that is not a live member");
  peer_auth_failures_ = &r.AddCounter(
      "hearsay_peer_auth_failures_total",
      "Hop requests refused for a missing, stale, replayed or wrong peer authenticator");

  const char* msgs = "Gossip messages sent and received by the gossip node";
  const char* bytes = "Gossip bytes (sealed envelopes) sent and received by the gossip node";
  gossip_msgs_sent_.counter =
      &r.AddCounter("hearsay_gossip_messages_total", msgs, {{"direction", "sent"}});
  gossip_msgs_received_.counter =
      &r.AddCounter("hearsay_gossip_messages_total", msgs, {{"direction", "received"}});
  gossip_bytes_sent_.counter =
      &r.AddCounter("hearsay_gossip_bytes_total", bytes, {{"direction", "sent"}});
  gossip_bytes_received_.counter =
      &r.AddCounter("hearsay_gossip_bytes_total", bytes, {{"direction", "received"}});
  const char* dropped = "Incoming gossip messages dropped, by reason";
  dropped_envelope_.counter =
      &r.AddCounter("hearsay_gossip_dropped_total", dropped, {{"reason", "envelope"}});
  dropped_malformed_.counter =
      &r.AddCounter("hearsay_gossip_dropped_total", dropped, {{"reason", "malformed"}});
  dropped_spoofed_.counter =
      &r.AddCounter("hearsay_gossip_dropped_total", dropped, {{"reason", "spoofed"}});
  dropped_other_.counter =
      &r.AddCounter("hearsay_gossip_dropped_total", dropped, {{"reason", "other"}});
  const char* state = "Gossiped member state refused for want of its member's valid signature";
  state_unverified_.counter =
      &r.AddCounter("hearsay_gossip_state_dropped_total", state, {{"reason", "unverified"}});
  state_forged_.counter =
      &r.AddCounter("hearsay_gossip_state_dropped_total", state, {{"reason", "forged"}});
  const char* membership =
      "Membership updates refused for want of the valid signature of the member they are about "
      "or of the accuser they name";
  membership_unverified_.counter = &r.AddCounter("hearsay_gossip_membership_dropped_total",
                                                 membership, {{"reason", "unverified"}});
  membership_forged_.counter = &r.AddCounter("hearsay_gossip_membership_dropped_total", membership,
                                             {{"reason", "forged"}});
  membership_capped_.counter = &r.AddCounter("hearsay_gossip_membership_dropped_total", membership,
                                             {{"reason", "capped"}});
  membership_ahead_.counter = &r.AddCounter("hearsay_gossip_membership_dropped_total", membership,
                                            {{"reason", "ahead"}});
  signing_key_conflicts_.counter =
      &r.AddCounter("hearsay_gossip_signing_key_conflicts_total",
                    "Signing keys announced for a member generation that already has another");
  signing_keys_confirmed_.counter = &r.AddCounter(
      "hearsay_gossip_signing_keys_confirmed_total",
      "Members' signing keys bound as the member stated them over mutual TLS (its certificate "
      "naming it)");
  send_failures_.counter = &r.AddCounter("hearsay_gossip_send_failures_total",
                                         "Gossip messages the envelope refused to seal");
  const char* channel_names[] = {"datagram", "stream"};
  for (int c = 0; c < 2; ++c) {
    const api::Labels sent = {{"channel", channel_names[c]}, {"direction", "sent"}};
    const api::Labels recv = {{"channel", channel_names[c]}, {"direction", "received"}};
    transport_msgs_sent_[c].counter = &r.AddCounter("hearsay_transport_messages_total",
                                                    "Gossip transport messages by channel", sent);
    transport_msgs_received_[c].counter = &r.AddCounter(
        "hearsay_transport_messages_total", "Gossip transport messages by channel", recv);
    transport_bytes_sent_[c].counter = &r.AddCounter(
        "hearsay_transport_bytes_total", "Gossip transport payload bytes by channel", sent);
    transport_bytes_received_[c].counter = &r.AddCounter(
        "hearsay_transport_bytes_total", "Gossip transport payload bytes by channel", recv);
  }
  const char* tdrops = "Gossip transport messages not sent or not delivered, by reason";
  transport_send_errors_.counter =
      &r.AddCounter("hearsay_transport_dropped_total", tdrops, {{"reason", "send_error"}});
  transport_oversize_.counter =
      &r.AddCounter("hearsay_transport_dropped_total", tdrops, {{"reason", "oversize"}});
  transport_blocked_.counter =
      &r.AddCounter("hearsay_transport_dropped_total", tdrops, {{"reason", "blocked"}});
  transport_rate_.counter =
      &r.AddCounter("hearsay_transport_dropped_total", tdrops, {{"reason", "rate"}});
  transport_fault_.counter =
      &r.AddCounter("hearsay_transport_dropped_total", tdrops, {{"reason", "fault_loss"}});
  transport_pool_.counter =
      &r.AddCounter("hearsay_transport_pool_waits_total",
                    "Incoming gossip frame chunks that waited for room in the pre-auth pool");
  transport_refused_.counter =
      &r.AddCounter("hearsay_transport_connections_refused_total",
                    "Incoming gossip TCP connections refused (over the total or per-source cap)");
  transport_inbound_ =
      &r.AddGauge("hearsay_transport_inbound_frame_bytes",
                  "Bytes of incoming gossip stream frames held (the pre-auth pool)");
  for (int s = 0; s < 4; ++s) {
    peers_[s] = &r.AddGauge("hearsay_peers", "Other members by state, as this node sees them",
                            {{"state", kStates[s]}});
  }
  view_age_max_ = &r.AddGauge("hearsay_view_age_seconds",
                              "Age of the oldest live peer's gossiped load and cache view");
  local_health_ =
      &r.AddGauge("hearsay_gossip_local_health", "Lifeguard local-health score (0 = healthy)");
  overloaded_ = &r.AddGauge("hearsay_overloaded", "1 while this node reports itself overloaded");

  engine_waiting_ = &r.AddGauge("hearsay_engine_waiting_requests", "Engine queue depth");
  engine_running_ = &r.AddGauge("hearsay_engine_running_requests", "Requests in the engine batch");
  kv_used_ = &r.AddGauge("hearsay_engine_kv_used_tokens", "KV cache in use, in tokens");
  kv_capacity_ = &r.AddGauge("hearsay_engine_kv_capacity_tokens", "KV cache capacity, in tokens");

  const char* server = "Requests and connections the HTTP server refused itself, by reason";
  server_timeouts_.counter =
      &r.AddCounter("hearsay_http_server_rejections_total", server, {{"reason", "timeout"}});
  server_too_large_.counter =
      &r.AddCounter("hearsay_http_server_rejections_total", server, {{"reason", "body_too_large"}});
  server_header_too_large_.counter = &r.AddCounter("hearsay_http_server_rejections_total", server,
                                                   {{"reason", "header_too_large"}});
  server_bad_.counter =
      &r.AddCounter("hearsay_http_server_rejections_total", server, {{"reason", "malformed"}});
  server_refused_.counter = &r.AddCounter("hearsay_http_server_rejections_total", server,
                                          {{"reason", "too_many_connections"}});
  server_evicted_.counter =
      &r.AddCounter("hearsay_http_idle_connections_evicted_total",
                    "Idle keep-alive connections closed to make room for a new one at the cap");
  client_aborts_.counter = &r.AddCounter("hearsay_http_client_aborts_total",
                                         "Clients that went away before their response ended");
  open_connections_ = &r.AddGauge("hearsay_http_open_connections", "Open HTTP connections");
  const char* tls = "TLS handshakes on the API listener that failed or did not finish in time";
  tls_handshake_failures_.counter =
      &r.AddCounter("hearsay_tls_handshake_failures_total", tls, {{"reason", "error"}});
  tls_handshake_timeouts_.counter =
      &r.AddCounter("hearsay_tls_handshake_failures_total", tls, {{"reason", "timeout"}});
}

void DaemonMetrics::ObserveTtft(Duration ttft) { ttft_->Observe(ToSeconds(ttft)); }

void DaemonMetrics::CountHttpError(int status) {
  std::lock_guard lock(errors_mu_);
  api::Counter*& c = http_errors_[status];
  if (c == nullptr) {
    c = &registry_.AddCounter("hearsay_http_errors_total",
                              "Error responses of the API handlers, by HTTP status",
                              {{"status", std::to_string(status)}});
  }
  c->Increment();
  if (status >= 400 && status < 500) rejected_->Increment();
}

void DaemonMetrics::Refresh(const node::Node& node, const engine::EngineLoad& load,
                            const TransportCounters& t, const http::ServerStats& server,
                            size_t open_connections, TimePoint now) {
  const node::NodeStats& s = node.stats();
  decision_local_.Sync(s.served_local);
  decision_forwarded_.Sync(s.forwarded_out);
  decision_retried_.Sync(s.forward_failures);
  forwards_bounced_.Sync(s.forwards_bounced);
  forwards_aborted_member_dead_.Sync(s.forwards_aborted_member_dead);
  forwards_aborted_suspect_silent_.Sync(s.forwards_aborted_suspect_silent);
  peer_requests_bounced_.Sync(s.bounced);
  client_requests_.Sync(s.client_requests);
  models_not_found_.Sync(s.models_not_found);
  forwards_wrong_model_.Sync(s.forwards_wrong_model);
  service_conflicts_total_.Sync(s.service_conflicts);
  service_conflicts_->Set(static_cast<double>(node.ServiceConflicts().size()));
  double least_trust = 1;
  int discounted = 0;
  for (const node::PeerTrustView& v : node.trust().All()) {
    least_trust = std::min(least_trust, v.trust());
    discounted += v.trust() < 0.9 ? 1 : 0;
  }
  peer_trust_min_->Set(least_trust);
  peers_discounted_->Set(discounted);
  hop_served_.Sync(s.served - s.served_local);
  failed_.Sync(s.failed);
  cancelled_.Sync(s.cancelled);
  estimated_cached_.Sync(s.estimated_cached_tokens);
  actual_cached_.Sync(s.actual_cached_tokens);
  served_prompt_tokens_.Sync(s.served_prompt_tokens);
  served_cached_tokens_.Sync(s.served_cached_tokens);

  const gossip::Counters& g = node.gossip().counters();
  gossip_msgs_sent_.Sync(g.msgs_sent);
  gossip_msgs_received_.Sync(g.msgs_received);
  gossip_bytes_sent_.Sync(g.bytes_sent);
  gossip_bytes_received_.Sync(g.bytes_received);
  dropped_envelope_.Sync(g.dropped_envelope);
  dropped_malformed_.Sync(g.dropped_malformed);
  dropped_spoofed_.Sync(g.dropped_spoofed);
  dropped_other_.Sync(g.dropped_from_self + g.dropped_wrong_target + g.dropped_after_leave);
  send_failures_.Sync(g.send_failures);
  state_unverified_.Sync(g.deltas_unverified);
  state_forged_.Sync(g.deltas_forged);
  membership_unverified_.Sync(g.member_updates_unverified);
  membership_forged_.Sync(g.member_updates_forged);
  membership_capped_.Sync(g.member_updates_capped);
  membership_ahead_.Sync(g.accusations_ahead);
  signing_key_conflicts_.Sync(g.signing_key_conflicts);
  signing_keys_confirmed_.Sync(g.signing_keys_confirmed);
  for (int c = 0; c < 2; ++c) {
    transport_msgs_sent_[c].Sync(t.messages_sent[c]);
    transport_msgs_received_[c].Sync(t.messages_received[c]);
    transport_bytes_sent_[c].Sync(t.bytes_sent[c]);
    transport_bytes_received_[c].Sync(t.bytes_received[c]);
  }
  transport_send_errors_.Sync(t.send_errors);
  transport_oversize_.Sync(t.oversize_drops);
  transport_blocked_.Sync(t.blocked_drops);
  transport_fault_.Sync(t.fault_drops);
  transport_rate_.Sync(t.rate_drops);
  transport_pool_.Sync(t.pool_waits);
  transport_refused_.Sync(t.connections_refused);
  transport_inbound_->Set(static_cast<double>(t.inbound_frame_bytes));

  double by_state[4] = {0, 0, 0, 0};
  double oldest = 0;
  for (const gossip::MemberView& m : node.gossip().Members()) {
    by_state[static_cast<int>(m.state)] += 1;
    if (m.state == gossip::MemberState::kAlive && m.has_load) {
      oldest = std::max(oldest, ToSeconds(now - m.load_updated));
    }
  }
  for (int i = 0; i < 4; ++i) peers_[i]->Set(by_state[i]);
  view_age_max_->Set(oldest);
  local_health_->Set(node.gossip().local_health());
  overloaded_->Set(node.gossip().overloaded() ? 1 : 0);

  engine_waiting_->Set(load.waiting_requests);
  engine_running_->Set(load.running_requests);
  kv_used_->Set(static_cast<double>(load.kv_used_tokens));
  kv_capacity_->Set(static_cast<double>(load.kv_capacity_tokens));

  server_timeouts_.Sync(server.read_timeouts);
  server_too_large_.Sync(server.body_too_large);
  server_header_too_large_.Sync(server.header_too_large);
  server_bad_.Sync(server.bad_requests);
  server_refused_.Sync(server.connections_refused);
  server_evicted_.Sync(server.idle_evicted);
  client_aborts_.Sync(server.client_aborts);
  tls_handshake_failures_.Sync(server.tls_handshake_failures);
  tls_handshake_timeouts_.Sync(server.tls_handshake_timeouts);
  open_connections_->Set(static_cast<double>(open_connections));
}

}  // namespace hearsay::net
