// HttpUpstreamTransport: see http_upstream_transport.h.
#include "hearsay/upstream/http_upstream_transport.h"

#include <utility>

namespace hearsay::upstream {
namespace {

// Shared by the I/O-side handlers and the core-side handle.
struct CallState {
  UpstreamCallbacks callbacks;
  bool cancelled = false;  // core thread only
  std::shared_ptr<http::RequestHandle> handle;
};

class HttpCall final : public UpstreamCall {
 public:
  explicit HttpCall(std::shared_ptr<CallState> state) : state_(std::move(state)) {}
  ~HttpCall() override { Cancel(); }
  void Cancel() override {
    if (state_->cancelled) return;
    state_->cancelled = true;
    if (state_->handle) state_->handle->Cancel();
  }

 private:
  std::shared_ptr<CallState> state_;
};

}  // namespace

HttpUpstreamTransport::HttpUpstreamTransport(PostToCore post_to_core, http::Client& client,
                                             UpstreamUrl url)
    : post_(std::move(post_to_core)), client_(client), url_(std::move(url)) {}

std::unique_ptr<UpstreamCall> HttpUpstreamTransport::Send(UpstreamHttpRequest request,
                                                          UpstreamCallbacks callbacks) {
  auto state = std::make_shared<CallState>();
  state->callbacks = std::move(callbacks);

  http::ClientRequest req;
  req.method = std::move(request.method);
  req.host_port = url_.host_port;
  req.target = url_.base_path + request.target;
  if (!request.body.empty()) req.headers.push_back({"content-type", "application/json"});
  req.headers.push_back({"accept", "text/event-stream, application/json"});
  req.body = std::move(request.body);
  // Completions, /health and /slots change nothing but the engine's cache: a request that met an
  // idle keep-alive connection closing under it is replayed once on a fresh connection.
  req.replayable = true;
  req.connect_timeout = request.connect_timeout;
  req.response_timeout = request.response_timeout;
  req.idle_timeout = request.idle_timeout;

  const PostToCore post = post_;  // copied: a late I/O callback must not reach into the transport
  http::ResponseHandlers h;
  h.on_headers = [post, state](int status, const http::Headers&) {
    post([state, status] {
      if (!state->cancelled && state->callbacks.on_headers) state->callbacks.on_headers(status);
    });
  };
  h.on_body = [post, state](std::string_view chunk) {
    post([state, data = std::string(chunk)] {
      if (!state->cancelled && state->callbacks.on_body) state->callbacks.on_body(data);
    });
  };
  h.on_done = [post, state](Status status) {
    post([state, status = std::move(status)]() mutable {
      if (state->cancelled) return;
      state->cancelled = true;  // exactly one on_done; the handle is finished
      if (state->callbacks.on_done) state->callbacks.on_done(std::move(status));
    });
  };
  state->handle = client_.Send(std::move(req), std::move(h));
  return std::make_unique<HttpCall>(state);
}

}  // namespace hearsay::upstream
