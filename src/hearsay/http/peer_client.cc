// HttpPeerClient: one forward = one pooled http::Client request whose SSE answer is decoded on the
// I/O thread and relayed to the core as sink events. See peer_client.h for the contract.
#include "hearsay/http/peer_client.h"

#include <algorithm>
#include <charconv>
#include <utility>

#include "hearsay/api/api_error.h"
#include "hearsay/api/sse_parser.h"
#include "hearsay/api/stream_event_scanner.h"
#include "hearsay/common/check.h"
#include "hearsay/http/bounce_header.h"
#include "hearsay/http/peer_headers.h"

namespace hearsay::http {

namespace {

// Bytes of a peer's error body kept for the error message.
constexpr size_t kMaxErrorBody = 512;

uint32_t HeaderCount(const Headers& headers, std::string_view name) {
  auto v = FindHeader(headers, name);
  if (!v) return 0;
  uint32_t n = 0;
  auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
  return ec == std::errc() && end == v->data() + v->size() ? n : 0;
}

// How a peer's HTTP error status reads as a Status.
StatusCode CodeForHttpStatus(int status) {
  switch (status) {
    case 400:
      return StatusCode::kInvalidArgument;
    case 401:
      return StatusCode::kUnauthenticated;
    case 403:
      return StatusCode::kPermissionDenied;
    case 404:
      return StatusCode::kNotFound;
    case 408:
    case 504:
      return StatusCode::kDeadlineExceeded;
    case 429:
      return StatusCode::kResourceExhausted;
    case 500:
      return StatusCode::kInternal;
    case 502:  // the peer's engine answered garbage: the entry node answers 502 too
      return StatusCode::kDataLoss;
    default:
      return StatusCode::kUnavailable;
  }
}

}  // namespace

struct HttpPeerClient::Forwarding {
  // Core thread only.
  uint64_t id = 0;
  ResponseSink* sink = nullptr;
  std::shared_ptr<RequestHandle> handle;
  bool first_token_delivered = false;
  bool finished = false;

  // I/O thread only (one request's client callbacks never run concurrently).
  std::string peer;
  api::SseParser parser;
  api::StreamEventDecoder decoder;  // the peer's events, which repeat one envelope
  int http_status = 0;
  bool accepted = false;         // 2xx headers arrived
  bool terminal_posted = false;  // [DONE] or an error already went to the core
  std::string error_body;        // start of a non-2xx body
  api::UsageCounts usage;
};

HttpPeerClient::HttpPeerClient(Client& client, PostToCore post_to_core, PeerClientOptions options)
    : client_(client),
      post_to_core_(std::move(post_to_core)),
      options_(std::move(options)),
      alive_(std::make_shared<bool>(true)) {
  HEARSAY_CHECK(post_to_core_ != nullptr);
}

HttpPeerClient::~HttpPeerClient() {
  alive_.reset();
  for (auto& [id, fwd] : forwards_) {
    if (fwd->handle) fwd->handle->Cancel();
  }
}

void HttpPeerClient::Forward(const Address& to, PeerRequest request, ResponseSink* sink) {
  HEARSAY_CHECK(sink != nullptr);
  const uint64_t id = request.id;
  std::weak_ptr<bool> alive = alive_;
  auto post = post_to_core_;
  if (forwards_.count(id) != 0 || request.api_path.empty() || request.api_path.front() != '/') {
    Status error = forwards_.count(id) != 0
                       ? InvalidArgumentError("forward id " + std::to_string(id) + " in flight")
                       : InvalidArgumentError("forward without an API path");
    post([alive, sink, id, error] {
      if (alive.lock()) sink->OnError(id, error, true);
    });
    return;
  }

  auto fwd = std::make_shared<Forwarding>();
  fwd->id = id;
  fwd->sink = sink;
  fwd->peer = to;
  forwards_.emplace(id, fwd);

  // Runs `fn(self, fwd)` on the core thread unless the forward already ended (or the client is
  // gone).
  auto to_core = [this, alive, post, fwd](auto fn) {
    post([this, alive, fwd, fn = std::move(fn)]() mutable {
      if (!alive.lock() || fwd->finished) return;
      fn(*this, *fwd);
    });
  };
  // Ends the forward on the core thread with its terminal callback.
  auto terminate = [to_core](std::optional<api::UsageCounts> usage, Status status) {
    to_core([usage, status = std::move(status)](HttpPeerClient& self, Forwarding& f) {
      f.finished = true;
      // After [DONE] the peer ends its response by itself and the connection returns to the
      // pool; after an error the exchange may still run and is cut.
      self.Finish(f.id, /*cancel_exchange=*/!usage.has_value());
      if (usage) {
        f.sink->OnComplete(
            f.id, PeerUsage{usage->prompt_tokens, usage->completion_tokens, usage->cached_tokens});
      } else {
        f.sink->OnError(f.id, status, !f.first_token_delivered);
      }
    });
  };

  ClientRequest req;
  req.method = "POST";
  req.host_port = to;
  req.target = std::move(request.api_path);
  req.body = std::move(request.api_body);
  req.headers = {{"Content-Type", "application/json"},
                 {"Accept", "text/event-stream"},
                 {std::string(kHopHeader), "1"},
                 {std::string(kOriginHeader), options_.origin_node_id},
                 {std::string(kRequestIdHeader), std::to_string(request.origin_request)}};
  if (!request.tenant.empty()) req.headers.emplace_back(kTenantHeader, request.tenant);
  if (options_.sign) {
    std::string auth =
        options_.sign(req.method, req.target, req.body, request.target, request.tenant);
    if (!auth.empty()) req.headers.emplace_back(kPeerAuthHeader, std::move(auth));
  }
  if (request.bounce_above_ms > 0)
    req.headers.emplace_back(kBounceAboveHeader, FormatBounceAboveMs(request.bounce_above_ms));
  req.connect_timeout = options_.connect_timeout;
  req.response_timeout = options_.first_token_timeout;
  if (request.first_token_within_ms > 0) {
    // The first byte cannot come before the connection: a peer whose SYN-ACKs are lost is
    // given up as soon as one that never answers.
    const Duration within = FromMillis(request.first_token_within_ms);
    req.connect_timeout = std::min(req.connect_timeout, within);
    req.response_timeout = std::min(req.response_timeout, within);
  }
  req.idle_timeout = options_.idle_timeout;
  if (options_.check_peer_certificate) req.tls_peer_id = request.target;

  ResponseHandlers handlers;
  handlers.on_headers = [fwd, to_core](int status, const Headers& headers) {
    fwd->http_status = status;
    if (status < 200 || status >= 300) return;
    fwd->accepted = true;
    const std::optional<std::string_view> node = FindHeader(headers, kNodeHeader);
    PeerFirstToken first{HeaderCount(headers, kPromptTokensHeader),
                         HeaderCount(headers, kCachedTokensHeader),
                         node ? NodeId(*node) : NodeId()};
    to_core([first](HttpPeerClient&, Forwarding& f) {
      f.first_token_delivered = true;
      f.sink->OnFirstToken(f.id, first);
    });
  };
  handlers.on_body = [fwd, to_core, terminate](std::string_view bytes) {
    if (fwd->terminal_posted) return;
    if (!fwd->accepted) {
      size_t room = kMaxErrorBody - std::min(kMaxErrorBody, fwd->error_body.size());
      fwd->error_body.append(bytes.substr(0, room));
      return;
    }
    // Events of one network read are relayed as one OnOutput: one post per read, not per token.
    std::string text;
    fwd->parser.Feed(bytes, [&](std::string_view data) {
      if (fwd->terminal_posted) return;
      auto event = fwd->decoder.Decode(data);
      if (!event.ok()) {
        fwd->terminal_posted = true;
        terminate(std::nullopt, DataLossError("bad event from peer " + fwd->peer + ": " +
                                              event.status().message()));
        return;
      }
      if (event->error) {
        fwd->terminal_posted = true;
        terminate(std::nullopt,
                  UnavailableError("peer " + fwd->peer + " failed: " + event->error->message));
        return;
      }
      text += event->delta_text;
      if (event->usage) fwd->usage = *event->usage;
      if (event->done) {
        if (!text.empty()) {
          to_core([t = std::move(text)](HttpPeerClient&, Forwarding& f) {
            f.sink->OnOutput(f.id, PeerOutput{{}, t});
          });
          text.clear();
        }
        fwd->terminal_posted = true;
        terminate(fwd->usage, OkStatus());
      }
    });
    if (!fwd->terminal_posted && !fwd->parser.ok()) {
      fwd->terminal_posted = true;
      terminate(std::nullopt, DataLossError("bad stream from peer " + fwd->peer + ": " +
                                            fwd->parser.status().message()));
    }
    if (!text.empty()) {
      to_core([t = std::move(text)](HttpPeerClient&, Forwarding& f) {
        f.sink->OnOutput(f.id, PeerOutput{{}, t});
      });
    }
  };
  handlers.on_done = [fwd, terminate](Status status) {
    if (fwd->terminal_posted) return;
    fwd->terminal_posted = true;
    if (!fwd->accepted && fwd->http_status != 0) {
      std::string message = "peer " + fwd->peer + " answered " + std::to_string(fwd->http_status);
      if (!fwd->error_body.empty()) message += ": " + api::Truncated(fwd->error_body, 256);
      return terminate(std::nullopt, Status(CodeForHttpStatus(fwd->http_status), message));
    }
    if (status.ok()) {
      status = UnavailableError("stream from peer " + fwd->peer + " ended without [DONE]");
    }
    terminate(std::nullopt,
              Status(status.code(), "forward to " + fwd->peer + ": " + status.message()));
  };

  // Send only queues the request onto the client's strand: the I/O happens on the I/O threads.
  fwd->handle = client_.Send(std::move(req), std::move(handlers));
}

void HttpPeerClient::Cancel(uint64_t id) { Abort(id, AbortedError("forward cancelled")); }

void HttpPeerClient::Abort(uint64_t id, const Status& status) {
  auto it = forwards_.find(id);
  if (it == forwards_.end()) return;
  std::shared_ptr<Forwarding> fwd = it->second;
  // Events already posted from the I/O thread are dropped from now on (they check `finished`).
  fwd->finished = true;
  Finish(id, /*cancel_exchange=*/true);
  std::weak_ptr<bool> alive = alive_;
  post_to_core_([alive, fwd, status] {
    if (!alive.lock()) return;
    fwd->sink->OnError(fwd->id, status, !fwd->first_token_delivered);
  });
}

void HttpPeerClient::Finish(uint64_t id, bool cancel_exchange) {
  auto it = forwards_.find(id);
  if (it == forwards_.end()) return;
  // Closes the connection if the exchange is still running (a no-op once it is done).
  if (cancel_exchange && it->second->handle) it->second->handle->Cancel();
  forwards_.erase(it);
}

}  // namespace hearsay::http
