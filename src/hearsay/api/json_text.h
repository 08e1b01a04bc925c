// JSON text helpers for the hand-written renderers of this module (the hot streaming path renders
// one chunk per token, so it appends to a string instead of building a JSON tree).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace hearsay::api {

// Appends `text` as a JSON string literal (with quotes). Escapes '"', '\\' and control
// characters; invalid UTF-8 bytes become U+FFFD, so the output is always valid JSON.
void AppendJsonString(std::string_view text, std::string* out);

// Appends a JSON string literal, or null when `text` is empty.
void AppendJsonStringOrNull(std::string_view text, std::string* out);

// The length of the valid UTF-8 sequence starting at text[i], or 0 if the bytes there are not one
// (overlong forms, surrogates and code points above U+10FFFF are invalid).
size_t Utf8SequenceLength(std::string_view text, size_t i);

// The end of the run of plain string bytes starting at p: the first '"', '\\', control character
// or non-ASCII byte, or `end`. Eight bytes at a time (a string's bytes are the scanner's hot loop).
inline const char* PlainRunEnd(const char* p, const char* end) {
  constexpr uint64_t kOnes = 0x0101010101010101ull;
  constexpr uint64_t kHigh = 0x8080808080808080ull;
  while (end - p >= 8) {
    uint64_t x;
    std::memcpy(&x, p, 8);
    // Per byte, the high bit is set where: the byte is non-ASCII, below 0x20, '"' or '\\'. (A
    // borrow can only mark bytes after a marked one, which the byte loop below then sorts out.)
    const uint64_t quote = x ^ (kOnes * '"');
    const uint64_t backslash = x ^ (kOnes * '\\');
    const uint64_t marks = x | ((x - kOnes * 0x20) & ~x) | ((quote - kOnes) & ~quote) |
                           ((backslash - kOnes) & ~backslash);
    if ((marks & kHigh) != 0) break;
    p += 8;
  }
  while (p != end) {
    const auto c = static_cast<unsigned char>(*p);
    if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) break;
    ++p;
  }
  return p;
}

}  // namespace hearsay::api
