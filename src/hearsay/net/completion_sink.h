// CompletionSink: turns one request's events from node::Node into the HTTP response.
//
// The node reports OnFirstToken, OnOutput (token ids from the own engine, or text from a peer),
// and OnComplete or OnError. The sink renders them with api:: for what the client asked:
//   - a client with "stream": false gets one JSON body (text_completion or chat.completion) with
//     usage, including prompt_tokens_details.cached_tokens;
//   - a client with "stream": true gets server-sent events from the first token on, a final chunk
//     with finish_reason, the usage chunk if stream_options.include_usage, and data: [DONE];
//   - a peer (hop request) always gets a stream whose headers, sent at the first token, carry
//     X-Hearsay-Prompt-Tokens, X-Hearsay-Cached-Tokens and X-Hearsay-Node, and always ends with
//     the usage chunk (the entry node needs it);
//   - a client's answer (body, stream or error) carries X-Hearsay-Served-By (the node whose
//     engine served it) and X-Hearsay-Entry (this node).
// An error before the first token becomes an OpenAI error JSON with its HTTP status (the status
// line has not been sent yet); after it, an error event and data: [DONE] end the stream.
//
// Ownership: the daemon owns the sink (until `on_done` has run) and shares the Responder with the
// HTTP server. Thread-safety: core thread only; the Responder posts to its connection's strand.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "hearsay/api/api_error.h"
#include "hearsay/api/openai_response.h"
#include "hearsay/api/tokenizer.h"
#include "hearsay/common/status.h"
#include "hearsay/env/peer_client.h"
#include "hearsay/http/server.h"

namespace hearsay::net {

struct CompletionOptions {
  api::ResponseMeta meta;
  bool stream = false;
  bool include_usage = false;
  // A hop request from a peer (answered as a stream with the peer headers).
  bool hop = false;
  // Requested max_tokens: fewer completion tokens mean the answer stopped ("stop").
  uint32_t max_tokens = 0;
  // This node's id (X-Hearsay-Node).
  std::string node_id;
};

// Called once when the response is complete (or failed): the HTTP status the client got
// (200 also for a stream that ended with an error event), whether it failed, and whether it was
// a bounce (a hop request sent back unserved: the peer protocol working, not an error).
using CompletionDone = std::function<void(int http_status, bool failed, bool bounced)>;
// Called at the first token.
using CompletionFirst = std::function<void(const PeerFirstToken& first)>;

// `text` with every network address ("10.0.0.5:8081", "[::1]:9000", "gpu3.internal:8000",
// "localhost:8080") replaced by "<address>".
std::string RedactAddresses(std::string_view text);
// The error a client is shown: the same status with the internal addresses in its message (an
// engine's, a peer's) redacted. The sink logs the original.
Status ClientFacing(const Status& status);

class CompletionSink final : public ResponseSink {
 public:
  CompletionSink(CompletionOptions options, std::shared_ptr<http::Responder> responder,
                 const api::Tokenizer& tokenizer, CompletionFirst on_first, CompletionDone on_done);

  void OnFirstToken(uint64_t id, const PeerFirstToken& first) override;
  void OnOutput(uint64_t id, const PeerOutput& output) override;
  void OnComplete(uint64_t id, const PeerUsage& usage) override;
  void OnError(uint64_t id, const Status& status, bool before_first_token) override;
  // Discards the answer collected so far (a one-body client's peer failed; node::Node serves the
  // request again). The first attempt's time to first token stays observed.
  void OnRestart(uint64_t id) override;

  bool done() const { return done_; }
  // Marks the request abandoned (client gone): no more bytes are sent, on_done is not called.
  void Abandon() { done_ = true; }

 private:
  bool streaming() const { return options_.stream || options_.hop; }
  // X-Hearsay-Served-By and X-Hearsay-Entry of a client's answer.
  void AddClientHeaders(http::Headers* h) const;
  void Finish(int status, bool failed, bool bounced = false);

  CompletionOptions options_;
  std::shared_ptr<http::Responder> responder_;
  const api::Tokenizer& tokenizer_;
  CompletionFirst on_first_;
  CompletionDone on_done_;
  PeerFirstToken first_;
  bool started_ = false;  // the stream's headers went out
  bool first_chunk_ = true;
  bool done_ = false;
  std::string text_;                          // non-streaming: the whole answer
  std::string scratch_;                       // streaming: this event's text
  std::optional<api::ChunkRenderer> chunks_;  // streaming: made at the first chunk
};

// The one mapping of core errors to OpenAI errors (status and type).
api::ApiError ToApiError(const Status& status);

// Headers of a JSON response / an SSE stream.
http::Headers JsonHeaders();
http::Headers SseHeaders();

}  // namespace hearsay::net
