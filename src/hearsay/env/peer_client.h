// PeerClient: how a node's core hands a request to another node and hears its streamed answer.
//
// The entry node forwards a request at most once (the hop marker `forwarded` is set on the copy it
// sends), and the receiving node serves it on its own engine. The answer streams back as events to
// a ResponseSink: OnFirstToken (with the serving engine's cached-token count, the evidence that
// corrects routing estimates), then OnComplete; or OnError at any point. An error before the first
// token (`before_first_token`) means nothing was served: the entry node retries elsewhere, so the
// client never loses the request.
//
// The same ResponseSink interface is what a node reports to its own client with, so one request
// type and one sink type serve clients, forwards and the simulator alike.
//
// Implementations: the simulator delivers to the target node after a sampled one-way delay and
// relays events back after another (sim/sim_cluster.h); the daemon speaks HTTP
// (http::HttpPeerClient, http/peer_client.h).
// Ownership: a sink is borrowed and must stay valid until its terminal callback (OnComplete or
// OnError). Thread-safety: callbacks run on the core's thread, never inside Forward() itself.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hearsay/common/ids.h"
#include "hearsay/common/status.h"

namespace hearsay {

// One generation request, as clients and peers send it. Token ids as prefix::TokenId.
struct PeerRequest {
  // Chosen by the sender; unique among the sender's live requests to one sink.
  uint64_t id = 0;
  std::vector<uint32_t> prompt;
  // Tokens to generate, >= 1.
  uint32_t max_output_tokens = 1;
  // Simulator only: the answer's tokens (see engine::EngineRequest::scripted_output).
  std::vector<uint32_t> scripted_output;
  // The hop marker: set on a forwarded copy, which is never forwarded again.
  bool forwarded = false;
  // On a forwarded copy: the node id it is meant for (the daemon binds it into the request's
  // authenticator, so the copy is refused by any other node).
  NodeId target;
  // On a forwarded copy: the entry node and its id for the request, for decision records
  // (node/decision_record.h). Informational; never trusted for anything else.
  NodeId origin;
  uint64_t origin_request = 0;
  // On a forwarded copy: the serving node bounces it back unserved (OnError before the first
  // token, RESOURCE_EXHAUSTED) when its own expected time to first token exceeds this many ms,
  // because the sender's next choice would answer sooner. 0 = always serve.
  double bounce_above_ms = 0;
  // On a forwarded copy: how long the sender waits for the first token before it gives the
  // forward up and routes the request again, in ms; 0 = the host's own limit (the daemon's
  // limits.forward_timeout_ms). The entry node sets it from the policy's expected time to first
  // token (node::NodeOptions::forward_deadline_factor), so a peer that drops packets silently
  // (partitioned, stopped) costs a few expected TTFTs, not the whole forward timeout.
  double first_token_within_ms = 0;
  // Daemon only, opaque to the core: the API path and body the client sent (an OpenAI request),
  // which a forward replays unchanged to the serving node.
  std::string api_path;
  std::string api_body;
  // The prefix-cache namespace (engine::EngineRequest::cache_namespace; 0: the shared one): the
  // request's block keys, its routing estimates and the engine's cache all follow it. The
  // simulator carries it with a forward; the daemon's serving node derives it again from what it
  // trusts (the tenant from an authenticated peer, the body's cache_salt).
  uint64_t cache_namespace = 0;
  // Daemon only, opaque to the core: the tenant the request is served for (API keys), which a
  // forward carries over the authenticated peer link; empty on an open node.
  std::string tenant;
  // The model the request is for: a canonical name, an alias or a LoRA adapter's name, resolved
  // by the node through its own and its peers' gossiped services (node/model_routing.h). Empty:
  // the entry node's first model. A forwarded copy carries the canonical name (or the adapter).
  // A node without a configured service serves every request whatever it names.
  std::string model;
  // Whether the client reads the answer as it is made (OpenAI "stream": true). When it does not,
  // and the request is served here for it, the engine may produce the answer in one piece
  // (engine::EngineRequest::stream). A forwarded copy is always streamed back.
  bool stream = true;
};

// The message of a bounce (PeerRequest::bounce_above_ms), so that hosts can tell a normal bounce
// from a failure in their logs; it survives the HTTP peer path inside the 503's error message.
inline constexpr std::string_view kBouncedMessage = "busy: sent back to the entry node";

// The first token of an answer.
struct PeerFirstToken {
  uint32_t prompt_tokens = 0;
  // Prompt tokens the serving engine found cached.
  uint32_t cached_tokens = 0;
  // The node whose engine served the request (set by that node; relayed unchanged by a forward).
  NodeId served_by;
};

// Final accounting (OpenAI `usage`).
struct PeerUsage {
  uint32_t prompt_tokens = 0;
  uint32_t completion_tokens = 0;
  uint32_t cached_tokens = 0;
};

// Output of an answer, in order: the first token's, then the rest (possibly several per event).
// Engines that work in token ids fill `tokens`; producers that have text (an upstream engine, a
// forwarded stream) fill `text`. Views are valid only during the callback.
struct PeerOutput {
  std::span<const uint32_t> tokens;
  std::string_view text;
};

// Receives the events of requests; each callback names its request.
class ResponseSink {
 public:
  virtual ~ResponseSink() = default;
  // The first output token exists (called at most once, before OnComplete).
  virtual void OnFirstToken(uint64_t id, const PeerFirstToken& first) = 0;
  // Output, from the first token on (after OnFirstToken, before OnComplete). Hosts that stream
  // the answer use it; the simulator does not need it.
  virtual void OnOutput(uint64_t /*id*/, const PeerOutput& /*output*/) {}
  // The answer finished; the last callback for this request.
  virtual void OnComplete(uint64_t id, const PeerUsage& usage) = 0;
  // The request failed; the last callback. `before_first_token` says nothing was served yet.
  virtual void OnError(uint64_t id, const Status& status, bool before_first_token) = 0;
  // Everything delivered so far is void and the request starts over: OnFirstToken comes again.
  // Only for a client request with `stream` false (its client reads nothing before the end)
  // whose serving peer failed after the first token: the node serves it again elsewhere. Default:
  // nothing to discard.
  virtual void OnRestart(uint64_t /*id*/) {}
};

class PeerClient {
 public:
  virtual ~PeerClient() = default;
  // Sends `request` to the node at `to`; its events reach `sink` later, ending with exactly one
  // terminal callback. An unreachable peer gives OnError(before_first_token = true).
  virtual void Forward(const Address& to, PeerRequest request, ResponseSink* sink) = 0;
  // Abandons the forward of request `id` (its client went away). The sink may still get one
  // terminal OnError for it, which the caller ignores. Default: nothing to abort (the simulator
  // lets the answer arrive and be dropped).
  virtual void Cancel(uint64_t /*id*/) {}
  // Ends the forward of request `id` now with `status` (its peer was declared dead): the sink gets
  // the terminal OnError(status, before_first_token as it stands), never inside Abort, which the
  // caller handles like any forward failure. No-op for an unknown or finished id. Default:
  // nothing (the forward ends by itself).
  virtual void Abort(uint64_t /*id*/, const Status& /*status*/) {}
};

}  // namespace hearsay
