// HttpUpstreamTransport: the daemon's UpstreamTransport, over http::Client.
//
// The client runs on the I/O io_context; every callback goes to the core (post_to_core, which
// may run it at once when the I/O runs on the core thread: the client never calls back inside
// Send), where the engine lives, and is dropped there if the call was cancelled meanwhile (the
// cancelled flag is only read and written on the core thread, so no callback can slip past a
// Cancel()). The events of one network read reach the core together.
//
// Ownership: the client is borrowed and must outlive the transport and every call; post_to_core
// must stay callable as long as the client may call back. Thread-safety: Send and
// UpstreamCall::Cancel on the core thread only.
#pragma once

#include <functional>
#include <memory>

#include "hearsay/http/client.h"
#include "hearsay/upstream/upstream_transport.h"
#include "hearsay/upstream/upstream_url.h"

namespace hearsay::upstream {

class HttpUpstreamTransport final : public UpstreamTransport {
 public:
  using PostToCore = std::function<void(std::function<void()>)>;

  HttpUpstreamTransport(PostToCore post_to_core, http::Client& client, UpstreamUrl url);

  std::unique_ptr<UpstreamCall> Send(UpstreamHttpRequest request,
                                     UpstreamCallbacks callbacks) override;

 private:
  PostToCore post_;
  http::Client& client_;
  UpstreamUrl url_;
};

}  // namespace hearsay::upstream
