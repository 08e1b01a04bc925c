// Trace replay in the Mooncake (FAST'25) format: Trace holds a parsed trace, TraceWorkload
// replays it as requests.
//
// The format is JSON Lines, one request per line:
//   {"timestamp": 40, "input_length": 23769, "output_length": 3, "hash_ids": [151, 152, ...]}
// - timestamp: arrival in milliseconds from the start (a non-negative number);
// - input_length, output_length: token counts (non-negative integers; input_length >= 1);
// - hash_ids: remapped prefix block ids, one per block of block_tokens (512) prompt tokens. Two
//   requests that share their first k ids share their first k * block_tokens prompt tokens; the
//   last block may be partial. There are at most ceil(input_length / block_tokens) ids; tokens
//   past the last id are the request's own, shared with nobody.
// Other fields are ignored, so Mooncake's other traces load too. Blank lines are skipped.
// Timestamps going backwards are an error (a shuffled or corrupted file) unless
// TraceOptions::sort_by_timestamp asks for a stable sort instead.
//
// Memory: a Trace keeps only the numbers (about 8 bytes per block id); prompts are synthesized
// when TraceWorkload::Next() issues a request. Block id b always becomes the same block_tokens
// tokens (AppendContentTokens of a content id derived from b; a partial last block is their
// first tokens), so equal ids give equal tokens and different ids give different ones.
//
// Errors never escape as exceptions: the JSON library's exceptions are caught here, and every
// error is an INVALID_ARGUMENT naming the 1-based line ("trace line 17: ...").
//
// Thread-safety: a Trace is immutable after loading and may be shared (shared_ptr<const Trace>)
// between threads and workloads; a TraceWorkload belongs to one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hearsay/common/status.h"
#include "hearsay/env/rng.h"
#include "hearsay/env/time.h"
#include "hearsay/workload/arrivals.h"
#include "hearsay/workload/workload.h"

namespace hearsay::workload {

struct TraceOptions {
  // Prompt tokens per hash id; must be >= 1.
  uint32_t block_tokens = 512;
  // Stable-sort by timestamp instead of rejecting a timestamp that goes backwards.
  bool sort_by_timestamp = false;
  // Largest accepted input_length / output_length, so hostile input cannot ask for gigabytes.
  uint32_t max_tokens_per_request = 1u << 24;
};

// One parsed trace line.
struct TraceRecord {
  // Arrival time from the start of the trace.
  Duration arrival{0};
  uint32_t input_length = 0;
  uint32_t output_length = 0;
  std::vector<uint64_t> hash_ids;
};

// Parses one line (without its newline) into a record, checking every field against `options`.
// The error message does not name the line; Trace::Parse adds that.
Result<TraceRecord> ParseTraceLine(std::string_view line, const TraceOptions& options);

// A loaded trace: compact per-request numbers plus one flat array of block ids.
// Invariants: records are in non-decreasing arrival order; record i's ids are
// hash_ids_[begin, begin + count) with count <= ceil(input_length / block_tokens);
// shareable_tokens <= input_length.
class Trace {
 public:
  // Parses a whole trace. Fails on the first bad line, naming it.
  static Result<Trace> Parse(std::string_view text, const TraceOptions& options);
  // Reads and parses the file at `path` (NOT_FOUND if it cannot be read).
  static Result<Trace> LoadFile(const std::string& path, const TraceOptions& options);

  size_t size() const { return records_.size(); }
  uint32_t block_tokens() const { return block_tokens_; }

  Duration arrival(size_t i) const { return records_[i].arrival; }
  uint32_t input_length(size_t i) const { return records_[i].input_length; }
  uint32_t output_length(size_t i) const { return records_[i].output_length; }
  std::span<const uint64_t> hash_ids(size_t i) const;
  // Leading prompt tokens of request i whose blocks some earlier request already carried: what
  // an infinite cache would hit.
  uint32_t shareable_tokens(size_t i) const { return records_[i].shareable_tokens; }

  // Appends request i's prompt (input_length tokens) to `out`; `vocab` as in AppendContentTokens.
  // Request i must be < size().
  void AppendPrompt(size_t i, uint32_t vocab, std::vector<TokenId>& out) const;

  // Mean input_length over all requests (0 for an empty trace).
  double MeanInputLength() const;
  // Block ids in total, and how many of them repeat an id seen earlier in the trace.
  uint64_t total_blocks() const { return hash_ids_.size(); }
  uint64_t repeated_blocks() const { return repeated_blocks_; }
  // repeated_blocks / total_blocks: the block hit rate of an infinite single cache.
  double RepeatedBlockShare() const;

 private:
  struct Record {
    Duration arrival{0};
    size_t hash_begin = 0;
    uint32_t hash_count = 0;
    uint32_t input_length = 0;
    uint32_t output_length = 0;
    uint32_t shareable_tokens = 0;
  };

  // Computes shareable_tokens and repeated_blocks_ once records are in arrival order.
  void ComputeSharing();

  uint32_t block_tokens_ = 512;
  std::vector<Record> records_;
  std::vector<uint64_t> hash_ids_;
  uint64_t repeated_blocks_ = 0;
};

struct TraceWorkloadOptions {
  // arrival = trace timestamp * time_scale (< 1 replays faster, i.e. at higher load); > 0.
  double time_scale = 1.0;
  // If set, arrival times come from this process instead of the trace (order is kept).
  std::optional<ArrivalOptions> arrivals;
  // Stop after this many requests (0: the whole trace).
  uint64_t max_requests = 0;
  EntryOptions entry;
  uint32_t vocab = kDefaultVocab;
};

// Replays a Trace, synthesizing each request's prompt when it is issued.
// Invariants: next_ <= trace_->size(); arrivals are non-decreasing.
class TraceWorkload final : public Workload {
 public:
  // Validates `options`. `trace` must not be null.
  static Result<TraceWorkload> Create(std::shared_ptr<const Trace> trace,
                                      const TraceWorkloadOptions& options, Rng rng);

  std::optional<Request> Next() override;

 private:
  TraceWorkload(std::shared_ptr<const Trace> trace, const TraceWorkloadOptions& options, Rng rng,
                std::optional<ArrivalProcess> arrivals);

  std::shared_ptr<const Trace> trace_;
  TraceWorkloadOptions options_;
  EntryAssigner entry_;
  std::optional<ArrivalProcess> arrivals_;
  size_t next_ = 0;
};

}  // namespace hearsay::workload
