// ScanUpstreamChunk: see chunk_scanner.h. It reads what api::ScanOpenAiChunk found as the tree
// decoder would, and leaves to it every shape the tree decoder might refuse.
#include "hearsay/upstream/chunk_scanner.h"

#include <utility>

#include "hearsay/api/openai_chunk_scanner.h"

namespace hearsay::upstream {

using api::JsonKind;
using api::TextSpan;

std::optional<UpstreamChunk> ScanUpstreamChunk(std::string_view data,
                                               std::optional<TextSpan>* text_span) {
  std::optional<api::ScannedChunk> s = api::ScanOpenAiChunk(data);
  if (!s || (!s->has_choices && !s->has_usage && !s->has_timings)) return std::nullopt;
  UpstreamChunk c;
  // The tree decoder reads text when it is present and not null, else the delta's content, else
  // the message's.
  std::optional<TextSpan> chosen;
  if (s->text.kind == JsonKind::kString) {
    c.text = std::move(s->text.value);
    chosen = s->text.span;
  } else if (s->text.kind == JsonKind::kOther) {
    return std::nullopt;
  } else {
    const bool use_delta = s->delta.kind != JsonKind::kAbsent && s->delta.kind != JsonKind::kNull;
    api::ScannedHolder& h = use_delta ? s->delta : s->message;
    if (h.kind == JsonKind::kOther) return std::nullopt;
    if (h.kind == JsonKind::kObject) {
      if (h.content.kind == JsonKind::kOther) return std::nullopt;
      if (h.content.kind == JsonKind::kString) {
        c.text = std::move(h.content.value);
        chosen = h.content.span;
      }
    }
  }
  if (text_span != nullptr) *text_span = chosen;
  if (s->finish_reason.kind == JsonKind::kString)
    c.finish_reason = std::move(s->finish_reason.value);
  c.prompt_tokens = s->prompt_tokens;
  c.completion_tokens = s->completion_tokens;
  c.cached_tokens = s->cached_tokens;
  c.prompt_computed_tokens = s->prompt_n;
  if (s->has_timings) {
    if (!c.cached_tokens) c.cached_tokens = s->cache_n;
    if (!c.prompt_tokens && s->cache_n && c.prompt_computed_tokens) {
      c.prompt_tokens = *s->cache_n + *c.prompt_computed_tokens;
    }
  }
  c.prompt_ms = s->prompt_ms;
  return c;
}

}  // namespace hearsay::upstream
