// ChunkStreamDecoder: see chunk_stream_decoder.h.
#include "hearsay/upstream/chunk_stream_decoder.h"

#include <cstring>
#include <optional>
#include <utility>

#include "hearsay/api/json_text.h"

namespace hearsay::upstream {

Result<UpstreamChunk> ChunkStreamDecoder::Decode(std::string_view data) {
  UpstreamChunk chunk;
  if (Reuse(data, &chunk)) {
    ++reused_;
    return chunk;
  }
  // What ParseUpstreamChunk does, keeping the scanner's text span. The scanner never accepts
  // "[DONE]" (not an object), so its answer is ParseUpstreamChunk's.
  std::optional<TextSpan> span;
  if (std::optional<UpstreamChunk> fast = ScanUpstreamChunk(data, &span)) {
    if (span) {
      kept_.assign(data);
      kept_text_ = *span;
      kept_chunk_ = *fast;
    }
    return std::move(*fast);
  }
  return ParseUpstreamChunk(data);
}

bool ChunkStreamDecoder::Reuse(std::string_view data, UpstreamChunk* out) const {
  if (kept_.empty()) return false;
  const size_t head = kept_text_.begin;              // up to and including the opening quote
  const size_t tail = kept_.size() - kept_text_.end;  // from the closing quote on
  if (data.size() < head + tail || std::memcmp(data.data(), kept_.data(), head) != 0) return false;
  const char* text = data.data() + head;
  const char* text_end = api::PlainRunEnd(text, data.data() + data.size());
  // The plain run must end exactly where the kept tail begins (at its closing quote), and the
  // rest must be that tail byte for byte.
  if (static_cast<size_t>(data.data() + data.size() - text_end) != tail ||
      std::memcmp(text_end, kept_.data() + kept_text_.end, tail) != 0) {
    return false;
  }
  *out = kept_chunk_;
  out->text.assign(text, text_end);
  return true;
}

}  // namespace hearsay::upstream
