// JsonScanner: a strict one-pass JSON reader over a byte range, for the fast paths of the request
// parser (request_scanner.cc) and the upstream codecs (chunk_scanner.cc, RewriteRequestBody). It
// validates as nlohmann does (RFC 8259: no comments, no trailing commas, UTF-8 and surrogate pairs
// checked) and lets the caller read the few values it needs while skipping the rest, without
// building a tree.
//
// Every method returns false on input it does not settle (invalid, or nested deeper than
// kMaxScanDepth); callers then fall back to the nlohmann tree, so the scanner never has to
// reproduce its error messages. Thread-safety: one scanner per thread.
#pragma once

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hearsay/api/json_text.h"

namespace hearsay::api {

// Real chunks and requests nest a few levels; deeper input goes to the tree.
inline constexpr int kMaxScanDepth = 32;

// Where a string without escapes lies in the scanned input: the bytes between its quotes,
// [begin, end), which are then its value.
struct TextSpan {
  size_t begin = 0;
  size_t end = 0;
};

inline bool IsJsonDigit(char c) { return c >= '0' && c <= '9'; }

// Appends code point `cp` (not a surrogate, at most U+10FFFF) as UTF-8.
inline void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// A cursor over the bytes. Every method returns false on input it does not settle.
class JsonScanner {
 public:
  explicit JsonScanner(std::string_view s)
      : begin_(s.data()), p_(s.data()), end_(s.data() + s.size()) {}

  // The next byte after whitespace, or '\0' at the end (a NUL byte is never valid there either).
  char Peek() {
    while (p_ != end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
    return p_ == end_ ? '\0' : *p_;
  }
  bool Consume(char c) {
    if (Peek() != c) return false;
    ++p_;
    return true;
  }
  bool AtEnd() { return Peek() == '\0' && p_ == end_; }
  // The cursor's offset in the input (after Peek(): at the next token).
  size_t offset() const { return static_cast<size_t>(p_ - begin_); }

  bool Literal(std::string_view word) {
    Peek();
    if (static_cast<size_t>(end_ - p_) < word.size() || std::string_view(p_, word.size()) != word) {
      return false;
    }
    p_ += word.size();
    return true;
  }

  // A string; its decoded value goes to *out unless out is null.
  bool String(std::string* out) {
    if (!Consume('"')) return false;
    if (out != nullptr) out->clear();
    while (true) {
      const char* run = p_;
      p_ = PlainRunEnd(p_, end_);
      if (out != nullptr) out->append(run, p_);
      if (p_ == end_) return false;
      const auto c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        ++p_;
        return true;
      }
      if (c < 0x20) return false;  // control characters must be escaped
      if (c >= 0x80) {
        const size_t len = Utf8SequenceLength(std::string_view(p_, end_ - p_), 0);
        if (len == 0) return false;
        if (out != nullptr) out->append(p_, len);
        p_ += len;
        continue;
      }
      if (++p_ == end_) return false;  // after the backslash
      char decoded;
      switch (*p_++) {
        case '"':
          decoded = '"';
          break;
        case '\\':
          decoded = '\\';
          break;
        case '/':
          decoded = '/';
          break;
        case 'b':
          decoded = '\b';
          break;
        case 'f':
          decoded = '\f';
          break;
        case 'n':
          decoded = '\n';
          break;
        case 'r':
          decoded = '\r';
          break;
        case 't':
          decoded = '\t';
          break;
        case 'u':
          if (!Unicode(out)) return false;
          continue;
        default:
          return false;
      }
      if (out != nullptr) out->push_back(decoded);
    }
  }

  // A string, as String(out); *span (if given) gets where its bytes lie when it has no escapes,
  // else nullopt (a string without escapes is as long as its value: every escape spells more
  // bytes than it stands for).
  bool StringAt(std::string* out, std::optional<TextSpan>* span) {
    Peek();
    const size_t open = offset();
    if (!String(out)) return false;
    if (span == nullptr) return true;
    const size_t close = offset();
    if (out->size() == close - open - 2) {
      *span = TextSpan{open + 1, close - 1};
    } else {
      span->reset();
    }
    return true;
  }

  // A string, seen through *view: the input itself when it has no escapes (no copy), else its
  // decoded value in *buf. *view is valid while the input and *buf are.
  bool StringView(std::string_view* view, std::string* buf) {
    if (Peek() != '"') return false;
    const char* start = p_ + 1;
    const char* q = PlainRunEnd(start, end_);
    if (q != end_ && *q == '"') {
      *view = std::string_view(start, static_cast<size_t>(q - start));
      p_ = q + 1;
      return true;
    }
    if (!String(buf)) return false;
    *view = *buf;
    return true;
  }

  // A plain unsigned integer (digits only: no sign, fraction or exponent) no greater than max.
  bool Unsigned(uint64_t max, uint64_t* out) {
    if (!IsJsonDigit(Peek())) return false;
    std::optional<uint64_t> v;
    if (!Number(&v, nullptr) || !v || *v > max) return false;
    *out = *v;
    return true;
  }

  // A number. *plain (if given) gets its value when it is an unsigned integer without fraction or
  // exponent that fits uint64; *text (if given) its spelling.
  bool Number(std::optional<uint64_t>* plain, std::string_view* text) {
    Peek();
    const char* start = p_;
    bool simple = true;
    if (p_ != end_ && *p_ == '-') {
      ++p_;
      simple = false;
    }
    if (p_ == end_) return false;
    if (*p_ == '0') {
      ++p_;
    } else if (*p_ >= '1' && *p_ <= '9') {
      while (p_ != end_ && IsJsonDigit(*p_)) ++p_;
    } else {
      return false;
    }
    if (p_ != end_ && *p_ == '.') {
      simple = false;
      ++p_;
      if (p_ == end_ || !IsJsonDigit(*p_)) return false;
      while (p_ != end_ && IsJsonDigit(*p_)) ++p_;
    }
    const bool exponent = p_ != end_ && (*p_ == 'e' || *p_ == 'E');
    if (exponent) {
      simple = false;
      ++p_;
      if (p_ != end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (p_ == end_ || !IsJsonDigit(*p_)) return false;
      while (p_ != end_ && IsJsonDigit(*p_)) ++p_;
    }
    // A number out of double's range is infinity to the tree, which prints it as null: leave long
    // numbers and overflowing exponents to the tree.
    if (p_ - start > 300 || static_cast<size_t>(p_ - start) > max_number_chars_) return false;
    if (exponent) {
      double d = 0;
      if (std::from_chars(start, p_, d).ec != std::errc()) return false;
    }
    if (text != nullptr) *text = std::string_view(start, static_cast<size_t>(p_ - start));
    if (plain != nullptr) {
      plain->reset();
      uint64_t v = 0;
      if (simple) {
        auto [ptr, ec] = std::from_chars(start, p_, v);
        if (ec == std::errc() && ptr == p_) *plain = v;
      }
    }
    return true;
  }

  // Refuses (returns false for) input with more object members or array elements in total, or a
  // longer number, than given: a request over its budget (request_budget.h) goes to the tree
  // parser, whose budget check names the limit. Unlimited by default.
  void LimitCounts(size_t max_members, size_t max_array_items, size_t max_number_chars) {
    members_left_ = max_members;
    items_left_ = max_array_items;
    max_number_chars_ = max_number_chars;
  }

  // Refuses (returns false for) any object with a repeated key, at every depth. Off by default:
  // the chunk scanner checks only the keys it reads.
  void RefuseDuplicateKeys() { refuse_duplicates_ = true; }

  // An object at `depth`: on_member(key) runs with the cursor at each member's value and must
  // consume it. The key view is valid until the callback reads another key (it may point into
  // the input or into the scanner); member_start() is the offset of the member's key until then.
  template <typename F>
  bool Object(int depth, F&& on_member) {
    if (depth > kMaxScanDepth || !Consume('{')) return false;
    if (Consume('}')) return true;
    if (refuse_duplicates_) {
      if (keys_.size() <= static_cast<size_t>(depth)) keys_.resize(static_cast<size_t>(depth) + 1);
      keys_[static_cast<size_t>(depth)].clear();
    }
    while (true) {
      if (members_left_ == 0) return false;
      --members_left_;
      Peek();
      member_start_ = offset();
      std::string_view key;
      if (!StringView(&key, &key_) || !Consume(':')) return false;
      if (refuse_duplicates_) keys_[static_cast<size_t>(depth)].emplace_back(key);
      if (!on_member(key)) return false;
      if (Consume(',')) continue;
      return Consume('}') &&
             (!refuse_duplicates_ || AllDistinct(&keys_[static_cast<size_t>(depth)]));
    }
  }
  size_t member_start() const { return member_start_; }

  // Key comparisons made so far by the repeated-key check: n log n in an object's n keys.
  size_t key_comparisons() const { return key_comparisons_; }

  // An array at `depth`: on_element(index) must consume each element.
  template <typename F>
  bool Array(int depth, F&& on_element) {
    if (depth > kMaxScanDepth || !Consume('[')) return false;
    if (Consume(']')) return true;
    for (size_t i = 0;; ++i) {
      if (items_left_ == 0) return false;
      --items_left_;
      if (!on_element(i)) return false;
      if (Consume(',')) continue;
      return Consume(']');
    }
  }

  // Any value, validated and dropped; `depth` is the level of containers it may open.
  bool Skip(int depth) {
    switch (Peek()) {
      case '"':
        return String(nullptr);
      case '{':
        return Object(depth, [&](std::string_view) { return Skip(depth + 1); });
      case '[':
        return Array(depth, [&](size_t) { return Skip(depth + 1); });
      case 't':
        return Literal("true");
      case 'f':
        return Literal("false");
      case 'n':
        return Literal("null");
      default:
        return Number(nullptr, nullptr);
    }
  }

 private:
  bool Hex4(uint32_t* v) {
    if (end_ - p_ < 4) return false;
    uint32_t r = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = *p_++;
      r <<= 4;
      if (c >= '0' && c <= '9') {
        r |= static_cast<uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        r |= static_cast<uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        r |= static_cast<uint32_t>(c - 'A' + 10);
      } else {
        return false;
      }
    }
    *v = r;
    return true;
  }

  // After "\u": one code point (a surrogate pair spans two escapes), appended as UTF-8.
  bool Unicode(std::string* out) {
    uint32_t cp = 0;
    if (!Hex4(&cp)) return false;
    if (cp >= 0xDC00 && cp <= 0xDFFF) return false;  // a low surrogate without a high one
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') return false;
      p_ += 2;
      uint32_t lo = 0;
      if (!Hex4(&lo) || lo < 0xDC00 || lo > 0xDFFF) return false;
      cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
    }
    if (out != nullptr) AppendUtf8(cp, out);
    return true;
  }

  // Sorting, not comparing each key with every earlier one: an object of n keys costs n log n
  // comparisons, so a body of many keys cannot stall the thread that parses it.
  bool AllDistinct(std::vector<std::string>* keys) {
    std::sort(keys->begin(), keys->end(), [this](const std::string& a, const std::string& b) {
      ++key_comparisons_;
      return a < b;
    });
    return std::adjacent_find(keys->begin(), keys->end()) == keys->end();
  }

  const char* begin_;
  const char* p_;
  const char* end_;
  std::string key_;
  size_t member_start_ = 0;
  bool refuse_duplicates_ = false;
  size_t members_left_ = SIZE_MAX;
  size_t items_left_ = SIZE_MAX;
  size_t max_number_chars_ = SIZE_MAX;
  std::vector<std::vector<std::string>> keys_;  // per depth, with refuse_duplicates_
  size_t key_comparisons_ = 0;
};

}  // namespace hearsay::api
