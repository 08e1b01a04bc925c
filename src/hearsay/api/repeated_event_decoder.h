// RepeatedEventDecoder: decodes the events of one stream as a given decoder does, without scanning
// again the bytes an event repeats from the one before it.
//
// A stream carries one event per token, and the events of one stream differ only in their text:
// vLLM, SGLang, OpenAI and hearsay itself repeat the same id, created, model and choices envelope
// around each token's text (llama.cpp too, unless timings ride on every event). Scanning each
// event in full was the largest cost of a streamed request (docs/benchmarks.md, "Forwarding path vs
// nginx").
//
// The decoder keeps the last event its scanner read in full whose text was a string without
// escapes, with where that string lies. Take an event whose bytes before that place equal the
// kept event's, whose text there is plain (ASCII without '"', '\\' or control characters), and
// whose bytes after that text equal the kept event's bytes after its own: it is the kept JSON
// with another plain string in the same place, so the same valid value, with the same keys and
// the same other fields, and the full decoder would answer the kept event with the new text. That
// is what it gets, without a scan. Any other event goes through the scanner (and, where the
// scanner is unsure, the full decoder), and may become the kept event.
//
// Traits (a struct of static members):
//   using Event = ...;                                 the decoded event
//   std::optional<Event> Scan(std::string_view, std::optional<TextSpan>*);
//       the one-pass scanner: an answer only when it equals Parse's, with its text's span;
//   Result<Event> Parse(std::string_view);             the full decoder, the reference
//   std::string& Text(Event&);                         the field the span's string became
//
// Contract: Decode(x) == Traits::Parse(x), whatever the stream held before.
//
// Thread-safety: none; one decoder per stream.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "hearsay/api/json_scanner.h"
#include "hearsay/api/json_text.h"
#include "hearsay/common/status.h"

namespace hearsay::api {

template <typename Traits>
class RepeatedEventDecoder {
 public:
  using Event = typename Traits::Event;

  // The event of one event's data, as Traits::Parse(data) decodes it.
  Result<Event> Decode(std::string_view data) {
    Event event;
    if (Reuse(data, &event)) {
      ++reused_;
      return event;
    }
    std::optional<TextSpan> span;
    if (std::optional<Event> fast = Traits::Scan(data, &span)) {
      if (span) {
        kept_.assign(data);
        kept_text_ = *span;
        kept_event_ = *fast;
      }
      return std::move(*fast);
    }
    return Traits::Parse(data);
  }

  // Events answered from the kept event, without a scan.
  uint64_t reused() const { return reused_; }

 private:
  // The kept event with data's text, if data repeats the kept event around a plain text.
  bool Reuse(std::string_view data, Event* out) const {
    if (kept_.empty()) return false;
    const size_t head = kept_text_.begin;               // up to and including the opening quote
    const size_t tail = kept_.size() - kept_text_.end;  // from the closing quote on
    if (data.size() < head + tail || std::memcmp(data.data(), kept_.data(), head) != 0) {
      return false;
    }
    const char* text = data.data() + head;
    const char* text_end = PlainRunEnd(text, data.data() + data.size());
    // The plain run must end exactly where the kept tail begins (at its closing quote), and the
    // rest must be that tail byte for byte.
    if (static_cast<size_t>(data.data() + data.size() - text_end) != tail ||
        std::memcmp(text_end, kept_.data() + kept_text_.end, tail) != 0) {
      return false;
    }
    *out = kept_event_;
    Traits::Text(*out).assign(text, text_end);
    return true;
  }

  std::string kept_;    // the kept event's bytes; empty: none yet
  TextSpan kept_text_;  // where its text's string lies in kept_
  Event kept_event_;
  uint64_t reused_ = 0;
};

}  // namespace hearsay::api
