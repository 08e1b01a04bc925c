#include "hearsay/loadgen/stream_recorder.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <utility>

namespace hearsay::loadgen {

StreamRecorder::StreamRecorder(uint64_t id, uint32_t target, Duration sent) {
  result_.id = id;
  result_.target = target;
  result_.sent = sent;
}

void StreamRecorder::Fail(ErrorKind kind, std::string message) {
  if (result_.error != ErrorKind::kNone) return;  // the first failure is the cause
  result_.error = kind;
  result_.error_message = std::move(message);
}

void StreamRecorder::OnHeaders(int status, bool json_body) {
  headers_ = true;
  json_body_ = json_body;
  result_.http_status = status;
  if (status < 200 || status > 299) Fail(ErrorKind::kHttpStatus, "HTTP " + std::to_string(status));
}

void StreamRecorder::OnBody(std::string_view chunk, Duration at) {
  if (result_.error == ErrorKind::kHttpStatus || json_body_) {
    const size_t room = kMaxKeptBodyBytes - std::min(kMaxKeptBodyBytes, kept_body_.size());
    kept_body_.append(chunk.substr(0, room));
    return;
  }
  if (result_.error != ErrorKind::kNone || done_) return;
  parser_.Feed(chunk, [&](std::string_view data) { OnEvent(data, at); });
  if (!parser_.ok()) Fail(ErrorKind::kProtocol, parser_.status().ToString());
}

void StreamRecorder::OnEvent(std::string_view data, Duration at) {
  if (result_.error != ErrorKind::kNone || done_) return;
  if (!first_event_) first_event_ = at;
  Result<api::StreamEvent> event = api::ParseStreamEvent(data);
  if (!event.ok()) {
    Fail(ErrorKind::kProtocol, "bad stream event: " + event.status().message());
    return;
  }
  if (event->error) {
    Fail(ErrorKind::kStream, "error event: " + event->error->message);
    return;
  }
  if (event->done) {
    done_ = true;
    return;
  }
  if (event->usage) {
    result_.has_usage = true;
    result_.prompt_tokens = event->usage->prompt_tokens;
    result_.cached_tokens = event->usage->cached_tokens;
    result_.completion_tokens = event->usage->completion_tokens;
  }
  if (!event->delta_text.empty()) {
    if (!result_.ttft) {
      result_.ttft = at - result_.sent;
    } else {
      result_.itl.push_back(at - *last_content_);
    }
    last_content_ = at;
  }
}

void StreamRecorder::ParseJsonBody() {
  // nlohmann throws on malformed input; the parse is confined to this function.
  const nlohmann::json j = nlohmann::json::parse(kept_body_, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) {
    Fail(ErrorKind::kProtocol, "response body is not a JSON object");
    return;
  }
  const auto usage = j.find("usage");
  if (usage == j.end() || !usage->is_object()) return;
  auto count = [](const nlohmann::json& o, const char* key) -> uint32_t {
    const auto it = o.find(key);
    return it != o.end() && it->is_number_unsigned() ? it->get<uint32_t>() : 0;
  };
  result_.has_usage = true;
  result_.prompt_tokens = count(*usage, "prompt_tokens");
  result_.completion_tokens = count(*usage, "completion_tokens");
  const auto details = usage->find("prompt_tokens_details");
  if (details != usage->end() && details->is_object()) {
    result_.cached_tokens = count(*details, "cached_tokens");
  }
}

RequestResult StreamRecorder::Finish(const Status& transport, Duration at) {
  result_.e2e = at - result_.sent;
  if (!transport.ok()) {
    if (transport.code() == StatusCode::kAborted) {
      Fail(ErrorKind::kCancelled, transport.ToString());
    } else if (transport.code() == StatusCode::kDeadlineExceeded) {
      Fail(ErrorKind::kTimeout, transport.ToString());
    } else {
      Fail(headers_ ? ErrorKind::kStream : ErrorKind::kConnect, transport.ToString());
    }
  } else if (!headers_) {
    Fail(ErrorKind::kProtocol, "the response ended without headers");
  } else if (result_.error == ErrorKind::kHttpStatus) {
    if (!kept_body_.empty()) result_.error_message += ": " + kept_body_.substr(0, 512);
  } else if (json_body_) {
    ParseJsonBody();
    if (result_.ok()) result_.ttft = result_.e2e;
  } else if (result_.ok() && !done_) {
    Fail(ErrorKind::kStream, "the stream ended before data: [DONE]");
  }
  if (result_.ok() && !result_.ttft && first_event_) result_.ttft = *first_event_ - result_.sent;
  if (!result_.ok()) {
    result_.ttft.reset();
    result_.itl.clear();
  }
  return std::move(result_);
}

}  // namespace hearsay::loadgen
