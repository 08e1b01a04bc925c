// ScanUpstreamChunk: the fast path of ParseUpstreamChunk (upstream_response.h).
//
// The engine decodes one upstream event per generated token, so the decoder is on every
// request's path; building a JSON tree per event made it most of the node's CPU time per request
// (docs/benchmarks.md, "Forwarding path vs nginx"). This scanner reads the event in one pass over
// its bytes, validating the whole text as JSON and keeping only the few values the engine needs,
// without allocating more than the output text. The pass is api::ScanOpenAiChunk
// (openai_chunk_scanner.h), shared with the entry node's ScanStreamEvent; this reads its result
// as the tree decoder would.
//
// Contract: it answers only when it is sure. A value means the tree decoder
// (ParseUpstreamChunkTree) would return exactly the same chunk. nullopt means "ask the tree
// decoder": invalid JSON, error events, duplicate keys the decoder reads, numbers in read fields
// that are not plain unsigned integers within uint32, nesting deeper than 32 levels, and the other
// shapes ScanOpenAiChunk leaves to a reference decoder. Those are rare (errors and malformed
// input), so they cost the tree's time only when they happen.
// upstream_response_test.cc and upstream_response_fuzz.cc check the equivalence.
//
// Thread-safety: a pure function.
#pragma once

#include <optional>
#include <string_view>

#include "hearsay/api/json_scanner.h"
#include "hearsay/upstream/upstream_response.h"

namespace hearsay::upstream {

// The chunk, or nullopt when the tree decoder must decide (see above). Not for "[DONE]". With
// `text_span`, an answer also tells where the string that became its text lies (nullopt: no
// text, or a text with escapes).
std::optional<UpstreamChunk> ScanUpstreamChunk(std::string_view data,
                                               std::optional<api::TextSpan>* text_span = nullptr);

}  // namespace hearsay::upstream
