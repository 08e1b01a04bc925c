// ChunkStreamDecoder: ParseUpstreamChunk for the events of one upstream stream, without scanning
// again the bytes an event repeats from the one before it.
//
// An engine streams one event per token, and the events of one stream differ only in their text:
// vLLM, SGLang and OpenAI repeat the same id, created, model and choices envelope around each
// token's text (llama.cpp too, unless timings ride on every event). Scanning each event in full
// was the largest cost of a streamed request (docs/benchmarks.md, "Session 8").
//
// The decoder keeps the last event it scanned in full, with where its text's string lies. An event
// whose bytes before that place equal the kept event's, whose text there is plain (ASCII, no
// escapes or control characters, so no '"' either), and whose bytes after that text equal the
// kept event's bytes after its own, is the kept JSON with another plain string in the same place:
// the same valid value, the same keys, the same fields, so ParseUpstreamChunk would return the
// kept chunk with the new text. That chunk is returned without a scan. Any other event is decoded
// by ParseUpstreamChunk (the tree decides what the scanner is unsure of) and, if the scanner read
// its text from a string without escapes, becomes the kept event.
//
// Contract: Decode(x) returns exactly what ParseUpstreamChunk(x) returns, whatever came before
// (chunk_stream_decoder_test.cc checks random streams, upstream_response_fuzz.cc hostile ones).
//
// Thread-safety: none; one decoder per stream.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "hearsay/common/status.h"
#include "hearsay/upstream/chunk_scanner.h"
#include "hearsay/upstream/upstream_response.h"

namespace hearsay::upstream {

class ChunkStreamDecoder {
 public:
  // The chunk of one event's data, as ParseUpstreamChunk(data) decodes it.
  Result<UpstreamChunk> Decode(std::string_view data);

  // Events answered from the kept event, without a scan.
  uint64_t reused() const { return reused_; }

 private:
  // The kept event's chunk for `data`, if `data` repeats the kept event around a plain text.
  bool Reuse(std::string_view data, UpstreamChunk* out) const;

  std::string kept_;       // the last event scanned in full whose text was plain; empty: none
  TextSpan kept_text_;     // where its text lies in kept_
  UpstreamChunk kept_chunk_;
  uint64_t reused_ = 0;
};

}  // namespace hearsay::upstream
