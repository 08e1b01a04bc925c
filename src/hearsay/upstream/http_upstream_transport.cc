// HttpUpstreamTransport: see http_upstream_transport.h.
#include "hearsay/upstream/http_upstream_transport.h"

#include <mutex>
#include <optional>
#include <string>
#include <utility>

namespace hearsay::upstream {
namespace {

// Shared by the I/O-side handlers and the core-side handle.
struct CallState {
  UpstreamCallbacks callbacks;
  bool cancelled = false;  // core thread only
  std::shared_ptr<http::RequestHandle> handle;

  // What the I/O side received and the core has not taken yet. One post carries everything that
  // arrived before the core got to it: a JSON answer's header, body and end cost one trip to the
  // core thread, not three.
  std::mutex mu;
  std::optional<int> status;   // guarded by mu
  std::string body;            // guarded by mu
  std::optional<Status> done;  // guarded by mu
  bool posted = false;         // guarded by mu: a Deliver task is queued on the core

  // On an I/O thread: records an event with `add` and posts a delivery unless one is queued.
  template <typename Add>
  static void Receive(const std::shared_ptr<CallState>& state,
                      const HttpUpstreamTransport::PostToCore& post, Add add) {
    {
      std::lock_guard lock(state->mu);
      add(*state);
      if (state->posted) return;
      state->posted = true;
    }
    post([state] { state->Deliver(); });
  }

  // On the core thread: hands what arrived to the callbacks, in order.
  void Deliver() {
    std::optional<int> got_status;
    std::string got_body;
    std::optional<Status> got_done;
    {
      std::lock_guard lock(mu);
      got_status.swap(status);
      got_body.swap(body);
      got_done.swap(done);
      posted = false;
    }
    if (got_status && !cancelled && callbacks.on_headers) callbacks.on_headers(*got_status);
    if (!got_body.empty() && !cancelled && callbacks.on_body) callbacks.on_body(got_body);
    if (got_done && !cancelled) {
      cancelled = true;  // exactly one on_done; the handle is finished
      if (callbacks.on_done) callbacks.on_done(std::move(*got_done));
    }
  }
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
    CallState::Receive(state, post, [status](CallState& s) { s.status = status; });
  };
  h.on_body = [post, state](std::string_view chunk) {
    CallState::Receive(state, post, [chunk](CallState& s) { s.body.append(chunk); });
  };
  h.on_done = [post, state](Status status) {
    CallState::Receive(state, post, [&status](CallState& s) { s.done.emplace(std::move(status)); });
  };
  state->handle = client_.Send(std::move(req), std::move(h));
  return std::make_unique<HttpCall>(state);
}

}  // namespace hearsay::upstream
