// ScanStreamEvent: see stream_event_scanner.h. It reads what ScanOpenAiChunk found as the SAX
// decoder would, and leaves to it every value of a type that decoder refuses.
#include "hearsay/api/stream_event_scanner.h"

#include <utility>

#include "hearsay/api/openai_chunk_scanner.h"

namespace hearsay::api {
namespace {

// A text field the SAX decoder accepts: absent, null or a string.
bool Readable(const ScannedText& t) { return t.kind != JsonKind::kOther; }

}  // namespace

std::optional<StreamEvent> ScanStreamEvent(std::string_view data,
                                           std::optional<TextSpan>* text_span) {
  std::optional<ScannedChunk> c = ScanOpenAiChunk(data);
  if (!c || (!c->has_choices && !c->has_usage)) return std::nullopt;
  if (!Readable(c->text) || !Readable(c->finish_reason)) return std::nullopt;
  // A delta is an object or null; its content a string or null.
  const bool delta_present = c->delta.kind == JsonKind::kObject;
  if (c->delta.kind == JsonKind::kOther) return std::nullopt;
  if (delta_present && !Readable(c->delta.content)) return std::nullopt;
  StreamEvent event;
  event.finish_reason = std::move(c->finish_reason.value);
  ScannedText& text = delta_present ? c->delta.content : c->text;
  event.delta_text = std::move(text.value);
  if (text_span != nullptr) *text_span = text.span;
  if (c->has_usage) {
    event.usage = UsageCounts{c->prompt_tokens.value_or(0), c->completion_tokens.value_or(0),
                              c->cached_tokens.value_or(0)};
  }
  return event;
}

}  // namespace hearsay::api
