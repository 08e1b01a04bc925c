// Fuzzes the API's untrusted-input parsers with arbitrary bytes. Properties checked (a violation
// aborts):
//   - ParseRequest never crashes, for either endpoint; an accepted request satisfies the limits
//     (non-empty prompt within max_prompt_chars, max_tokens in 1..max_output_tokens, at most four
//     non-empty stop sequences); a refused one renders as valid error JSON with status 400;
//   - whenever the one-pass request scanner (ScanRequest) answers, the tree parser accepts the
//     body and returns the same request;
//   - SseParser gives the same events whether the bytes come whole or split at any point, and its
//     buffered bytes never exceed the bound;
//   - ParseStreamEvent never crashes on any event, and agrees with a naive reference decoder
//     built on a JSON tree (ReferenceDecode); whenever the one-pass scanner (ScanStreamEvent)
//     answers, the SAX decoder returns the same event; a decoded chunk re-rendered and decoded
//     again gives the same text and usage; StreamEventDecoder answers as ParseStreamEvent, also
//     for the event again with its text replaced (the event it keeps, repeated);
//   - the tokenizer's pieces are non-empty and concatenate back to the input;
//   - the request budget (MeasureJson, a SAX pass): it reads each byte at most once and delivers
//     at most one event per byte; on valid JSON it reads every byte and its counts agree with the
//     JSON tree's (members at least the tree's, as repeated keys count each time) and its longest
//     number with a naive count; under a tight budget it stops with no count more than one over
//     its limit, a request ParseRequest accepts has, counted on its JSON tree, no more members,
//     array elements or depth than the budget allows, and a refused one over the budget says so.
// The seed corpus (fuzz/corpus/openai_request_fuzz/) holds valid and invalid request bodies and
// event streams.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hearsay/api/openai_request.h"
#include "hearsay/api/openai_response.h"
#include "hearsay/api/request_budget.h"
#include "hearsay/api/request_scanner.h"
#include "hearsay/api/sse_parser.h"
#include "hearsay/api/stream_event_scanner.h"
#include "hearsay/api/tokenizer.h"
#include "hearsay/common/check.h"

namespace hearsay::api {
namespace {

void CheckRequest(Endpoint endpoint, std::string_view body) {
  Limits limits;
  limits.max_prompt_chars = 4096;
  limits.max_output_tokens = 256;
  limits.default_max_tokens = 16;
  const auto result = ParseRequest(endpoint, body, limits);
  const bool within_budget = !CheckBudget(body, limits.budget).has_value();
  if (!within_budget) HEARSAY_CHECK(std::holds_alternative<ApiError>(result));
  if (const std::optional<ApiRequest> fast = ScanRequest(endpoint, body, limits);
      fast && within_budget) {
    const auto tree = ParseRequestTree(endpoint, body, limits);
    HEARSAY_CHECK(std::holds_alternative<ApiRequest>(tree));
    HEARSAY_CHECK(std::get<ApiRequest>(tree) == *fast);
  }
  if (const auto* request = std::get_if<ApiRequest>(&result)) {
    HEARSAY_CHECK(request->endpoint == endpoint);
    HEARSAY_CHECK(!request->model.empty());
    HEARSAY_CHECK(!request->prompt.empty() && request->prompt.size() <= limits.max_prompt_chars);
    HEARSAY_CHECK(request->max_tokens >= 1 && request->max_tokens <= limits.max_output_tokens);
    HEARSAY_CHECK(request->stop.size() <= kMaxStopSequences);
    for (const std::string& stop : request->stop) HEARSAY_CHECK(!stop.empty());
    HEARSAY_CHECK(request->temperature >= 0 && request->temperature <= 2);
    HEARSAY_CHECK(!request->include_usage || request->stream);
    return;
  }
  const ApiError& error = std::get<ApiError>(result);
  HEARSAY_CHECK(error.http_status == 400);
  HEARSAY_CHECK(!error.message.empty() && error.message.size() < 1024);
  const auto rendered = nlohmann::json::parse(RenderError(error), nullptr, false);
  HEARSAY_CHECK(!rendered.is_discarded());
  HEARSAY_CHECK(rendered["error"]["message"].is_string());
}

// Members, array elements and depth of a parsed tree, counted naively.
void CountTree(const nlohmann::json& j, size_t depth, JsonShape* shape) {
  if (!j.is_structured()) return;
  shape->depth = std::max(shape->depth, depth + 1);
  (j.is_object() ? shape->members : shape->array_items) += j.size();
  for (const auto& child : j) CountTree(child, depth + 1, shape);
}

// The longest number of a valid JSON text, counted naively: outside strings, a number is a
// maximal run of number characters starting with '-' or a digit (an 'e' of true or false starts
// no number).
size_t ReferenceLongestNumber(std::string_view text) {
  const auto number_char = [](char c) {
    return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
  };
  size_t longest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      size_t end = i;
      while (end < text.size() && number_char(text[end])) ++end;
      longest = std::max(longest, end - i);
      i = end - 1;
    }
  }
  return longest;
}

void CheckBudgetLimits(std::string_view body) {
  const JsonShape full = MeasureJson(body, Budget{SIZE_MAX, SIZE_MAX, SIZE_MAX, SIZE_MAX});
  HEARSAY_CHECK(full.steps <= body.size() && full.events <= full.steps);
  // On valid JSON the pass reads every byte (nlohmann ends the input at a NUL byte, the tree
  // parser and the pass alike) and counts what the tree holds.
  const nlohmann::json parsed = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_discarded()) {
    JsonShape tree;
    CountTree(parsed, 0, &tree);
    const size_t nul = body.find('\0');
    HEARSAY_CHECK(full.steps == (nul == std::string_view::npos ? body.size() : nul + 1));
    // A repeated key counts once in the tree (the last value wins) and every time in the pass,
    // with everything inside each of its values: only without repeats must the counts agree.
    HEARSAY_CHECK(tree.members <= full.members);
    if (tree.members == full.members) {
      HEARSAY_CHECK(full.array_items == tree.array_items && full.depth == tree.depth);
    } else {
      HEARSAY_CHECK(tree.array_items <= full.array_items && tree.depth <= full.depth);
    }
    HEARSAY_CHECK(full.longest_number == ReferenceLongestNumber(body.substr(0, nul)));
  }
  Limits limits;
  limits.budget = Budget{6, 4, 3, 8};
  const auto result = ParseRequest(Endpoint::kCompletions, body, limits);
  const JsonShape measured = MeasureJson(body, limits.budget);
  HEARSAY_CHECK(measured.steps <= full.steps && measured.events <= full.events);
  // The pass stops at the first count over the budget: no count is more than one over it.
  HEARSAY_CHECK(measured.members <= 7 && measured.array_items <= 5 && measured.depth <= 4);
  if (std::holds_alternative<ApiRequest>(result)) {
    JsonShape tree;
    CountTree(nlohmann::json::parse(body), 0, &tree);
    HEARSAY_CHECK(tree.members <= limits.budget.max_members);
    HEARSAY_CHECK(tree.array_items <= limits.budget.max_array_items);
    HEARSAY_CHECK(tree.depth <= limits.budget.max_depth);
    HEARSAY_CHECK(tree.members <= measured.members && tree.array_items <= measured.array_items);
    return;
  }
  const std::string& code = std::get<ApiError>(result).code;
  if (measured.members > 6 || measured.array_items > 4 || measured.longest_number > 8) {
    HEARSAY_CHECK(code == "request_too_complex" || measured.depth > 3);
  }
}

// Whether valid JSON `text` repeats a key in some object: the pass counts every occurrence, the
// tree (last value wins) one.
bool HasRepeatedKey(std::string_view text) {
  const nlohmann::json parsed = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return false;
  JsonShape tree;
  CountTree(parsed, 0, &tree);
  return tree.members < MeasureJson(text, Budget{SIZE_MAX, SIZE_MAX, SIZE_MAX, SIZE_MAX}).members;
}

std::vector<std::string> Events(std::string_view bytes, size_t split, size_t limit, bool* ok) {
  SseParser parser(limit);
  std::vector<std::string> events;
  const auto on_event = [&](std::string_view data) {
    HEARSAY_CHECK(data.size() <= limit);
    events.emplace_back(data);
  };
  parser.Feed(bytes.substr(0, split), on_event);
  parser.Feed(bytes.substr(split), on_event);
  *ok = parser.ok();
  return events;
}

// The naive model of ParseStreamEvent: the same decisions, read off a nlohmann::json tree.
// nullopt for what it refuses. (Duplicate keys resolve last-wins here, so inputs that the real
// decoder refuses for a duplicate key are not compared.)
std::optional<StreamEvent> ReferenceDecode(std::string_view data) {
  using nlohmann::json;
  StreamEvent event;
  if (data == "[DONE]") {
    event.done = true;
    return event;
  }
  const json j = json::parse(data, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  const auto text_of = [](const json& object, const char* name, std::string* out) {
    const auto it = object.find(name);
    if (it == object.end() || it->is_null()) return true;
    if (!it->is_string()) return false;
    *out = it->get<std::string>();
    return true;
  };
  const auto count_of = [](const json& object, const char* name, uint32_t* out) {
    const auto it = object.find(name);
    if (it == object.end() || it->is_null()) return true;
    if (!it->is_number_unsigned() || it->get<uint64_t>() > UINT32_MAX) return false;
    *out = static_cast<uint32_t>(it->get<uint64_t>());
    return true;
  };
  // Validity of every member read, wherever the error member is.
  bool valid = true;
  const auto error = j.find("error");
  const bool has_error = error != j.end() && !error->is_null();
  ApiError e;
  if (has_error) {
    if (!error->is_object()) return std::nullopt;
    valid &= text_of(*error, "message", &e.message) && text_of(*error, "type", &e.type) &&
             text_of(*error, "param", &e.param);
    const auto code = error->find("code");
    if (code != error->end() && code->is_number_integer()) {
      e.code = code->dump();
    } else {
      valid &= text_of(*error, "code", &e.code);
    }
  }
  const auto choices = j.find("choices");
  const bool has_choices = choices != j.end() && !choices->is_null();
  if (has_choices) {
    if (!choices->is_array()) return std::nullopt;
    if (!choices->empty()) {
      const json& c = (*choices)[0];
      if (!c.is_object()) return std::nullopt;
      const auto delta = c.find("delta");
      if (delta != c.end() && !delta->is_null()) {
        if (!delta->is_object()) return std::nullopt;
        valid &= text_of(*delta, "content", &event.delta_text);
      } else {
        std::string text;
        if (!text_of(c, "text", &text)) {
          if (!has_error) return std::nullopt;
        } else {
          event.delta_text = text;
        }
      }
      valid &= text_of(c, "finish_reason", &event.finish_reason);
    }
  }
  const auto usage = j.find("usage");
  const bool has_usage = usage != j.end() && !usage->is_null();
  if (has_usage) {
    if (!usage->is_object()) return std::nullopt;
    UsageCounts u;
    valid &= count_of(*usage, "prompt_tokens", &u.prompt_tokens) &&
             count_of(*usage, "completion_tokens", &u.completion_tokens);
    const auto details = usage->find("prompt_tokens_details");
    if (details != usage->end() && !details->is_null()) {
      if (!details->is_object()) return std::nullopt;
      valid &= count_of(*details, "cached_tokens", &u.cached_tokens);
    }
    event.usage = u;
  }
  if (!valid) return std::nullopt;
  if (has_error) {
    StreamEvent error_event;
    if (e.message.empty()) e.message = "the serving node reported an error";
    if (e.type.empty()) e.type = "server_error";
    e.http_status = 500;
    error_event.error = e;
    return error_event;
  }
  if (!has_choices && !has_usage) return std::nullopt;
  return event;
}

void CheckEvent(std::string_view data) {
  const auto event = ParseStreamEvent(data);
  if (const std::optional<StreamEvent> fast = ScanStreamEvent(data)) {
    const auto sax = ParseStreamEventSax(data);
    HEARSAY_CHECK(sax.ok());
    HEARSAY_CHECK(sax->done == fast->done && sax->delta_text == fast->delta_text);
    HEARSAY_CHECK(sax->finish_reason == fast->finish_reason && sax->usage == fast->usage);
    HEARSAY_CHECK(!sax->error && !fast->error);
  }
  const bool duplicate =
      !event.ok() && event.status().message().find("duplicate key") != std::string::npos;
  const bool too_deep =
      !event.ok() && event.status().message().find("nested too deep") != std::string::npos;
  // The decoder may refuse a repeated key's first value (its type) before it sees the repeat;
  // the reference, last-wins, never sees that value: such inputs are not compared either.
  if (!duplicate && !too_deep && !HasRepeatedKey(data)) {
    const auto reference = ReferenceDecode(data);
    HEARSAY_CHECK(event.ok() == reference.has_value());
    if (event.ok()) {
      HEARSAY_CHECK(event->done == reference->done);
      HEARSAY_CHECK(event->delta_text == reference->delta_text);
      HEARSAY_CHECK(event->finish_reason == reference->finish_reason);
      HEARSAY_CHECK(event->usage == reference->usage);
      HEARSAY_CHECK(event->error == reference->error);
    }
  }
  if (!event.ok() || event->done || event->error) return;
  // Re-render what was decoded and decode it again.
  for (const Endpoint endpoint : {Endpoint::kCompletions, Endpoint::kChatCompletions}) {
    ResponseMeta meta{endpoint, "id", 1, "m", "n"};
    std::string rendered = event->usage ? RenderUsageChunk(meta, *event->usage)
                                        : RenderChunk(meta, event->delta_text, true);
    const auto again = ParseStreamEvent(std::string_view(rendered).substr(6, rendered.size() - 8));
    HEARSAY_CHECK(again.ok());
    HEARSAY_CHECK(again->usage == event->usage);
    if (!event->usage) HEARSAY_CHECK(again->delta_text == event->delta_text);
  }
}

bool SameEvent(const Result<StreamEvent>& a, const Result<StreamEvent>& b) {
  if (a.ok() != b.ok()) return false;
  if (!a.ok()) return a.status().ToString() == b.status().ToString();
  return a->done == b->done && a->delta_text == b->delta_text &&
         a->finish_reason == b->finish_reason && a->usage == b->usage && a->error == b->error;
}

// One decoder: the event, then the event with its text's string replaced by plain, escaped,
// non-ASCII and quote-bearing strings and by its own tail.
void CheckRepeatedEvents(std::string_view data) {
  StreamEventDecoder decoder;
  HEARSAY_CHECK(SameEvent(decoder.Decode(data), ParseStreamEvent(data)));
  std::optional<TextSpan> span;
  if (!ScanStreamEvent(data, &span) || !span) return;
  const std::string_view head = data.substr(0, span->begin);
  const std::string_view tail = data.substr(span->end);
  for (std::string_view text :
       {std::string_view(""), std::string_view(" w"), std::string_view("\\"),
        std::string_view("\xC3\xA9"), std::string_view("\""), tail, data}) {
    std::string again(head);
    again.append(text);
    again.append(tail);
    HEARSAY_CHECK(SameEvent(decoder.Decode(again), ParseStreamEvent(again)));
  }
}

void CheckSse(std::string_view bytes) {
  if (bytes.empty()) return;
  const size_t split = static_cast<uint8_t>(bytes[0]) % (bytes.size() + 1);
  constexpr size_t kLimit = 512;
  bool whole_ok = false;
  bool split_ok = false;
  const auto whole = Events(bytes, bytes.size(), kLimit, &whole_ok);
  const auto parts = Events(bytes, split, kLimit, &split_ok);
  HEARSAY_CHECK(whole_ok == split_ok);
  HEARSAY_CHECK(whole == parts);
  for (const std::string& data : whole) CheckEvent(data);
  // Each input is also tried as one event's data.
  CheckEvent(bytes);
  CheckRepeatedEvents(bytes);
}

void CheckTokenizer(std::string_view text) {
  const Tokenizer tokenizer;
  std::string joined;
  for (std::string_view piece : tokenizer.Pieces(text)) {
    HEARSAY_CHECK(!piece.empty());
    joined.append(piece);
  }
  HEARSAY_CHECK(joined == text);
  HEARSAY_CHECK(tokenizer.Encode(text).size() == tokenizer.Pieces(text).size());
}

}  // namespace
}  // namespace hearsay::api

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  hearsay::api::CheckRequest(hearsay::api::Endpoint::kCompletions, input);
  hearsay::api::CheckRequest(hearsay::api::Endpoint::kChatCompletions, input);
  hearsay::api::CheckBudgetLimits(input);
  hearsay::api::CheckSse(input);
  hearsay::api::CheckTokenizer(input);
  return 0;
}
