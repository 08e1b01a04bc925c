// MmluWorkload: MMLU-like few-shot multiple-choice traffic, the cache-friendly baseline workload.
//
// Each of MMLU's 57 subjects has a shared 5-shot prefix, and every question of that subject is
// that prefix plus a short question suffix. The prompt is built as
//
//   [header]  [subject tag][subject line]  [variant tag][5 examples]  [question]
//   |<------------- prefix of (subject, variant): shareable ------->|
//   header: header_tokens, the same for every prompt; tags: one marker token each.
//
// - Prefix lengths (header included) are lognormal per (subject, variant): median
//   prefix_median_tokens, clipped to [prefix_min_tokens, prefix_max_tokens].
// - Question suffixes are lognormal with mean ~suffix_mean_tokens, clipped to
//   [suffix_min_tokens, suffix_max_tokens], and never shared (each request's own content).
// - Output is 1 token (faithful answer letter) or uniform in [cot_min, cot_max] (chain of thought).
// - Subject popularity is uniform, MMLU's natural skew (its real per-subject test counts), or
//   Zipf(s) with ranks in order of those counts (the largest subject is rank 0).
// - K prefix variants per subject (other shot choices, or tenants) share the header and subject
//   line but not the examples: more distinct prefixes, more cache pressure.
// - Harness mode mimics an evaluation harness: subjects in order, each subject's questions
//   (its real test count times harness_fraction) sent in bursts of burst_size simultaneous
//   requests; the stream ends after the last subject.
//
// Exact sharing by construction: two prompts of one (subject, variant) are equal up to the end
// of the prefix; different subjects are equal exactly on the header (the subject tag is a
// distinct marker token); variants of one subject are equal exactly through the subject line
// (the first example token is a distinct variant marker).
//
// Thread-safety: none; owns its Rng streams.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "hearsay/common/status.h"
#include "hearsay/env/rng.h"
#include "hearsay/workload/arrivals.h"
#include "hearsay/workload/workload.h"

namespace hearsay::workload {

// One MMLU subject and its real test-set size.
struct MmluSubject {
  std::string_view name;
  uint32_t test_count;
};

// MMLU's 57 subjects in alphabetical order, with their test counts (14,042 in total).
std::span<const MmluSubject> MmluSubjects();

enum class MmluPopularity {
  kUniform,
  // Proportional to each subject's real test count.
  kNatural,
  // Zipf with exponent zipf_s over subjects ranked by test count.
  kZipf,
};

enum class MmluOutput {
  kFaithful,        // 1 output token.
  kChainOfThought,  // Uniform in [cot_min_tokens, cot_max_tokens].
};

struct MmluOptions {
  // Requests to emit in sampling mode (ignored in harness mode, which ends after the last subject).
  uint64_t num_requests = 10000;

  MmluPopularity popularity = MmluPopularity::kNatural;
  // Zipf exponent for kZipf; 0.68 approximates MMLU's natural skew. Must be in [0, 10].
  double zipf_s = 0.68;

  // Prefix variants per subject, chosen uniformly per request; must be >= 1.
  uint32_t variants = 1;

  uint32_t header_tokens = 12;
  // Subject line tokens after the subject tag (the subject's name).
  uint32_t subject_line_tokens = 8;
  double prefix_median_tokens = 500;
  double prefix_sigma = 0.55;
  uint32_t prefix_min_tokens = 250;
  uint32_t prefix_max_tokens = 3300;

  double suffix_mean_tokens = 120;
  double suffix_sigma = 0.6;
  uint32_t suffix_min_tokens = 30;
  uint32_t suffix_max_tokens = 900;

  MmluOutput output = MmluOutput::kFaithful;
  uint32_t cot_min_tokens = 150;
  uint32_t cot_max_tokens = 300;

  // Evaluation-harness mode (see the file comment).
  bool harness = false;
  double harness_fraction = 1.0;  // Of each subject's real test count; each subject gets >= 1.
  uint32_t burst_size = 32;       // Requests per burst; must be >= 1.

  // Requests/s on average. In harness mode, bursts arrive at rate / burst_size.
  ArrivalOptions arrivals;
  EntryOptions entry;
  uint32_t vocab = kDefaultVocab;
};

// OK if `options` is usable (counts >= 1, min <= max, prefix_min > header + subject line, ...).
Status ValidateMmluOptions(const MmluOptions& options);

// Invariants: prefixes_[s * variants + v] is the full shared prefix of subject s, variant v, and
// all of them begin with the same header; next_id_ counts emitted requests.
class MmluWorkload final : public Workload {
 public:
  // Validates `options`; draws every prefix from `rng` up front (57 x variants prefixes).
  static Result<MmluWorkload> Create(const MmluOptions& options, Rng rng);

  std::optional<Request> Next() override;

  // The shared prefix of (subject, variant): header, subject line and examples; empty if either
  // index is out of range.
  std::span<const TokenId> Prefix(uint32_t subject, uint32_t variant) const;
  // P(subject) under the configured popularity (sampling mode).
  double SubjectProbability(uint32_t subject) const;
  // Total requests harness mode emits (sum over subjects of the scaled test count).
  uint64_t HarnessTotal() const;

 private:
  MmluWorkload(const MmluOptions& options, Rng rng, ArrivalProcess arrivals);
  uint32_t DrawSuffixLength();
  uint32_t DrawOutputLength();
  uint32_t HarnessCount(uint32_t subject) const;

  MmluOptions options_;
  Rng rng_;
  ArrivalProcess arrivals_;
  EntryAssigner entry_;
  std::vector<std::vector<TokenId>> prefixes_;
  // Cumulative popularity over subjects (sampling mode); last entry is 1.
  std::vector<double> cdf_;
  double suffix_mu_ = 0;
  uint64_t next_id_ = 0;
  // Harness mode cursor: current subject, questions sent of it, requests left in this burst.
  uint32_t harness_subject_ = 0;
  uint32_t harness_sent_ = 0;
  uint32_t burst_left_ = 0;
  Duration burst_time_{0};
};

}  // namespace hearsay::workload
