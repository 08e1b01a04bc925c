// LoggingPeerClient: a PeerClient decorator that logs every forward that fails, with the peer's
// address and whether the failure came before the first token (then the node retries elsewhere)
// or after it (then the client's stream ends with an error event).
//
// Ownership: borrows the inner client, which must outlive it; sinks are borrowed as PeerClient
// says. Thread-safety: core thread only, like every PeerClient.
#pragma once

#include <string>
#include <unordered_map>

#include "hearsay/env/peer_client.h"

namespace hearsay::net {

class LoggingPeerClient final : public PeerClient, private ResponseSink {
 public:
  LoggingPeerClient(PeerClient& inner, std::string node_id)
      : inner_(inner), node_id_(std::move(node_id)) {}

  void Forward(const Address& to, PeerRequest request, ResponseSink* sink) override;
  void Cancel(uint64_t id) override;
  // The aborted forward's error is logged and passed on like any other failure.
  void Abort(uint64_t id, const Status& status) override;

 private:
  struct Entry {
    Address to;
    ResponseSink* sink = nullptr;
  };

  // ResponseSink: the inner client's events, passed through.
  void OnFirstToken(uint64_t id, const PeerFirstToken& first) override;
  void OnOutput(uint64_t id, const PeerOutput& output) override;
  void OnComplete(uint64_t id, const PeerUsage& usage) override;
  void OnError(uint64_t id, const Status& status, bool before_first_token) override;

  PeerClient& inner_;
  std::string node_id_;
  // Forwards in flight, by request id. Invariant: an entry exists until its terminal event or
  // its Cancel.
  std::unordered_map<uint64_t, Entry> entries_;
};

}  // namespace hearsay::net
