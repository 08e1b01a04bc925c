#include "hearsay/workload/workload.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace hearsay::workload {
namespace {

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;

uint64_t Finalize(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

uint32_t ClampTokens(double x, uint32_t lo, uint32_t hi) {
  if (!(x >= lo)) return lo;
  if (x >= hi) return hi;
  return std::min(hi, static_cast<uint32_t>(std::lround(x)));
}

uint64_t MixIds(uint64_t a, uint64_t b) { return Finalize(Finalize(a + kGolden) ^ (b * kGolden)); }

void AppendContentTokens(uint64_t content_id, uint64_t offset, size_t count, uint32_t vocab,
                         std::vector<TokenId>& out) {
  vocab = std::max(vocab, kFirstContentToken + 1);
  const uint64_t range = vocab - kFirstContentToken;
  // Position p of stream s is Finalize(seed(s) + (p + 1) * golden): a SplitMix64 sequence, so
  // any position is computable directly and sequential generation is one add and one mix.
  const uint64_t seed = Finalize(content_id ^ 0x243f6a8885a308d3ULL);
  uint64_t x = seed + offset * kGolden;
  const size_t start = out.size();
  out.resize(start + count);
  for (size_t i = 0; i < count; ++i) {
    x += kGolden;
    // Multiply-shift maps 64 bits onto [0, range) with negligible bias and no division.
    const uint64_t h = Finalize(x);
    out[start + i] = static_cast<TokenId>(kFirstContentToken +
                                          ((static_cast<unsigned __int128>(h) * range) >> 64));
  }
}

std::string RenderAsText(const std::vector<TokenId>& tokens) {
  std::string text;
  text.reserve(tokens.size() * 5);
  char word[16];
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (i > 0) text.push_back(' ');
    // Bijective base 26: 0 -> "a", 25 -> "z", 26 -> "aa". Built backwards, then appended.
    uint64_t v = static_cast<uint64_t>(tokens[i]) + 1;
    int n = 0;
    while (v > 0) {
      --v;
      word[n++] = static_cast<char>('a' + v % 26);
      v /= 26;
    }
    while (n > 0) text.push_back(word[--n]);
  }
  return text;
}

Result<std::vector<TokenId>> ParseRenderedText(std::string_view text) {
  std::vector<TokenId> tokens;
  size_t i = 0;
  auto is_space = [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
  };
  while (i < text.size()) {
    if (is_space(text[i])) {
      ++i;
      continue;
    }
    const size_t start = i;
    uint64_t v = 0;
    while (i < text.size() && !is_space(text[i])) {
      const char c = text[i];
      if (c < 'a' || c > 'z') {
        return InvalidArgumentError("rendered text: bad character at offset " + std::to_string(i));
      }
      v = v * 26 + static_cast<uint64_t>(c - 'a') + 1;
      if (v > uint64_t{UINT32_MAX} + 1) {
        return InvalidArgumentError("rendered text: word at offset " + std::to_string(start) +
                                    " is out of range");
      }
      ++i;
    }
    tokens.push_back(static_cast<TokenId>(v - 1));
  }
  return tokens;
}

Status ValidateEntryOptions(const EntryOptions& options) {
  if (options.nodes < 1) return InvalidArgumentError("entry: nodes must be >= 1");
  if (options.clients < 1) return InvalidArgumentError("entry: clients must be >= 1");
  return OkStatus();
}

EntryAssigner::EntryAssigner(const EntryOptions& options, Rng rng)
    : options_(options), rng_(rng), sticky_salt_(0) {
  options_.nodes = std::max<uint32_t>(options_.nodes, 1);
  options_.clients = std::max<uint32_t>(options_.clients, 1);
  sticky_salt_ = rng_.NextU64();
}

uint64_t EntryAssigner::DrawClient() { return rng_.Below(options_.clients); }

uint32_t EntryAssigner::NodeFor(uint64_t client) {
  if (options_.mode == EntryMode::kSticky) {
    return static_cast<uint32_t>(MixIds(sticky_salt_, client) % options_.nodes);
  }
  return static_cast<uint32_t>(rng_.Below(options_.nodes));
}

}  // namespace hearsay::workload
