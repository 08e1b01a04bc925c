// Incremental event-stream parsing (WHATWG rules for data lines) and OpenAI chunk decoding.
#include "hearsay/api/sse_parser.h"

#include <limits>
#include <nlohmann/json.hpp>

namespace hearsay::api {

namespace {
constexpr std::string_view kBom = "\xEF\xBB\xBF";
}  // namespace

SseParser::SseParser(size_t max_event_bytes) : max_event_bytes_(max_event_bytes) {
  HEARSAY_CHECK(max_event_bytes_ >= 1);
}

bool SseParser::Fits(size_t extra) {
  if (data_.size() + extra <= max_event_bytes_) return true;
  status_ = ResourceExhaustedError("server-sent event exceeds the limit of " +
                                   std::to_string(max_event_bytes_) + " bytes");
  line_.clear();
  line_.shrink_to_fit();
  data_.clear();
  data_.shrink_to_fit();
  return false;
}

void SseParser::Feed(std::string_view bytes,
                     const std::function<void(std::string_view)>& on_event) {
  if (!ok()) return;
  if (at_start_) {
    while (!bytes.empty() && bom_bytes_seen_ < kBom.size() && bytes[0] == kBom[bom_bytes_seen_]) {
      ++bom_bytes_seen_;
      bytes.remove_prefix(1);
    }
    if (bom_bytes_seen_ < kBom.size()) {
      if (bytes.empty()) return;  // still possibly a BOM
      // Not a BOM after all: the bytes taken for one were ordinary input.
      at_start_ = false;
      FeedLines(kBom.substr(0, bom_bytes_seen_), on_event);
    }
    at_start_ = false;
  }
  FeedLines(bytes, on_event);
}

void SseParser::FeedLines(std::string_view bytes,
                          const std::function<void(std::string_view)>& on_event) {
  size_t i = 0;
  const size_t n = bytes.size();
  if (after_cr_ && n > 0) {
    if (bytes[0] == '\n') i = 1;
    after_cr_ = false;
  }
  while (i < n && ok()) {
    const size_t end = bytes.find_first_of("\r\n", i);
    if (end == std::string_view::npos) {
      if (!Fits(line_.size() + (n - i))) return;
      line_.append(bytes.substr(i));
      return;
    }
    const std::string_view piece = bytes.substr(i, end - i);
    if (line_.empty()) {
      if (!Fits(piece.size())) return;
      ProcessLine(piece, on_event);
    } else {
      if (!Fits(line_.size() + piece.size())) return;
      line_.append(piece);
      std::string line = std::move(line_);
      line_.clear();
      ProcessLine(line, on_event);
    }
    if (bytes[end] == '\r') {
      if (end + 1 == n) {
        after_cr_ = true;  // an LF may follow in the next Feed()
        i = n;
      } else {
        i = bytes[end + 1] == '\n' ? end + 2 : end + 1;
      }
    } else {
      i = end + 1;
    }
  }
}

void SseParser::ProcessLine(std::string_view line,
                            const std::function<void(std::string_view)>& on_event) {
  if (line.empty()) {
    if (data_.empty()) return;
    data_.pop_back();  // the '\n' after the last data line
    std::string data = std::move(data_);
    data_.clear();
    on_event(data);
    return;
  }
  if (line[0] == ':') return;  // comment
  const size_t colon = line.find(':');
  const std::string_view field = line.substr(0, colon);
  if (field != "data") return;  // event, id, retry and unknown fields do not concern us
  std::string_view value =
      colon == std::string_view::npos ? std::string_view() : line.substr(colon + 1);
  if (!value.empty() && value[0] == ' ') value.remove_prefix(1);
  if (!Fits(value.size() + 1)) return;
  data_.append(value);
  data_.push_back('\n');
}

namespace {

using nlohmann::json;

Status Invalid(std::string message) {
  return InvalidArgumentError("stream event: " + std::move(message));
}

// A non-negative integer member that fits uint32; absent or null reads as 0.
Result<uint32_t> ReadCount(const json& object, std::string_view name) {
  const auto it = object.find(name);
  if (it == object.end() || it->is_null()) return uint32_t{0};
  if (!it->is_number_unsigned() || it->get<uint64_t>() > std::numeric_limits<uint32_t>::max()) {
    return Invalid("usage." + std::string(name) + " is not a 32-bit non-negative integer");
  }
  return static_cast<uint32_t>(it->get<uint64_t>());
}

Result<UsageCounts> ReadUsage(const json& usage) {
  if (!usage.is_object()) return Invalid("usage is not an object");
  UsageCounts counts;
  HEARSAY_ASSIGN_OR_RETURN(counts.prompt_tokens, ReadCount(usage, "prompt_tokens"));
  HEARSAY_ASSIGN_OR_RETURN(counts.completion_tokens, ReadCount(usage, "completion_tokens"));
  const auto details = usage.find("prompt_tokens_details");
  if (details != usage.end() && !details->is_null()) {
    if (!details->is_object()) return Invalid("usage.prompt_tokens_details is not an object");
    HEARSAY_ASSIGN_OR_RETURN(counts.cached_tokens, ReadCount(*details, "cached_tokens"));
  }
  return counts;
}

// A string member, or "" when absent or null.
Result<std::string> ReadText(const json& object, std::string_view name) {
  const auto it = object.find(name);
  if (it == object.end() || it->is_null()) return std::string();
  if (!it->is_string()) return Invalid(std::string(name) + " is not a string");
  return it->get<std::string>();
}

Result<ApiError> ReadError(const json& error) {
  if (!error.is_object()) return Invalid("error is not an object");
  ApiError out;
  out.http_status = 500;
  HEARSAY_ASSIGN_OR_RETURN(out.message, ReadText(error, "message"));
  HEARSAY_ASSIGN_OR_RETURN(out.type, ReadText(error, "type"));
  HEARSAY_ASSIGN_OR_RETURN(out.param, ReadText(error, "param"));
  // OpenAI's code is a string, but some servers send a number.
  const auto code = error.find("code");
  if (code != error.end() && code->is_number_integer()) {
    out.code = code->dump();
  } else {
    HEARSAY_ASSIGN_OR_RETURN(out.code, ReadText(error, "code"));
  }
  if (out.message.empty()) out.message = "the serving node reported an error";
  if (out.type.empty()) out.type = "server_error";
  return out;
}

Status ReadChoice(const json& choice, StreamEvent* event) {
  if (!choice.is_object()) return Invalid("choices[0] is not an object");
  const auto delta = choice.find("delta");
  if (delta != choice.end() && !delta->is_null()) {
    if (!delta->is_object()) return Invalid("choices[0].delta is not an object");
    HEARSAY_ASSIGN_OR_RETURN(event->delta_text, ReadText(*delta, "content"));
  } else {
    HEARSAY_ASSIGN_OR_RETURN(event->delta_text, ReadText(choice, "text"));
  }
  HEARSAY_ASSIGN_OR_RETURN(event->finish_reason, ReadText(choice, "finish_reason"));
  return OkStatus();
}

}  // namespace

Result<StreamEvent> ParseStreamEvent(std::string_view data) {
  StreamEvent event;
  if (data == "[DONE]") {
    event.done = true;
    return event;
  }
  json parsed = json::parse(data, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return Invalid("not JSON and not [DONE]");
  if (!parsed.is_object()) return Invalid("not a JSON object");
  const auto error = parsed.find("error");
  if (error != parsed.end() && !error->is_null()) {
    HEARSAY_ASSIGN_OR_RETURN(event.error, ReadError(*error));
    return event;
  }
  const auto choices = parsed.find("choices");
  const auto usage = parsed.find("usage");
  const bool has_choices = choices != parsed.end() && !choices->is_null();
  const bool has_usage = usage != parsed.end() && !usage->is_null();
  if (!has_choices && !has_usage) return Invalid("neither choices, usage nor error");
  if (has_choices) {
    if (!choices->is_array()) return Invalid("choices is not an array");
    // We only ever ask for one choice (n = 1); further ones are not ours to merge.
    if (!choices->empty()) HEARSAY_RETURN_IF_ERROR(ReadChoice((*choices)[0], &event));
  }
  if (has_usage) {
    HEARSAY_ASSIGN_OR_RETURN(event.usage, ReadUsage(*usage));
  }
  return event;
}

}  // namespace hearsay::api
