// ScanUpstreamChunk: see chunk_scanner.h. A strict JSON scanner (RFC 8259, as nlohmann parses it:
// no comments, no trailing commas, UTF-8 checked, surrogate pairs checked) with the chunk's few
// read paths wired in. Any doubt returns false up the stack, which becomes nullopt: the tree
// decoder then decides, so the scanner never has to reproduce its error messages.
#include "hearsay/upstream/chunk_scanner.h"

#include <charconv>
#include <cstdint>
#include <limits>
#include <string>

#include "hearsay/api/json_scanner.h"

namespace hearsay::upstream {

using api::IsJsonDigit;
using api::JsonScanner;
using api::TextSpan;
namespace {

// What a text field held.
enum class Kind : uint8_t { kAbsent, kNull, kString, kObject, kOther };

// Marks `bit` seen in `*seen`; false if it already was (a duplicate key: the tree decides).
bool Once(uint32_t* seen, uint32_t bit) {
  if ((*seen & bit) != 0) return false;
  *seen |= bit;
  return true;
}

// Reads a text field; a string without escapes also tells where its bytes lie.
bool ReadText(JsonScanner& s, int depth, Kind* kind, std::string* out,
              std::optional<TextSpan>* span) {
  switch (s.Peek()) {
    case 'n':
      *kind = Kind::kNull;
      return s.Literal("null");
    case '"':
      *kind = Kind::kString;
      return s.StringAt(out, span);
    default:
      *kind = Kind::kOther;
      return s.Skip(depth);
  }
}

// A count: null leaves it unset; a plain integer within uint32 sets it; anything else (negative,
// fractional, too large, not a number) goes to the tree decoder.
bool ReadCount(JsonScanner& s, std::optional<uint32_t>* out) {
  const char p = s.Peek();
  if (p == 'n') return s.Literal("null");
  uint64_t v = 0;
  if (!s.Unsigned(std::numeric_limits<uint32_t>::max(), &v)) return false;
  *out = static_cast<uint32_t>(v);
  return true;
}

}  // namespace

std::optional<UpstreamChunk> ScanUpstreamChunk(std::string_view data,
                                               std::optional<TextSpan>* text_span) {
  JsonScanner s(data);
  UpstreamChunk c;
  bool has_choices = false;
  bool has_usage = false;
  bool has_timings = false;
  Kind text_kind = Kind::kAbsent;
  std::string text;
  std::optional<TextSpan> text_at;
  // choices[0].delta (a streamed chunk) and choices[0].message (an answer that was not streamed):
  // each an object whose "content" is the text.
  struct Holder {
    Kind kind = Kind::kAbsent;
    Kind content_kind = Kind::kAbsent;
    std::string content;
    std::optional<TextSpan> content_at;
  };
  Holder delta;
  Holder message;
  std::optional<uint32_t> cache_n;
  std::optional<double> prompt_ms;

  auto holder = [](JsonScanner& sc, Holder* h) {
    const char p = sc.Peek();
    if (p != '{') {
      h->kind = p == 'n' ? Kind::kNull : Kind::kOther;
      return sc.Skip(4);
    }
    h->kind = Kind::kObject;
    uint32_t seen = 0;
    return sc.Object(4, [&](std::string_view k) {
      if (k != "content") return sc.Skip(5);
      return Once(&seen, 1) && ReadText(sc, 5, &h->content_kind, &h->content, &h->content_at);
    });
  };
  auto choice = [&](JsonScanner& sc) {
    if (sc.Peek() != '{') return false;
    uint32_t seen = 0;
    return sc.Object(3, [&](std::string_view k) {
      if (k == "text") return Once(&seen, 1) && ReadText(sc, 4, &text_kind, &text, &text_at);
      if (k == "finish_reason") {
        if (!Once(&seen, 2)) return false;
        return sc.Peek() == '"' ? sc.String(&c.finish_reason) : sc.Skip(4);
      }
      if (k == "delta") return Once(&seen, 4) && holder(sc, &delta);
      if (k == "message") return Once(&seen, 8) && holder(sc, &message);
      return sc.Skip(4);
    });
  };

  uint32_t top_seen = 0;
  const bool parsed = s.Object(1, [&](std::string_view key) {
    if (key == "error") {
      // An error event (rare) is the tree decoder's; a null error is no error.
      return Once(&top_seen, 1) && s.Peek() == 'n' && s.Literal("null");
    }
    if (key == "choices") {
      if (!Once(&top_seen, 2)) return false;
      if (s.Peek() == 'n') return s.Literal("null");
      if (s.Peek() != '[') return false;
      has_choices = true;
      return s.Array(2, [&](size_t i) { return i == 0 ? choice(s) : s.Skip(3); });
    }
    if (key == "usage") {
      if (!Once(&top_seen, 4)) return false;
      if (s.Peek() == 'n') return s.Literal("null");
      if (s.Peek() != '{') return false;
      has_usage = true;
      uint32_t seen = 0;
      return s.Object(2, [&](std::string_view k) {
        if (k == "prompt_tokens") return Once(&seen, 1) && ReadCount(s, &c.prompt_tokens);
        if (k == "completion_tokens") return Once(&seen, 2) && ReadCount(s, &c.completion_tokens);
        if (k != "prompt_tokens_details") return s.Skip(3);
        if (!Once(&seen, 4)) return false;
        if (s.Peek() == 'n') return s.Literal("null");
        if (s.Peek() != '{') return false;
        uint32_t details_seen = 0;
        return s.Object(3, [&](std::string_view dk) {
          if (dk != "cached_tokens") return s.Skip(4);
          return Once(&details_seen, 1) && ReadCount(s, &c.cached_tokens);
        });
      });
    }
    if (key == "timings") {
      if (!Once(&top_seen, 8)) return false;
      if (s.Peek() == 'n') return s.Literal("null");
      if (s.Peek() != '{') return false;
      has_timings = true;
      uint32_t seen = 0;
      return s.Object(2, [&](std::string_view k) {
        if (k == "cache_n") return Once(&seen, 1) && ReadCount(s, &cache_n);
        if (k == "prompt_n") return Once(&seen, 2) && ReadCount(s, &c.prompt_computed_tokens);
        if (k != "prompt_ms") return s.Skip(3);
        if (!Once(&seen, 4)) return false;
        const char p = s.Peek();
        if (p != '-' && !IsJsonDigit(p)) return s.Skip(3);  // not a number: ignored, as by the tree
        std::string_view spelling;
        if (!s.Number(nullptr, &spelling)) return false;
        double ms = 0;
        auto [ptr, ec] = std::from_chars(spelling.data(), spelling.data() + spelling.size(), ms);
        if (ec != std::errc() || ptr != spelling.data() + spelling.size()) return false;
        if (ms == 0) ms = 0;  // "-0" is the integer 0 to the tree decoder
        if (ms >= 0 && ms < 1e9) prompt_ms = ms;
        return true;
      });
    }
    return s.Skip(2);
  });
  if (!parsed || !s.AtEnd()) return std::nullopt;
  if (!has_choices && !has_usage && !has_timings) return std::nullopt;

  // The tree decoder reads text when it is present and not null, else the delta's content, else
  // the message's.
  std::optional<TextSpan> chosen;
  if (text_kind == Kind::kString) {
    c.text = std::move(text);
    chosen = text_at;
  } else if (text_kind == Kind::kOther) {
    return std::nullopt;
  } else {
    Holder& h = delta.kind != Kind::kAbsent && delta.kind != Kind::kNull ? delta : message;
    if (h.kind == Kind::kOther) return std::nullopt;
    if (h.kind == Kind::kObject) {
      if (h.content_kind == Kind::kOther) return std::nullopt;
      if (h.content_kind == Kind::kString) {
        c.text = std::move(h.content);
        chosen = h.content_at;
      }
    }
  }
  if (text_span != nullptr) *text_span = chosen;
  if (has_timings) {
    if (!c.cached_tokens) c.cached_tokens = cache_n;
    if (!c.prompt_tokens && cache_n && c.prompt_computed_tokens) {
      c.prompt_tokens = *cache_n + *c.prompt_computed_tokens;
    }
  }
  c.prompt_ms = prompt_ms;
  return c;
}

}  // namespace hearsay::upstream
