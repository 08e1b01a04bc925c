// The deterministic piece tokenizer: one pass, classifying bytes as word, whitespace or other.
#include "hearsay/api/tokenizer.h"

// Inlined: a prompt is a hundred short pieces, and the call into the library cost more than the
// hash of a few bytes.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <array>

#include "hearsay/api/json_text.h"

namespace hearsay::api {
namespace {

// Byte classes, one table lookup per byte (the prompt of every request is encoded).
enum ByteClass : uint8_t { kOther = 0, kWord = 1, kSpace = 2, kHigh = 3 };

constexpr std::array<uint8_t, 256> kByteClass = [] {
  std::array<uint8_t, 256> t{};
  for (int c = 0; c < 256; ++c) {
    if ((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')) {
      t[c] = kWord;
    } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f') {
      t[c] = kSpace;
    } else if (c >= 0x80) {
      t[c] = kHigh;
    }
  }
  return t;
}();

uint8_t ClassOf(char c) { return kByteClass[static_cast<uint8_t>(c)]; }

bool IsSpaceByte(uint8_t c) { return kByteClass[c] == kSpace; }

// The length of the word character at text[i] (an ASCII letter or digit, or a whole valid
// multibyte UTF-8 sequence), or 0 if there is none.
size_t WordCharLength(std::string_view text, size_t i) {
  switch (ClassOf(text[i])) {
    case kWord:
      return 1;
    case kHigh:
      return Utf8SequenceLength(text, i);
    default:
      return 0;
  }
}

size_t WordRunEnd(std::string_view text, size_t i) {
  while (i < text.size()) {
    if (ClassOf(text[i]) == kWord) {  // the common case, without the UTF-8 check
      ++i;
      continue;
    }
    const size_t len = WordCharLength(text, i);
    if (len == 0) break;
    i += len;
  }
  return i;
}

// Calls emit(piece) for each piece of `text`, in order.
template <typename Emit>
void ForEachPiece(std::string_view text, Emit&& emit) {
  size_t i = 0;
  const size_t n = text.size();
  while (i < n) {
    const auto c = static_cast<uint8_t>(text[i]);
    // Fast path, most of a prompt: an ASCII word, with the space before it if there is one. A
    // word that runs into a multibyte character is left to the general cases below.
    size_t j = i + (c == ' ' ? 1 : 0);
    if (j < n && ClassOf(text[j]) == kWord) {
      do {
        ++j;
      } while (j < n && ClassOf(text[j]) == kWord);
      if (j == n || ClassOf(text[j]) != kHigh) {
        emit(text.substr(i, j - i));
        i = j;
        continue;
      }
    }
    if (c == ' ' && i + 1 < n && WordCharLength(text, i + 1) > 0) {
      const size_t end = WordRunEnd(text, i + 1);
      emit(text.substr(i, end - i));
      i = end;
    } else if (WordCharLength(text, i) > 0) {
      const size_t end = WordRunEnd(text, i);
      emit(text.substr(i, end - i));
      i = end;
    } else if (IsSpaceByte(c)) {
      size_t end = i + 1;
      while (end < n && IsSpaceByte(static_cast<uint8_t>(text[end]))) ++end;
      // Leave a final space to the word that follows, as " word" pieces are the common case.
      if (end - i > 1 && text[end - 1] == ' ' && end < n && WordCharLength(text, end) > 0) --end;
      emit(text.substr(i, end - i));
      i = end;
    } else {
      const size_t len = c < 0x80 ? 1 : Utf8SequenceLength(text, i);
      // A valid multibyte sequence is a word character and was handled above; this is one byte.
      emit(text.substr(i, len == 0 ? 1 : len));
      i += len == 0 ? 1 : len;
    }
  }
}

// Placeholder output words; 64 of them so an id picks one with a mask after mixing.
constexpr std::array<std::string_view, 64> kWords = {
    "the",     "a",      "of",     "and",   "to",     "in",     "is",      "that",
    "it",      "for",    "on",     "with",  "as",     "was",    "by",      "at",
    "model",   "cache",  "prefix", "token", "node",   "peer",   "route",   "answer",
    "request", "stream", "gossip", "block", "key",    "engine", "network", "cluster",
    "time",    "first",  "load",   "queue", "hit",    "miss",   "fast",    "slow",
    "data",    "value",  "state",  "view",  "random", "order",  "result",  "system",
    "good",    "new",    "small",  "large", "next",   "last",   "simple",  "same",
    "we",      "they",   "this",   "which", "would",  "could",  "more",    "one"};

}  // namespace

uint32_t Tokenizer::PieceId(std::string_view piece) {
  const uint64_t h = XXH3_64bits(piece.data(), piece.size());
  const auto folded = static_cast<uint32_t>(h ^ (h >> 32));
  return folded == 0 ? 1 : folded;
}

void Tokenizer::AppendEncoded(std::string_view text, std::vector<uint32_t>* out) const {
  // Pieces average a few bytes; a quarter of the length avoids most regrowth.
  out->reserve(out->size() + text.size() / 4 + 1);
  ForEachPiece(text, [&](std::string_view piece) { out->push_back(PieceId(piece)); });
}

std::vector<uint32_t> Tokenizer::Encode(std::string_view text) const {
  std::vector<uint32_t> out;
  AppendEncoded(text, &out);
  return out;
}

std::vector<std::string_view> Tokenizer::Pieces(std::string_view text) const {
  std::vector<std::string_view> out;
  ForEachPiece(text, [&](std::string_view piece) { out.push_back(piece); });
  return out;
}

void Tokenizer::AppendToken(uint32_t id, std::string* out) const {
  // Multiplicative mixing so that nearby ids (synthetic token sequences) vary the word.
  const uint32_t mixed = id * 0x9E3779B1u;
  out->push_back(' ');
  out->append(kWords[mixed >> 26]);
}

std::string Tokenizer::RenderToken(uint32_t id) const {
  std::string out;
  AppendToken(id, &out);
  return out;
}

}  // namespace hearsay::api
