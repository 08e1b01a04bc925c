#include "hearsay/workload/mmlu_workload.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <string>

namespace hearsay::workload {
namespace {

constexpr std::array<MmluSubject, 57> kSubjects = {{
    {"abstract_algebra", 100},
    {"anatomy", 135},
    {"astronomy", 152},
    {"business_ethics", 100},
    {"clinical_knowledge", 265},
    {"college_biology", 144},
    {"college_chemistry", 100},
    {"college_computer_science", 100},
    {"college_mathematics", 100},
    {"college_medicine", 173},
    {"college_physics", 102},
    {"computer_security", 100},
    {"conceptual_physics", 235},
    {"econometrics", 114},
    {"electrical_engineering", 145},
    {"elementary_mathematics", 378},
    {"formal_logic", 126},
    {"global_facts", 100},
    {"high_school_biology", 310},
    {"high_school_chemistry", 203},
    {"high_school_computer_science", 100},
    {"high_school_european_history", 165},
    {"high_school_geography", 198},
    {"high_school_government_and_politics", 193},
    {"high_school_macroeconomics", 390},
    {"high_school_mathematics", 270},
    {"high_school_microeconomics", 238},
    {"high_school_physics", 151},
    {"high_school_psychology", 545},
    {"high_school_statistics", 216},
    {"high_school_us_history", 204},
    {"high_school_world_history", 237},
    {"human_aging", 223},
    {"human_sexuality", 131},
    {"international_law", 121},
    {"jurisprudence", 108},
    {"logical_fallacies", 163},
    {"machine_learning", 112},
    {"management", 103},
    {"marketing", 234},
    {"medical_genetics", 100},
    {"miscellaneous", 783},
    {"moral_disputes", 346},
    {"moral_scenarios", 895},
    {"nutrition", 306},
    {"philosophy", 311},
    {"prehistory", 324},
    {"professional_accounting", 282},
    {"professional_law", 1534},
    {"professional_medicine", 272},
    {"professional_psychology", 612},
    {"public_relations", 110},
    {"security_studies", 245},
    {"sociology", 201},
    {"us_foreign_policy", 100},
    {"virology", 166},
    {"world_religions", 171},
}};

// Marker tokens (below kFirstContentToken): subject tags, then variant tags.
constexpr TokenId kSubjectTagBase = 1;
constexpr TokenId kVariantTagBase = 64;
constexpr uint32_t kMaxVariants = kFirstContentToken - kVariantTagBase;

// Content-id namespaces, so the header, prefixes and questions never share streams.
constexpr uint64_t kHeaderStream = 0x6d6d6c7568656164ULL;
constexpr uint64_t kSubjectStream = 0x6d6d6c7573756267ULL;
constexpr uint64_t kShotsStream = 0x6d6d6c7573686f74ULL;
constexpr uint64_t kQuestionStream = 0x6d6d6c7571756573ULL;

}  // namespace

std::span<const MmluSubject> MmluSubjects() { return kSubjects; }

Status ValidateMmluOptions(const MmluOptions& o) {
  if (o.variants < 1 || o.variants > kMaxVariants) {
    return InvalidArgumentError("mmlu: variants must be in [1, " + std::to_string(kMaxVariants) +
                                "]");
  }
  if (!(o.zipf_s >= 0 && o.zipf_s <= 10)) {
    return InvalidArgumentError("mmlu: zipf_s must be in [0, 10]");
  }
  if (!(o.prefix_median_tokens > 0) || !(o.prefix_sigma >= 0) || !std::isfinite(o.prefix_sigma)) {
    return InvalidArgumentError("mmlu: prefix median must be > 0 and sigma >= 0");
  }
  // Header, subject tag, subject line and the variant tag must fit in the shortest prefix.
  if (o.prefix_min_tokens > o.prefix_max_tokens ||
      o.prefix_min_tokens < uint64_t{o.header_tokens} + o.subject_line_tokens + 2) {
    return InvalidArgumentError(
        "mmlu: need header + subject line + 2 <= prefix_min_tokens <= prefix_max_tokens");
  }
  if (!(o.suffix_mean_tokens > 0) || !(o.suffix_sigma >= 0) || !std::isfinite(o.suffix_sigma) ||
      o.suffix_min_tokens < 1 || o.suffix_min_tokens > o.suffix_max_tokens) {
    return InvalidArgumentError(
        "mmlu: need suffix mean > 0, sigma >= 0, 1 <= suffix_min <= suffix_max");
  }
  if (o.cot_min_tokens < 1 || o.cot_min_tokens > o.cot_max_tokens) {
    return InvalidArgumentError("mmlu: need 1 <= cot_min_tokens <= cot_max_tokens");
  }
  if (o.harness &&
      (!(o.harness_fraction > 0) || !std::isfinite(o.harness_fraction) || o.burst_size < 1)) {
    return InvalidArgumentError("mmlu: harness needs fraction > 0 and burst_size >= 1");
  }
  if (o.vocab <= kFirstContentToken) return InvalidArgumentError("mmlu: vocab too small");
  HEARSAY_RETURN_IF_ERROR(ValidateEntryOptions(o.entry));
  return ValidateArrivalOptions(o.arrivals);
}

Result<MmluWorkload> MmluWorkload::Create(const MmluOptions& options, Rng rng) {
  HEARSAY_RETURN_IF_ERROR(ValidateMmluOptions(options));
  ArrivalOptions arrival_options = options.arrivals;
  if (options.harness) arrival_options.rate_per_s /= options.burst_size;
  HEARSAY_ASSIGN_OR_RETURN(ArrivalProcess arrivals,
                           ArrivalProcess::Create(arrival_options, rng.Fork()));
  return MmluWorkload(options, rng, std::move(arrivals));
}

MmluWorkload::MmluWorkload(const MmluOptions& options, Rng rng, ArrivalProcess arrivals)
    : options_(options),
      rng_(rng),
      arrivals_(std::move(arrivals)),
      entry_(options.entry, rng_.Fork()) {
  const uint32_t n = static_cast<uint32_t>(kSubjects.size());
  std::vector<TokenId> header;
  AppendContentTokens(kHeaderStream, 0, options_.header_tokens, options_.vocab, header);

  Rng prefix_rng = rng_.Fork();
  const double mu = std::log(options_.prefix_median_tokens);
  prefixes_.resize(size_t{n} * options_.variants);
  for (uint32_t s = 0; s < n; ++s) {
    for (uint32_t v = 0; v < options_.variants; ++v) {
      const uint32_t len = ClampTokens(prefix_rng.LogNormal(mu, options_.prefix_sigma),
                                       options_.prefix_min_tokens, options_.prefix_max_tokens);
      std::vector<TokenId>& p = prefixes_[size_t{s} * options_.variants + v];
      p.reserve(len + 1);
      p = header;
      p.push_back(kSubjectTagBase + s);
      AppendContentTokens(MixIds(kSubjectStream, s), 0, options_.subject_line_tokens,
                          options_.vocab, p);
      p.push_back(kVariantTagBase + v);
      AppendContentTokens(MixIds(MixIds(kShotsStream, s), v), 0, len - p.size(), options_.vocab, p);
    }
  }

  // Popularity: rank r of Zipf goes to the subject with the r-th largest test count.
  std::vector<double> weight(n, 1.0);
  if (options_.popularity == MmluPopularity::kNatural) {
    for (uint32_t s = 0; s < n; ++s) weight[s] = kSubjects[s].test_count;
  } else if (options_.popularity == MmluPopularity::kZipf) {
    std::vector<uint32_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [](uint32_t a, uint32_t b) {
      return kSubjects[a].test_count > kSubjects[b].test_count;
    });
    for (uint32_t r = 0; r < n; ++r) {
      weight[order[r]] = 1.0 / std::pow(static_cast<double>(r + 1), options_.zipf_s);
    }
  }
  cdf_.resize(n);
  double total = 0;
  for (uint32_t s = 0; s < n; ++s) cdf_[s] = (total += weight[s]);
  for (double& c : cdf_) c /= total;
  cdf_.back() = 1.0;

  // Lognormal mean is exp(mu + sigma^2 / 2).
  suffix_mu_ =
      std::log(options_.suffix_mean_tokens) - 0.5 * options_.suffix_sigma * options_.suffix_sigma;
}

std::span<const TokenId> MmluWorkload::Prefix(uint32_t subject, uint32_t variant) const {
  if (subject >= kSubjects.size() || variant >= options_.variants) return {};
  return prefixes_[size_t{subject} * options_.variants + variant];
}

double MmluWorkload::SubjectProbability(uint32_t subject) const {
  if (subject >= cdf_.size()) return 0;
  return subject == 0 ? cdf_[0] : cdf_[subject] - cdf_[subject - 1];
}

uint32_t MmluWorkload::HarnessCount(uint32_t subject) const {
  const double scaled = std::round(kSubjects[subject].test_count * options_.harness_fraction);
  return static_cast<uint32_t>(std::clamp(scaled, 1.0, 1e9));
}

uint64_t MmluWorkload::HarnessTotal() const {
  uint64_t total = 0;
  for (uint32_t s = 0; s < kSubjects.size(); ++s) total += HarnessCount(s);
  return total;
}

uint32_t MmluWorkload::DrawSuffixLength() {
  return ClampTokens(rng_.LogNormal(suffix_mu_, options_.suffix_sigma), options_.suffix_min_tokens,
                     options_.suffix_max_tokens);
}

uint32_t MmluWorkload::DrawOutputLength() {
  if (options_.output == MmluOutput::kFaithful) return 1;
  return static_cast<uint32_t>(rng_.UniformInt(options_.cot_min_tokens, options_.cot_max_tokens));
}

std::optional<Request> MmluWorkload::Next() {
  Request r;
  uint32_t subject;
  if (options_.harness) {
    if (harness_subject_ < kSubjects.size() && harness_sent_ == HarnessCount(harness_subject_)) {
      ++harness_subject_;
      harness_sent_ = 0;
      burst_left_ = 0;  // A burst never spans two subjects.
    }
    if (harness_subject_ >= kSubjects.size()) return std::nullopt;
    if (burst_left_ == 0) {
      burst_time_ = arrivals_.Next();
      burst_left_ = options_.burst_size;
    }
    --burst_left_;
    ++harness_sent_;
    subject = harness_subject_;
    r.arrival = burst_time_;
  } else {
    if (next_id_ >= options_.num_requests) return std::nullopt;
    const double u = rng_.UniformDouble();
    subject = static_cast<uint32_t>(std::upper_bound(cdf_.begin(), cdf_.end(), u) - cdf_.begin());
    r.arrival = arrivals_.Next();
  }
  const uint32_t variant = static_cast<uint32_t>(rng_.Below(options_.variants));
  const std::vector<TokenId>& prefix = prefixes_[size_t{subject} * options_.variants + variant];
  const uint32_t suffix = DrawSuffixLength();

  r.id = next_id_++;
  r.client = entry_.DrawClient();
  r.entry_node = entry_.NodeFor(r.client);
  r.prompt.reserve(prefix.size() + suffix);
  r.prompt.assign(prefix.begin(), prefix.end());
  AppendContentTokens(MixIds(kQuestionStream, r.id), 0, suffix, options_.vocab, r.prompt);
  r.output_tokens = DrawOutputLength();
  r.shareable_prefix_tokens = static_cast<uint32_t>(prefix.size());
  r.subject = static_cast<int32_t>(subject);
  r.variant = static_cast<int32_t>(variant);
  return r;
}

}  // namespace hearsay::workload
