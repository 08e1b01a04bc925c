// ScanStreamEvent: see stream_event_scanner.h. Any doubt returns false up the scanner, which
// becomes nullopt: the SAX decoder then decides, and owns every error message.
#include "hearsay/api/stream_event_scanner.h"

#include <cstdint>
#include <limits>
#include <string>

#include "hearsay/api/json_scanner.h"

namespace hearsay::api {
namespace {

// Marks `bit` seen in `*seen`; false if it already was (a repeated read key: the SAX decoder
// refuses it with its own message).
bool Once(uint32_t* seen, uint32_t bit) {
  if ((*seen & bit) != 0) return false;
  *seen |= bit;
  return true;
}

// A string, or null (as the empty string); anything else is the SAX decoder's to refuse. *span
// (if given) tells where a string without escapes lies.
bool ReadText(JsonScanner& s, std::string* out, std::optional<TextSpan>* span = nullptr) {
  if (s.Peek() == 'n') {
    out->clear();
    return s.Literal("null");
  }
  return s.Peek() == '"' && s.StringAt(out, span);
}

// A usage count: null is 0; a plain integer within uint32 is itself; anything else is refused.
bool ReadCount(JsonScanner& s, uint32_t* out) {
  const char p = s.Peek();
  if (p == 'n') {
    *out = 0;
    return s.Literal("null");
  }
  uint64_t v = 0;
  if (!s.Unsigned(std::numeric_limits<uint32_t>::max(), &v)) return false;
  *out = static_cast<uint32_t>(v);
  return true;
}

}  // namespace

std::optional<StreamEvent> ScanStreamEvent(std::string_view data,
                                           std::optional<TextSpan>* text_span) {
  JsonScanner s(data);
  StreamEvent event;
  bool choices_present = false;
  bool usage_present = false;
  bool delta_present = false;
  std::string delta_content;
  std::string text;
  std::optional<TextSpan> delta_content_at;
  std::optional<TextSpan> text_at;
  UsageCounts usage;

  auto choice = [&]() {
    if (s.Peek() != '{') return false;
    uint32_t seen = 0;
    return s.Object(3, [&](std::string_view k) {
      if (k == "text") {
        if (!Once(&seen, 1)) return false;
        // Only a string or null: another type is an error when there is no delta.
        return ReadText(s, &text, &text_at);
      }
      if (k == "finish_reason") return Once(&seen, 2) && ReadText(s, &event.finish_reason);
      if (k != "delta") return s.Skip(4);
      if (!Once(&seen, 4)) return false;
      if (s.Peek() == 'n') {
        delta_present = false;
        return s.Literal("null");
      }
      if (s.Peek() != '{') return false;
      delta_present = true;
      delta_content.clear();
      delta_content_at.reset();
      uint32_t delta_seen = 0;
      return s.Object(4, [&](std::string_view dk) {
        if (dk != "content") return s.Skip(5);
        return Once(&delta_seen, 1) && ReadText(s, &delta_content, &delta_content_at);
      });
    });
  };

  uint32_t top_seen = 0;
  const bool parsed = s.Object(1, [&](std::string_view key) {
    if (key == "error") {
      // An error event (rare) is the SAX decoder's; a null error is no error.
      return Once(&top_seen, 1) && s.Peek() == 'n' && s.Literal("null");
    }
    if (key == "choices") {
      if (!Once(&top_seen, 2)) return false;
      if (s.Peek() == 'n') return s.Literal("null");
      if (s.Peek() != '[') return false;
      choices_present = true;
      // Only the first choice is ours (n = 1); the others are validated and skipped.
      return s.Array(2, [&](size_t i) { return i == 0 ? choice() : s.Skip(3); });
    }
    if (key == "usage") {
      if (!Once(&top_seen, 4)) return false;
      if (s.Peek() == 'n') return s.Literal("null");
      if (s.Peek() != '{') return false;
      usage_present = true;
      uint32_t seen = 0;
      return s.Object(2, [&](std::string_view k) {
        if (k == "prompt_tokens") return Once(&seen, 1) && ReadCount(s, &usage.prompt_tokens);
        if (k == "completion_tokens") {
          return Once(&seen, 2) && ReadCount(s, &usage.completion_tokens);
        }
        if (k != "prompt_tokens_details") return s.Skip(3);
        if (!Once(&seen, 4)) return false;
        if (s.Peek() == 'n') return s.Literal("null");
        if (s.Peek() != '{') return false;
        uint32_t details_seen = 0;
        return s.Object(3, [&](std::string_view dk) {
          if (dk != "cached_tokens") return s.Skip(4);
          return Once(&details_seen, 1) && ReadCount(s, &usage.cached_tokens);
        });
      });
    }
    return s.Skip(2);
  });
  if (!parsed || !s.AtEnd()) return std::nullopt;
  if (!choices_present && !usage_present) return std::nullopt;
  event.delta_text = delta_present ? std::move(delta_content) : std::move(text);
  if (text_span != nullptr) *text_span = delta_present ? delta_content_at : text_at;
  if (usage_present) event.usage = usage;
  return event;
}

}  // namespace hearsay::api
