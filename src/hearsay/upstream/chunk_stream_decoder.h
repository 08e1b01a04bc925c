// ChunkStreamDecoder: ParseUpstreamChunk for the events of one upstream stream, answering an
// event that repeats the one before it around another plain text without scanning it again
// (api/repeated_event_decoder.h says when that is exact).
//
// Thread-safety: none; one decoder per stream.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "hearsay/api/repeated_event_decoder.h"
#include "hearsay/upstream/chunk_scanner.h"
#include "hearsay/upstream/upstream_response.h"

namespace hearsay::upstream {

struct UpstreamChunkTraits {
  using Event = UpstreamChunk;
  static std::optional<UpstreamChunk> Scan(std::string_view data,
                                           std::optional<api::TextSpan>* span) {
    return ScanUpstreamChunk(data, span);  // never accepts "[DONE]": not an object
  }
  static Result<UpstreamChunk> Parse(std::string_view data) { return ParseUpstreamChunk(data); }
  static std::string& Text(UpstreamChunk& c) { return c.text; }
};

using ChunkStreamDecoder = api::RepeatedEventDecoder<UpstreamChunkTraits>;

}  // namespace hearsay::upstream
