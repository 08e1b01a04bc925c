// ScanOpenAiChunk: see openai_chunk_scanner.h. Any doubt returns false up the scanner, which
// becomes nullopt: the reference decoder then decides, and owns every error message.
#include "hearsay/api/openai_chunk_scanner.h"

#include <charconv>
#include <limits>

namespace hearsay::api {
namespace {

// Marks `bit` seen in `*seen`; false if it already was (a repeated read key).
bool Once(uint32_t* seen, uint32_t bit) {
  if ((*seen & bit) != 0) return false;
  *seen |= bit;
  return true;
}

// Reads a text field at `depth`; a string without escapes also tells where its bytes lie.
bool ReadText(JsonScanner& s, int depth, ScannedText* out) {
  switch (s.Peek()) {
    case 'n':
      out->kind = JsonKind::kNull;
      return s.Literal("null");
    case '"':
      out->kind = JsonKind::kString;
      return s.StringAt(&out->value, &out->span);
    default:
      out->kind = JsonKind::kOther;
      return s.Skip(depth);
  }
}

// A count: null leaves it unset; a plain integer within uint32 sets it; anything else (negative,
// fractional, too large, not a number) is refused.
bool ReadCount(JsonScanner& s, std::optional<uint32_t>* out) {
  if (s.Peek() == 'n') return s.Literal("null");
  uint64_t v = 0;
  if (!s.Unsigned(std::numeric_limits<uint32_t>::max(), &v)) return false;
  *out = static_cast<uint32_t>(v);
  return true;
}

// choices[0].delta or .message, at depth 4.
bool ReadHolder(JsonScanner& s, ScannedHolder* h) {
  const char p = s.Peek();
  if (p != '{') {
    h->kind = p == 'n' ? JsonKind::kNull : JsonKind::kOther;
    return s.Skip(4);
  }
  h->kind = JsonKind::kObject;
  uint32_t seen = 0;
  return s.Object(4, [&](std::string_view k) {
    if (k != "content") return s.Skip(5);
    return Once(&seen, 1) && ReadText(s, 5, &h->content);
  });
}

// choices[0], at depth 3.
bool ReadChoice(JsonScanner& s, ScannedChunk* c) {
  if (s.Peek() != '{') return false;
  uint32_t seen = 0;
  return s.Object(3, [&](std::string_view k) {
    if (k == "text") return Once(&seen, 1) && ReadText(s, 4, &c->text);
    if (k == "finish_reason") return Once(&seen, 2) && ReadText(s, 4, &c->finish_reason);
    if (k == "delta") return Once(&seen, 4) && ReadHolder(s, &c->delta);
    if (k == "message") return Once(&seen, 8) && ReadHolder(s, &c->message);
    return s.Skip(4);
  });
}

// The "usage" object, at depth 2.
bool ReadUsage(JsonScanner& s, ScannedChunk* c) {
  uint32_t seen = 0;
  return s.Object(2, [&](std::string_view k) {
    if (k == "prompt_tokens") return Once(&seen, 1) && ReadCount(s, &c->prompt_tokens);
    if (k == "completion_tokens") return Once(&seen, 2) && ReadCount(s, &c->completion_tokens);
    if (k != "prompt_tokens_details") return s.Skip(3);
    if (!Once(&seen, 4)) return false;
    if (s.Peek() == 'n') return s.Literal("null");
    if (s.Peek() != '{') return false;
    uint32_t details_seen = 0;
    return s.Object(3, [&](std::string_view dk) {
      if (dk != "cached_tokens") return s.Skip(4);
      return Once(&details_seen, 1) && ReadCount(s, &c->cached_tokens);
    });
  });
}

// The "timings" object (llama.cpp), at depth 2.
bool ReadTimings(JsonScanner& s, ScannedChunk* c) {
  uint32_t seen = 0;
  return s.Object(2, [&](std::string_view k) {
    if (k == "cache_n") return Once(&seen, 1) && ReadCount(s, &c->cache_n);
    if (k == "prompt_n") return Once(&seen, 2) && ReadCount(s, &c->prompt_n);
    if (k != "prompt_ms") return s.Skip(3);
    if (!Once(&seen, 4)) return false;
    const char p = s.Peek();
    if (p != '-' && !IsJsonDigit(p)) return s.Skip(3);  // not a number: ignored
    std::string_view spelling;
    if (!s.Number(nullptr, &spelling)) return false;
    double ms = 0;
    auto [ptr, ec] = std::from_chars(spelling.data(), spelling.data() + spelling.size(), ms);
    if (ec != std::errc() || ptr != spelling.data() + spelling.size()) return false;
    if (ms == 0) ms = 0;  // "-0" is the integer 0 to a JSON tree
    if (ms >= 0 && ms < 1e9) c->prompt_ms = ms;
    return true;
  });
}

}  // namespace

std::optional<ScannedChunk> ScanOpenAiChunk(std::string_view data) {
  JsonScanner s(data);
  ScannedChunk c;
  uint32_t top_seen = 0;
  const bool parsed = s.Object(1, [&](std::string_view key) {
    if (key == "error") {
      // An error event (rare) is the reference decoder's; a null error is no error.
      return Once(&top_seen, 1) && s.Peek() == 'n' && s.Literal("null");
    }
    if (key == "choices") {
      if (!Once(&top_seen, 2)) return false;
      if (s.Peek() == 'n') return s.Literal("null");
      if (s.Peek() != '[') return false;
      c.has_choices = true;
      // Only the first choice is read (n = 1); the others are validated and skipped.
      return s.Array(2, [&](size_t i) { return i == 0 ? ReadChoice(s, &c) : s.Skip(3); });
    }
    if (key == "usage") {
      if (!Once(&top_seen, 4)) return false;
      if (s.Peek() == 'n') return s.Literal("null");
      if (s.Peek() != '{') return false;
      c.has_usage = true;
      return ReadUsage(s, &c);
    }
    if (key == "timings") {
      if (!Once(&top_seen, 8)) return false;
      if (s.Peek() == 'n') return s.Literal("null");
      if (s.Peek() != '{') return false;
      c.has_timings = true;
      return ReadTimings(s, &c);
    }
    return s.Skip(2);
  });
  if (!parsed || !s.AtEnd()) return std::nullopt;
  return c;
}

}  // namespace hearsay::api
