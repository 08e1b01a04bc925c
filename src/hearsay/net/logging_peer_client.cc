#include "hearsay/net/logging_peer_client.h"

#include <spdlog/spdlog.h>

namespace hearsay::net {

void LoggingPeerClient::Forward(const Address& to, PeerRequest request, ResponseSink* sink) {
  const uint64_t id = request.id;
  entries_[id] = Entry{to, sink};
  inner_.Forward(to, std::move(request), this);
}

void LoggingPeerClient::Cancel(uint64_t id) {
  if (entries_.erase(id) > 0) inner_.Cancel(id);
}

void LoggingPeerClient::Abort(uint64_t id, const Status& status) {
  if (entries_.count(id) > 0) inner_.Abort(id, status);
}

void LoggingPeerClient::OnFirstToken(uint64_t id, const PeerFirstToken& first) {
  auto it = entries_.find(id);
  if (it != entries_.end()) it->second.sink->OnFirstToken(id, first);
}

void LoggingPeerClient::OnOutput(uint64_t id, const PeerOutput& output) {
  auto it = entries_.find(id);
  if (it != entries_.end()) it->second.sink->OnOutput(id, output);
}

void LoggingPeerClient::OnComplete(uint64_t id, const PeerUsage& usage) {
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  ResponseSink* sink = it->second.sink;
  entries_.erase(it);
  sink->OnComplete(id, usage);
}

void LoggingPeerClient::OnError(uint64_t id, const Status& status, bool before_first_token) {
  auto it = entries_.find(id);
  if (it == entries_.end()) return;  // cancelled: the caller no longer listens
  const Entry e = it->second;
  entries_.erase(it);
  if (status.message().find(kBouncedMessage) != std::string_view::npos) {
    // A busy peer sent it back as asked (PeerRequest::bounce_above_ms): routine, not a failure.
    spdlog::debug("event=forward_bounced node={} peer_api={}", node_id_, e.to);
  } else {
    spdlog::warn("event=forward_failed node={} peer_api={} before_first_token={} error=\"{}\"",
                 node_id_, e.to, before_first_token, status.ToString());
  }
  e.sink->OnError(id, status, before_first_token);
}

}  // namespace hearsay::net
