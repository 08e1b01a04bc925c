// Fuzz target: the decoders of untrusted upstream output (stream chunks, error bodies, /slots,
// request rewriting) must never crash, whatever the bytes; the fast chunk scanner and request
// rewrite, whenever they answer, must answer exactly as their tree versions do; and the stream
// decoder must answer as ParseUpstreamChunk, also for an event that repeats the one it keeps
// around another text.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "hearsay/upstream/body_rewriter.h"
#include "hearsay/upstream/chunk_scanner.h"
#include "hearsay/upstream/chunk_stream_decoder.h"
#include "hearsay/upstream/upstream_response.h"

namespace {

bool Same(const hearsay::upstream::UpstreamChunk& a, const hearsay::upstream::UpstreamChunk& b) {
  return a.done == b.done && a.text == b.text && a.finish_reason == b.finish_reason &&
         a.prompt_tokens == b.prompt_tokens && a.completion_tokens == b.completion_tokens &&
         a.cached_tokens == b.cached_tokens &&
         a.prompt_computed_tokens == b.prompt_computed_tokens && a.prompt_ms == b.prompt_ms &&
         a.error == b.error;
}

bool Same(const hearsay::Result<hearsay::upstream::UpstreamChunk>& a,
          const hearsay::Result<hearsay::upstream::UpstreamChunk>& b) {
  if (a.ok() != b.ok()) return false;
  return a.ok() ? Same(a.value(), b.value()) : a.status().ToString() == b.status().ToString();
}

// Decodes `text`, then `text` with the span of its text replaced by each of a few strings (plain,
// escaped, non-ASCII, quote-bearing, and the input's own tail), with one decoder, each compared
// with ParseUpstreamChunk.
void CheckStreamDecoder(std::string_view text) {
  hearsay::upstream::ChunkStreamDecoder decoder;
  if (!Same(decoder.Decode(text), hearsay::upstream::ParseUpstreamChunk(text))) std::abort();
  std::optional<hearsay::api::TextSpan> span;
  if (!hearsay::upstream::ScanUpstreamChunk(text, &span) || !span) return;
  const std::string_view head = text.substr(0, span->begin);
  const std::string_view tail = text.substr(span->end);
  for (std::string_view replacement :
       {std::string_view(""), std::string_view(" next"), std::string_view(R"(\")"),
        std::string_view("\xC3\xA9"), std::string_view("\""), tail, text}) {
    std::string again(head);
    again.append(replacement);
    again.append(tail);
    if (!Same(decoder.Decode(again), hearsay::upstream::ParseUpstreamChunk(again))) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto chunk = hearsay::upstream::ParseUpstreamChunk(text);
  if (chunk.ok() && chunk.value().cached_tokens && chunk.value().prompt_tokens) {
    // Counts are plain values: reading them must be safe.
    volatile uint32_t sum = *chunk.value().cached_tokens + *chunk.value().prompt_tokens;
    (void)sum;
  }
  if (auto fast = hearsay::upstream::ScanUpstreamChunk(text)) {
    auto tree = hearsay::upstream::ParseUpstreamChunkTree(text);
    if (!tree.ok() || !Same(*fast, tree.value())) std::abort();
  }
  CheckStreamDecoder(text);
  (void)hearsay::upstream::UpstreamErrorMessage(text);
  if (auto slots = hearsay::upstream::ParseSlots(text); slots.ok()) {
    const auto sum = hearsay::upstream::SummarizeSlots(slots.value());
    if (sum.busy > sum.slots || (sum.soonest_free_tokens && sum.busy == 0)) std::abort();
  }
  const bool stream = size % 2 == 0;
  if (auto fast = hearsay::upstream::RewriteRequestBodyByScan(text, true, "m", stream)) {
    // The fast rewrite writes the tree's JSON value (members in any order).
    auto tree = hearsay::upstream::RewriteRequestBodyTree(text, true, "m", stream);
    if (!tree.ok() ||
        nlohmann::json::parse(*fast, nullptr, false) != nlohmann::json::parse(*tree)) {
      std::abort();
    }
  }
  (void)hearsay::upstream::PromptText(text);
  return 0;
}
