// http::HttpPeerClient: the daemon's PeerClient, forwarding a request to a peer over HTTP.
//
// Follows the peer protocol of docs/daemon.md: the client's OpenAI body is POSTed unchanged to
// the same path on the peer's api address, with X-Hearsay-Hop: 1, X-Hearsay-Peer-Auth (made per
// request by PeerClientOptions::sign) and
// X-Hearsay-Origin, over the pooled keep-alive http::Client. The peer answers as a stream:
//   200 + X-Hearsay-Prompt-Tokens / X-Hearsay-Cached-Tokens  -> sink->OnFirstToken
//   each `data: {chunk}` event with text                      -> sink->OnOutput(.text)
//   the chunk carrying `usage`                                -> remembered
//   `data: [DONE]`                                            -> sink->OnComplete(usage)
//   non-2xx, connect error, timeout before the headers        -> OnError(before_first_token=true)
//   an error event, or a stream broken after the headers      -> OnError(before_first_token=false)
// The SSE stream is parsed on the I/O thread; only the decoded events cross to the core.
//
// Threads: Forward, Cancel and Abort are called on the core thread. Sink callbacks run on the core
// thread too, delivered through `post_to_core`, never inside Forward or Cancel; exactly one
// terminal callback (OnComplete or OnError) per forwarded request.
// Ownership: the sink is borrowed until its terminal callback. The HttpPeerClient must outlive
// its in-flight forwards' callbacks (destroy it only after the core and I/O loops stopped).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "hearsay/env/peer_client.h"
#include "hearsay/env/time.h"
#include "hearsay/http/client.h"

namespace hearsay::http {

// Makes the X-Hearsay-Peer-Auth value of one forward (net/peer_auth.h): its method, path, body,
// the receiver's node id and the tenant (X-Hearsay-Tenant, empty when none), which the
// authenticator binds. An empty answer sends no header (--insecure clusters).
using SignForward =
    std::function<std::string(std::string_view method, std::string_view path, std::string_view body,
                              std::string_view receiver, std::string_view tenant)>;

struct PeerClientOptions {
  // Signs each forward as it starts (core thread); null sends no X-Hearsay-Peer-Auth.
  SignForward sign;
  // This node's id (X-Hearsay-Origin).
  std::string origin_node_id;
  Duration connect_timeout = 2s;
  // Until the peer's response headers, which it sends when the first token exists: so this
  // bounds the peer's queueing plus prefill.
  Duration first_token_timeout = 60s;
  // Longest silence between two pieces of the stream.
  Duration idle_timeout = 30s;
  // Mutual TLS (the Client speaks TLS): the peer's certificate must name the node the forward
  // is meant for (PeerRequest::target), not just any node of the CA.
  bool check_peer_certificate = false;
};

class HttpPeerClient final : public PeerClient {
 public:
  using PostToCore = std::function<void(std::function<void()>)>;

  HttpPeerClient(Client& client, PostToCore post_to_core, PeerClientOptions options);
  ~HttpPeerClient() override;
  HttpPeerClient(const HttpPeerClient&) = delete;
  HttpPeerClient& operator=(const HttpPeerClient&) = delete;

  // Forwards `request` (its api_path and api_body) to the peer api address `to` ("host:port").
  // A request id already in flight gets OnError(INVALID_ARGUMENT, before_first_token = true).
  void Forward(const Address& to, PeerRequest request, ResponseSink* sink) override;
  // Aborts the forward `id` (its client went away): the connection is closed and the sink gets
  // its terminal callback OnError(ABORTED, before_first_token as it stands), posted, which the
  // caller ignores. No-op for an unknown or finished id.
  void Cancel(uint64_t id) override;
  // Ends the forward `id` with `status` (its peer was declared dead): the connection is closed
  // and the sink gets OnError(status, before_first_token as it stands), posted.
  void Abort(uint64_t id, const Status& status) override;
  // Forwards in flight (core thread).
  size_t in_flight() const { return forwards_.size(); }

  struct Forwarding;  // One forward's state; defined in peer_client.cc.

 private:
  // Forgets forward `id`, cutting its HTTP exchange if `cancel_exchange`.
  void Finish(uint64_t id, bool cancel_exchange);

  Client& client_;
  PostToCore post_to_core_;
  PeerClientOptions options_;
  // Core thread only. Invariant: an entry exists until its terminal callback was delivered.
  std::unordered_map<uint64_t, std::shared_ptr<Forwarding>> forwards_;
  // Lets callbacks posted to the core detect that this client is gone.
  std::shared_ptr<bool> alive_;
};

}  // namespace hearsay::http
