// JSON text helpers for the hand-written renderers of this module (the hot streaming path renders
// one chunk per token, so it appends to a string instead of building a JSON tree).
//
// Thread-safety: pure functions.
#pragma once

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

}  // namespace hearsay::api
