// ScanRequest: see request_scanner.h. Each reader returns false on anything ParseRequest would
// refuse or read differently; false travels up the scanner and becomes nullopt, and the caller
// then asks the tree parser, which owns every error message.
#include "hearsay/api/request_scanner.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <string>
#include <vector>

#include "hearsay/api/chat_template.h"
#include "hearsay/api/json_scanner.h"
#include "hearsay/api/model_name.h"

namespace hearsay::api {
namespace {

// A plain unsigned integer (what the tree reads as an integer >= 0) in [min, max].
bool ReadUnsigned(JsonScanner& s, uint64_t min, uint64_t max, uint64_t* out) {
  return s.Unsigned(max, out) && *out >= min;
}

// Any JSON number within [min, max], as the tree's get<double>() sees it.
bool ReadDouble(JsonScanner& s, double min, double max, double* out) {
  const char p = s.Peek();
  if (p != '-' && !IsJsonDigit(p)) return false;
  std::string_view spelling;
  if (!s.Number(nullptr, &spelling)) return false;
  double v = 0;
  const auto [ptr, ec] = std::from_chars(spelling.data(), spelling.data() + spelling.size(), v);
  if (ec != std::errc() || ptr != spelling.data() + spelling.size()) return false;
  if (v == 0) v = 0;  // "-0" is the integer 0 to the tree
  if (!(v >= min && v <= max)) return false;
  *out = v;
  return true;
}

bool ReadBoolValue(JsonScanner& s, bool* out) {
  switch (s.Peek()) {
    case 't':
      *out = true;
      return s.Literal("true");
    case 'f':
      *out = false;
      return s.Literal("false");
    default:
      return false;
  }
}

bool ReadStringValue(JsonScanner& s, std::string* out) { return s.Peek() == '"' && s.String(out); }

// One content part at `depth`: {"type": "text", "text": "..."}, its text appended to `out`.
bool ReadTextPart(JsonScanner& s, int depth, std::string* out) {
  if (s.Peek() != '{') return false;
  bool text_part = false;
  bool has_text = false;
  std::string text;
  std::string type;
  const bool ok = s.Object(depth, [&](std::string_view key) {
    if (key == "type") {
      if (!ReadStringValue(s, &type)) return false;
      text_part = type == "text";
      return true;
    }
    if (key == "text") return has_text = ReadStringValue(s, &text);
    return s.Skip(depth + 1);
  });
  if (!ok || !text_part || !has_text) return false;
  out->append(text);
  return true;
}

// One message at `depth`: {"role": ..., "content": string | [text parts] | null (assistant)}.
bool ReadMessage(JsonScanner& s, int depth, ChatMessage* out) {
  if (s.Peek() != '{') return false;
  bool has_role = false;
  bool has_content = false;
  bool null_content = false;
  const bool ok = s.Object(depth, [&](std::string_view key) {
    if (key == "role") return has_role = ReadStringValue(s, &out->role);
    if (key != "content") return s.Skip(depth + 1);
    has_content = true;
    switch (s.Peek()) {
      case '"':
        return s.String(&out->content);
      case '[':
        out->content.clear();
        return s.Array(depth + 1,
                       [&](size_t) { return ReadTextPart(s, depth + 2, &out->content); });
      case 'n':
        null_content = true;
        out->content.clear();
        return s.Literal("null");
      default:
        return false;
    }
  });
  if (!ok || !has_role || !has_content) return false;
  if (std::find(std::begin(kChatRoles), std::end(kChatRoles), out->role) == std::end(kChatRoles)) {
    return false;
  }
  return !null_content || out->role == "assistant";
}

bool ReadStop(JsonScanner& s, std::vector<std::string>* out) {
  if (s.Peek() == '"') {
    out->emplace_back();
    return s.String(&out->back()) && !out->back().empty();
  }
  if (s.Peek() != '[') return false;
  return s.Array(2, [&](size_t i) {
    if (i >= kMaxStopSequences) return false;
    out->emplace_back();
    return ReadStringValue(s, &out->back()) && !out->back().empty();
  });
}

}  // namespace

std::optional<ApiRequest> ScanRequest(Endpoint endpoint, std::string_view body,
                                      const Limits& limits) {
  const bool chat = endpoint == Endpoint::kChatCompletions;
  JsonScanner s(body);
  // The tree keeps the last of repeated keys; the scanner would read the first: refuse them all.
  s.RefuseDuplicateKeys();
  // A body over its budget is left to the tree parser, which refuses it naming the limit; the
  // budget's depth, when above kMaxScanDepth, is kept by the scanner's own limit.
  if (limits.budget.max_depth <= static_cast<size_t>(kMaxScanDepth)) return std::nullopt;
  s.LimitCounts(limits.budget.max_members, limits.budget.max_array_items,
                limits.budget.max_number_chars);
  ApiRequest r;
  r.endpoint = endpoint;
  bool has_model = false;
  bool has_prompt = false;
  bool has_stream_options = false;
  std::optional<uint64_t> max_tokens;
  std::optional<uint64_t> max_completion_tokens;
  std::vector<ChatMessage> messages;
  std::string scratch;

  const bool parsed = s.Object(1, [&](std::string_view key) {
    // `messages` is the one field whose null is an error rather than "absent".
    if (key == "messages" && chat) {
      if (s.Peek() != '[') return false;
      has_prompt = s.Array(2, [&](size_t) {
        messages.emplace_back();
        return ReadMessage(s, 3, &messages.back());
      });
      return has_prompt && !messages.empty();
    }
    if (s.Peek() == 'n') return s.Literal("null");  // null is absent, for every other field
    // An invalid name goes to the tree parser, which says what is wrong with it.
    if (key == "model") {
      return has_model = ReadStringValue(s, &r.model) && IsValidModelName(r.model);
    }
    if (key == "prompt" && !chat) {
      if (s.Peek() == '"') return has_prompt = s.String(&r.prompt);
      if (s.Peek() != '[') return false;
      // An array of exactly one string.
      return has_prompt = s.Array(2, [&](size_t i) {
        return i == 0 && ReadStringValue(s, &r.prompt);
      }) && !r.prompt.empty();
    }
    if (key == "max_tokens") {
      max_tokens.emplace();
      return ReadUnsigned(s, 1, limits.max_output_tokens, &*max_tokens);
    }
    if (key == "max_completion_tokens" && chat) {
      max_completion_tokens.emplace();
      return ReadUnsigned(s, 1, limits.max_output_tokens, &*max_completion_tokens);
    }
    if (key == "stream") return ReadBoolValue(s, &r.stream);
    if (key == "stream_options") {
      if (s.Peek() != '{') return false;
      has_stream_options = true;
      return s.Object(2, [&](std::string_view option) {
        if (option != "include_usage") return s.Skip(3);
        if (s.Peek() == 'n') return s.Literal("null");
        return ReadBoolValue(s, &r.include_usage);
      });
    }
    uint64_t one = 0;
    bool flag = false;
    double number = 0;
    if (key == "n") return ReadUnsigned(s, 1, 1, &one);
    if (key == "logprobs") return chat && ReadBoolValue(s, &flag) && !flag;
    if (!chat) {
      if (key == "best_of") return ReadUnsigned(s, 1, 1, &one);
      if (key == "echo") return ReadBoolValue(s, &flag) && !flag;
      if (key == "suffix") return ReadStringValue(s, &scratch) && scratch.empty();
    }
    if (key == "user") return ReadStringValue(s, &r.user);
    if (key == "cache_salt") return ReadStringValue(s, &r.cache_salt);
    if (key == "temperature") return ReadDouble(s, 0.0, 2.0, &r.temperature);
    if (key == "top_p") return ReadDouble(s, 0.0, 1.0, &number);
    if (key == "presence_penalty" || key == "frequency_penalty") {
      return ReadDouble(s, -2.0, 2.0, &number);
    }
    if (key == "seed") {
      // Negative seeds are valid but read through int64 by the tree: left to it.
      uint64_t seed = 0;
      if (!ReadUnsigned(s, 0, UINT64_MAX, &seed)) return false;
      r.seed = seed;
      return true;
    }
    if (key == "stop") return ReadStop(s, &r.stop);
    return s.Skip(2);
  });
  if (!parsed || !s.AtEnd() || !has_model || !has_prompt) return std::nullopt;
  if (has_stream_options && !r.stream) return std::nullopt;
  if (chat) r.prompt = RenderChat(messages);
  if (r.prompt.empty() || r.prompt.size() > limits.max_prompt_chars) return std::nullopt;
  if (chat && max_completion_tokens) max_tokens = max_completion_tokens;
  r.max_tokens = max_tokens ? static_cast<uint32_t>(*max_tokens) : limits.default_max_tokens;
  return r;
}

}  // namespace hearsay::api
