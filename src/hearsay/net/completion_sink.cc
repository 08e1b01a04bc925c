#include "hearsay/net/completion_sink.h"

#include <spdlog/spdlog.h>

#include <cctype>
#include <utility>

#include "hearsay/http/peer_headers.h"

namespace hearsay::net {

http::Headers JsonHeaders() { return {{"content-type", "application/json"}}; }

http::Headers SseHeaders() {
  return {{"content-type", "text/event-stream"},
          {"cache-control", "no-cache"},
          {"x-accel-buffering", "no"}};
}

api::ApiError ToApiError(const Status& status) {
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange:
    case StatusCode::kResourceExhausted:  // e.g. a request that can never fit the KV cache
      return api::InvalidRequest("", status.message());
    case StatusCode::kUnavailable:
    case StatusCode::kAborted:
      return api::Unavailable(status.message());
    // Only the hops behind this node (engine, peer) report these: a malformed answer, or none in
    // time. They are the gateway's 502 and 504, not a failure of this node.
    case StatusCode::kDataLoss:
      return api::BadGateway(status.message());
    case StatusCode::kDeadlineExceeded:
      return api::GatewayTimeout(status.message());
    case StatusCode::kPermissionDenied:
    case StatusCode::kUnauthenticated:
      return api::Forbidden(status.message());
    default:
      return api::Internal(status.ToString());
  }
}

std::string RedactAddresses(std::string_view text) {
  auto host_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_';
  };
  std::string out;
  size_t copied = 0;
  for (size_t colon = text.find(':'); colon != std::string_view::npos;
       colon = text.find(':', colon + 1)) {
    size_t digits = colon + 1;
    while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) {
      ++digits;
    }
    if (digits == colon + 1 || digits - colon - 1 > 5) continue;  // not a port
    size_t begin = colon;
    if (begin > 0 && text[begin - 1] == ']') {  // [v6]:port
      const size_t open = text.rfind('[', begin - 1);
      if (open == std::string_view::npos || open < copied) continue;
      begin = open;
    } else {
      while (begin > copied && host_char(text[begin - 1])) --begin;
      const std::string_view host = text.substr(begin, colon - begin);
      // A name or address: has a dot (IPv4, a domain) or is localhost; not "HTTP 503:".
      if (host.empty() || (host.find('.') == std::string_view::npos && host != "localhost")) {
        continue;
      }
    }
    out.append(text.substr(copied, begin - copied));
    out.append("<address>");
    copied = digits;
  }
  out.append(text.substr(copied));
  return out;
}

Status ClientFacing(const Status& status) {
  return Status(status.code(), RedactAddresses(status.message()));
}

CompletionSink::CompletionSink(CompletionOptions options,
                               std::shared_ptr<http::Responder> responder,
                               const api::Tokenizer& tokenizer, CompletionFirst on_first,
                               CompletionDone on_done)
    : options_(std::move(options)),
      responder_(std::move(responder)),
      tokenizer_(tokenizer),
      on_first_(std::move(on_first)),
      on_done_(std::move(on_done)) {}

void CompletionSink::OnFirstToken(uint64_t /*id*/, const PeerFirstToken& first) {
  if (done_) return;
  first_ = first;
  if (on_first_) on_first_(first);
  if (!streaming()) return;
  http::Headers h = SseHeaders();
  if (options_.hop) {
    h.emplace_back(http::kPromptTokensHeader, std::to_string(first.prompt_tokens));
    h.emplace_back(http::kCachedTokensHeader, std::to_string(first.cached_tokens));
    h.emplace_back(http::kNodeHeader, options_.node_id);
  } else {
    AddClientHeaders(&h);
  }
  responder_->StartStream(200, std::move(h));
  started_ = true;
}

void CompletionSink::OnOutput(uint64_t /*id*/, const PeerOutput& output) {
  if (done_) return;
  std::string& out = streaming() ? scratch_ : text_;
  if (streaming()) scratch_.clear();
  for (uint32_t t : output.tokens) tokenizer_.AppendToken(t, &out);
  out.append(output.text);
  if (!streaming() || scratch_.empty()) return;
  if (!chunks_) chunks_.emplace(options_.meta);
  std::string chunk;
  chunks_->Append(scratch_, first_chunk_, &chunk);
  responder_->Write(std::move(chunk));
  first_chunk_ = false;
}

void CompletionSink::OnComplete(uint64_t /*id*/, const PeerUsage& usage) {
  if (done_) return;
  const api::UsageCounts counts{usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens};
  const std::string_view finish =
      usage.completion_tokens >= options_.max_tokens ? api::kFinishLength : api::kFinishStop;
  if (!streaming()) {
    http::Headers h = JsonHeaders();
    AddClientHeaders(&h);
    responder_->Respond(200, std::move(h),
                        api::RenderCompletion(options_.meta, text_, finish, counts));
    Finish(200, false);
    return;
  }
  if (!started_) {  // no first token came (cannot happen with the node's contract); be safe
    http::Headers h = SseHeaders();
    if (!options_.hop) AddClientHeaders(&h);
    responder_->StartStream(200, std::move(h));
    started_ = true;
  }
  std::string tail = api::RenderFinalChunk(options_.meta, finish);
  if (options_.include_usage || options_.hop) tail += api::RenderUsageChunk(options_.meta, counts);
  tail += api::kSseDone;
  responder_->Write(std::move(tail));
  responder_->End();
  Finish(200, false);
}

void CompletionSink::OnError(uint64_t /*id*/, const Status& status, bool /*before_first_token*/) {
  if (done_) return;
  // A peer keeps the detail (its entry node logs it); a client gets no internal address.
  const Status shown = options_.hop ? status : ClientFacing(status);
  if (!options_.hop && shown.message() != status.message()) {
    spdlog::warn("event=request_failed node={} id={} error=\"{}\"", options_.node_id,
                 options_.meta.id, api::Truncated(status.ToString(), 256));
  }
  // NOT_FOUND from the node: no live member serves the model (a peer's 404 comes back as it).
  const api::ApiError error = shown.code() == StatusCode::kNotFound
                                  ? api::UnknownModel(options_.meta.model)
                                  : ToApiError(shown);
  if (!started_) {
    http::Headers h = JsonHeaders();
    if (!options_.hop) AddClientHeaders(&h);
    responder_->Respond(error.http_status, std::move(h), api::RenderError(error));
    Finish(error.http_status, true,
           options_.hop && status.message().find(kBouncedMessage) != std::string::npos);
    return;
  }
  std::string tail = api::RenderSseError(error);
  tail += api::kSseDone;
  responder_->Write(std::move(tail));
  responder_->End();
  Finish(200, true);
}

void CompletionSink::OnRestart(uint64_t /*id*/) {
  if (done_ || started_) return;  // a started stream cannot be taken back (the node never asks)
  text_.clear();
  first_ = PeerFirstToken{};
}

void CompletionSink::AddClientHeaders(http::Headers* h) const {
  // Before a first token (an error) no engine served anything: the entry node answered.
  h->emplace_back(http::kServedByHeader,
                  first_.served_by.empty() ? options_.node_id : first_.served_by);
  h->emplace_back(http::kEntryHeader, options_.node_id);
}

void CompletionSink::Finish(int status, bool failed, bool bounced) {
  done_ = true;
  if (on_done_) on_done_(status, failed, bounced);
}

}  // namespace hearsay::net
