// Fuzzes the Mooncake trace parser (Trace::Parse, ParseTraceLine) with arbitrary text.
// The first byte picks the options (block size, sort mode); the rest is the trace text.
// Properties checked (a violation aborts):
//   - parsing never crashes or throws, whatever the bytes;
//   - a failure is INVALID_ARGUMENT and names a line ("trace line N: ...");
//   - a parsed trace keeps its invariants: arrivals in order, at most ceil(input/block) ids per
//     request, shareable tokens within the input, repeated blocks within the total;
//   - replayed prompts have input_length tokens, and one block id gives the same tokens wherever
//     it appears (checked for small requests, to keep the fuzzer fast).
// The seed corpus (fuzz/corpus/trace_fuzz/) holds valid and invalid traces in this framing.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string_view>
#include <vector>

#include "hearsay/common/check.h"
#include "hearsay/workload/trace_workload.h"

namespace hearsay::workload {
namespace {

constexpr uint32_t kBlockSizes[] = {1, 4, 16, 512};
constexpr size_t kMaxCheckedTokens = 1 << 16;

void CheckTrace(std::shared_ptr<const Trace> trace) {
  const uint32_t block = trace->block_tokens();
  for (size_t i = 0; i < trace->size(); ++i) {
    if (i > 0) HEARSAY_CHECK(trace->arrival(i) >= trace->arrival(i - 1));
    HEARSAY_CHECK(trace->arrival(i) >= Duration::zero());
    HEARSAY_CHECK(trace->input_length(i) >= 1);
    HEARSAY_CHECK(trace->hash_ids(i).size() <=
                  (uint64_t{trace->input_length(i)} + block - 1) / block);
    HEARSAY_CHECK(trace->shareable_tokens(i) <= trace->input_length(i));
  }
  HEARSAY_CHECK(trace->repeated_blocks() <= trace->total_blocks());

  Result<TraceWorkload> w = TraceWorkload::Create(trace, {}, Rng(1));
  HEARSAY_CHECK(w.ok());
  std::map<uint64_t, std::vector<TokenId>> block_of;
  size_t checked = 0;
  for (size_t i = 0; i < trace->size(); ++i) {
    // Skip (without materializing) requests too big to check cheaply.
    if (checked + trace->input_length(i) > kMaxCheckedTokens) break;
    std::optional<Request> r = w->Next();
    HEARSAY_CHECK(r.has_value());
    HEARSAY_CHECK(r->id == i);
    HEARSAY_CHECK(r->prompt.size() == trace->input_length(i));
    checked += r->prompt.size();
    const auto ids = trace->hash_ids(i);
    for (size_t b = 0; b < ids.size(); ++b) {
      const size_t begin = b * block;
      const size_t end = std::min<size_t>(begin + block, r->prompt.size());
      const std::vector<TokenId> tokens(r->prompt.begin() + begin, r->prompt.begin() + end);
      auto [it, inserted] = block_of.emplace(ids[b], tokens);
      const size_t n = std::min(it->second.size(), tokens.size());
      HEARSAY_CHECK(std::equal(tokens.begin(), tokens.begin() + n, it->second.begin()));
      if (tokens.size() > it->second.size()) it->second = tokens;
    }
  }
}

void FuzzOne(std::string_view input) {
  if (input.empty()) return;
  TraceOptions options;
  options.block_tokens = kBlockSizes[static_cast<uint8_t>(input[0]) % 4];
  options.sort_by_timestamp = (static_cast<uint8_t>(input[0]) & 4) != 0;
  const std::string_view text = input.substr(1);

  Result<TraceRecord> line = ParseTraceLine(text, options);
  if (line.ok()) {
    HEARSAY_CHECK(line->input_length >= 1);
    HEARSAY_CHECK(line->hash_ids.size() <=
                  (uint64_t{line->input_length} + options.block_tokens - 1) / options.block_tokens);
  } else {
    HEARSAY_CHECK(line.status().code() == StatusCode::kInvalidArgument);
  }

  Result<Trace> trace = Trace::Parse(text, options);
  if (!trace.ok()) {
    HEARSAY_CHECK(trace.status().code() == StatusCode::kInvalidArgument);
    HEARSAY_CHECK(trace.status().message().rfind("trace line ", 0) == 0);
    return;
  }
  CheckTrace(std::make_shared<const Trace>(std::move(trace).value()));
}

}  // namespace
}  // namespace hearsay::workload

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hearsay::workload::FuzzOne(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
