// Tokenizer: the simple deterministic tokenizer of the embedded simulated engine.
//
// Not a model's real vocabulary: it exists so that the daemon can turn text into token ids whose
// prefixes behave like a real tokenizer's (the prefix cache and block keys need that), and turn
// generated ids back into placeholder text.
//
// Encode() cuts text into pieces, left to right:
//   - a word: a run of letters, digits and UTF-8 multibyte characters, with the one space before
//     it if there is one (" hello");
//   - a whitespace run (spaces, tabs, newlines, ...), less its last space when a word follows;
//   - otherwise one byte (punctuation, control, or a byte that is not valid UTF-8).
// A multibyte UTF-8 sequence is never split. Each piece maps to a stable id: XXH3-64 of its bytes,
// folded to 32 bits, never 0. When `a` does not end inside a UTF-8 character, the pieces of `a`
// are those of `a + b` except possibly the last one (the only piece whose end depends on what
// follows), so equal text prefixes give equal token prefixes up to the last token. Encode is one
// linear pass.
//
// RenderToken() maps an id to " word" from a small built-in word list, deterministically.
//
// Thread-safety: stateless; const methods may be called from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hearsay::api {

class Tokenizer {
 public:
  // The token ids of `text` (empty for empty text).
  std::vector<uint32_t> Encode(std::string_view text) const;
  // Appends the token ids of `text` to `out`.
  void AppendEncoded(std::string_view text, std::vector<uint32_t>* out) const;
  // The pieces of `text` as Encode cuts them (for tests and debugging); they concatenate to `text`.
  std::vector<std::string_view> Pieces(std::string_view text) const;
  // The id of one piece: XXH3-64 folded to 32 bits, with 0 mapped to 1.
  static uint32_t PieceId(std::string_view piece);

  // Placeholder output text for a generated token id: a space and a word chosen by the id.
  std::string RenderToken(uint32_t id) const;
  // Appends RenderToken(id) to `out`.
  void AppendToken(uint32_t id, std::string* out) const;
};

}  // namespace hearsay::api
