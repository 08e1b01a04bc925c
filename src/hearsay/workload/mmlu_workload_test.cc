#include "hearsay/workload/mmlu_workload.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace hearsay::workload::mmlu_workload_test {
namespace {

MmluWorkload Make(const MmluOptions& o, uint64_t seed) {
  Result<MmluWorkload> w = MmluWorkload::Create(o, Rng(seed));
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  return std::move(w).value();
}

std::vector<Request> Drain(Workload& w) {
  std::vector<Request> out;
  while (std::optional<Request> r = w.Next()) out.push_back(std::move(*r));
  return out;
}

size_t CommonPrefix(std::span<const TokenId> a, std::span<const TokenId> b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

TEST(MmluSubjectsTest, RealCounts) {
  const auto subjects = MmluSubjects();
  ASSERT_EQ(subjects.size(), 57u);
  uint32_t total = 0;
  for (const MmluSubject& s : subjects) total += s.test_count;
  EXPECT_EQ(total, 14042u);
  EXPECT_EQ(subjects[0].name, "abstract_algebra");
  EXPECT_EQ(subjects[48].name, "professional_law");
  EXPECT_EQ(subjects[48].test_count, 1534u);
}

TEST(MmluWorkloadTest, SameSeedSameStream) {
  MmluOptions o;
  o.num_requests = 500;
  o.variants = 3;
  o.output = MmluOutput::kChainOfThought;
  o.entry = {EntryMode::kUniform, 8, 16};
  MmluWorkload a = Make(o, 42);
  MmluWorkload b = Make(o, 42);
  MmluWorkload c = Make(o, 43);
  const std::vector<Request> ra = Drain(a);
  const std::vector<Request> rb = Drain(b);
  const std::vector<Request> rc = Drain(c);
  ASSERT_EQ(ra.size(), 500u);
  ASSERT_EQ(rb.size(), 500u);
  bool differs = false;
  for (size_t i = 0; i < ra.size(); ++i) {
    EXPECT_EQ(ra[i].id, i);
    EXPECT_EQ(ra[i].arrival, rb[i].arrival);
    EXPECT_EQ(ra[i].prompt, rb[i].prompt);
    EXPECT_EQ(ra[i].output_tokens, rb[i].output_tokens);
    EXPECT_EQ(ra[i].entry_node, rb[i].entry_node);
    EXPECT_EQ(ra[i].subject, rb[i].subject);
    EXPECT_EQ(ra[i].variant, rb[i].variant);
    differs |= ra[i].prompt != rc[i].prompt || ra[i].arrival != rc[i].arrival;
  }
  EXPECT_TRUE(differs);
  EXPECT_FALSE(a.Next().has_value());
}

TEST(MmluWorkloadTest, PrefixLengthsMedianAndClipping) {
  MmluOptions o;
  o.variants = 20;  // 1,140 prefixes per seed.
  std::vector<size_t> lengths;
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    MmluWorkload w = Make(o, seed);
    for (uint32_t s = 0; s < 57; ++s) {
      for (uint32_t v = 0; v < o.variants; ++v) lengths.push_back(w.Prefix(s, v).size());
    }
  }
  std::sort(lengths.begin(), lengths.end());
  EXPECT_GE(lengths.front(), 250u);
  EXPECT_LE(lengths.back(), 3300u);
  // The lower clip binds for a fair share of prefixes.
  EXPECT_EQ(lengths.front(), 250u);
  const double median = static_cast<double>(lengths[lengths.size() / 2]);
  EXPECT_NEAR(median, 500, 500 * 0.05);
}

TEST(MmluWorkloadTest, UpperClipBinds) {
  MmluOptions o;
  o.prefix_median_tokens = 3000;
  o.prefix_max_tokens = 3300;
  MmluWorkload w = Make(o, 1);
  size_t at_max = 0;
  for (uint32_t s = 0; s < 57; ++s) {
    EXPECT_LE(w.Prefix(s, 0).size(), 3300u);
    at_max += w.Prefix(s, 0).size() == 3300;
  }
  EXPECT_GT(at_max, 5u);
  EXPECT_TRUE(w.Prefix(57, 0).empty());
  EXPECT_TRUE(w.Prefix(0, 1).empty());
}

TEST(MmluWorkloadTest, SuffixMeanAndClipping) {
  MmluOptions o;
  o.num_requests = 20000;
  MmluWorkload w = Make(o, 7);
  double sum = 0;
  size_t n = 0;
  size_t at_min = 0;
  while (std::optional<Request> r = w.Next()) {
    ASSERT_EQ(r->shareable_prefix_tokens, w.Prefix(r->subject, r->variant).size());
    const size_t suffix = r->prompt.size() - r->shareable_prefix_tokens;
    EXPECT_GE(suffix, 30u);
    EXPECT_LE(suffix, 900u);
    at_min += suffix == 30;
    sum += static_cast<double>(suffix);
    ++n;
    EXPECT_EQ(r->output_tokens, 1u);
  }
  EXPECT_NEAR(sum / n, 120, 120 * 0.04);
  EXPECT_GT(at_min, 0u);
}

TEST(MmluWorkloadTest, ChainOfThoughtOutputs) {
  MmluOptions o;
  o.num_requests = 5000;
  o.output = MmluOutput::kChainOfThought;
  MmluWorkload w = Make(o, 3);
  uint32_t lo = UINT32_MAX;
  uint32_t hi = 0;
  while (std::optional<Request> r = w.Next()) {
    lo = std::min(lo, r->output_tokens);
    hi = std::max(hi, r->output_tokens);
  }
  EXPECT_EQ(lo, 150u);
  EXPECT_EQ(hi, 300u);
}

// Empirical subject frequencies against the configured probabilities.
void ExpectPopularity(const MmluOptions& base, const std::vector<double>& expected) {
  MmluOptions o = base;
  o.num_requests = 30000;
  // Short prompts: popularity does not depend on lengths, and this keeps the test fast.
  o.prefix_min_tokens = 30;
  o.prefix_median_tokens = 40;
  o.suffix_min_tokens = 1;
  o.suffix_mean_tokens = 5;
  MmluWorkload w = Make(o, 17);
  std::vector<double> count(57, 0);
  while (std::optional<Request> r = w.Next()) ++count[r->subject];
  double chi2 = 0;
  for (uint32_t s = 0; s < 57; ++s) {
    EXPECT_NEAR(w.SubjectProbability(s), expected[s], 1e-12) << "subject " << s;
    const double e = expected[s] * o.num_requests;
    chi2 += (count[s] - e) * (count[s] - e) / e;
  }
  // 56 degrees of freedom: mean 56, sd ~10.6; 110 is beyond the 99.99th percentile.
  EXPECT_LT(chi2, 110) << "popularity does not follow the chosen distribution";
}

TEST(MmluWorkloadTest, UniformPopularity) {
  MmluOptions o;
  o.popularity = MmluPopularity::kUniform;
  ExpectPopularity(o, std::vector<double>(57, 1.0 / 57));
}

TEST(MmluWorkloadTest, NaturalPopularityFollowsRealCounts) {
  MmluOptions o;
  o.popularity = MmluPopularity::kNatural;
  std::vector<double> p;
  for (const MmluSubject& s : MmluSubjects()) p.push_back(s.test_count / 14042.0);
  ExpectPopularity(o, p);
}

TEST(MmluWorkloadTest, ZipfPopularityRanksByRealCount) {
  for (double s : {0.0, 0.68, 1.4}) {
    MmluOptions o;
    o.popularity = MmluPopularity::kZipf;
    o.zipf_s = s;
    // Rank subjects by real count, largest first (stable for ties).
    std::vector<uint32_t> order(57);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [](uint32_t a, uint32_t b) {
      return MmluSubjects()[a].test_count > MmluSubjects()[b].test_count;
    });
    std::vector<double> p(57);
    double total = 0;
    for (uint32_t r = 0; r < 57; ++r) total += 1.0 / std::pow(r + 1.0, s);
    for (uint32_t r = 0; r < 57; ++r) p[order[r]] = 1.0 / std::pow(r + 1.0, s) / total;
    EXPECT_EQ(order[0], 48u);  // professional_law.
    ExpectPopularity(o, p);
  }
}

TEST(MmluWorkloadTest, SharingStructureIsExact) {
  MmluOptions o;
  o.variants = 4;
  MmluWorkload w = Make(o, 5);
  const size_t header = o.header_tokens;
  const size_t subject_line = header + 1 + o.subject_line_tokens;
  for (uint32_t s = 0; s < 57; ++s) {
    for (uint32_t t = s + 1; t < 57; ++t) {
      // Different subjects share exactly the header.
      EXPECT_EQ(CommonPrefix(w.Prefix(s, 0), w.Prefix(t, 0)), header) << s << " vs " << t;
      EXPECT_EQ(CommonPrefix(w.Prefix(s, 1), w.Prefix(t, 3)), header) << s << " vs " << t;
    }
    for (uint32_t v = 0; v < 4; ++v) {
      for (uint32_t u = v + 1; u < 4; ++u) {
        // Variants share the header and subject line, then differ.
        EXPECT_EQ(CommonPrefix(w.Prefix(s, v), w.Prefix(s, u)), subject_line);
      }
    }
  }
  // Requests of one (subject, variant) share the whole prefix, and then their questions differ.
  o.num_requests = 3000;
  MmluWorkload stream = Make(o, 6);
  std::vector<std::optional<Request>> first(57 * 4);
  size_t pairs = 0;
  while (std::optional<Request> r = stream.Next()) {
    std::optional<Request>& f = first[r->subject * 4 + r->variant];
    if (!f.has_value()) {
      f = std::move(r);
      continue;
    }
    const size_t prefix = stream.Prefix(r->subject, r->variant).size();
    ASSERT_EQ(r->shareable_prefix_tokens, prefix);
    EXPECT_EQ(CommonPrefix(r->prompt, f->prompt), prefix);
    ++pairs;
  }
  EXPECT_GT(pairs, 2000u);
}

TEST(MmluWorkloadTest, SamplingArrivalsAreInOrderAtTheRate) {
  MmluOptions o;
  o.num_requests = 20000;
  o.arrivals = {ArrivalKind::kPoisson, 100.0, 0};
  MmluWorkload w = Make(o, 8);
  Duration last{0};
  uint64_t n = 0;
  while (std::optional<Request> r = w.Next()) {
    EXPECT_GE(r->arrival, last);
    last = r->arrival;
    ++n;
  }
  EXPECT_EQ(n, 20000u);
  EXPECT_NEAR(n / ToSeconds(last), 100.0, 3.0);
}

TEST(MmluWorkloadTest, HarnessSendsSubjectsInOrderInBursts) {
  MmluOptions o;
  o.harness = true;
  o.harness_fraction = 0.25;
  o.burst_size = 8;
  o.arrivals = {ArrivalKind::kPoisson, 80.0, 0};
  MmluWorkload w = Make(o, 9);
  const std::vector<Request> all = Drain(w);
  ASSERT_EQ(all.size(), w.HarnessTotal());
  // Each subject's count is round(count / 4).
  std::vector<uint32_t> per_subject(57, 0);
  int32_t subject = 0;
  size_t burst = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    const Request& r = all[i];
    ASSERT_GE(r.subject, subject) << "subjects go in order";
    if (r.subject != subject) {
      burst = 0;  // A new subject starts a new burst.
      subject = r.subject;
    }
    ++per_subject[r.subject];
    if (burst > 0) {
      EXPECT_EQ(r.arrival, all[i - 1].arrival) << "a burst arrives at once";
    } else if (i > 0) {
      EXPECT_GT(r.arrival, all[i - 1].arrival) << "bursts are apart";
    }
    burst = (burst + 1) % o.burst_size;
  }
  EXPECT_EQ(subject, 56);
  for (uint32_t s = 0; s < 57; ++s) {
    EXPECT_EQ(per_subject[s], std::lround(MmluSubjects()[s].test_count * 0.25)) << s;
  }
}

TEST(MmluWorkloadTest, HarnessBurstsArriveAtRateOverBurstSize) {
  MmluOptions o;
  o.harness = true;
  o.burst_size = 8;
  o.arrivals = {ArrivalKind::kPoisson, 80.0, 0};
  MmluWorkload w = Make(o, 11);
  uint64_t requests = 0;
  uint64_t bursts = 0;
  Duration last{-1};
  while (std::optional<Request> r = w.Next()) {
    ++requests;
    if (r->arrival != last) ++bursts;
    last = r->arrival;
  }
  EXPECT_EQ(requests, 14042u);
  // ~1,780 bursts (each subject's last one may be short): relative noise ~2.4%.
  EXPECT_NEAR(bursts / ToSeconds(last), 10.0, 10.0 * 0.1);
}

TEST(MmluWorkloadTest, StickyEntryPinsClients) {
  MmluOptions o;
  o.num_requests = 4000;
  o.entry = {EntryMode::kSticky, 5, 40};
  MmluWorkload w = Make(o, 10);
  std::vector<int> node_of(40, -1);
  while (std::optional<Request> r = w.Next()) {
    ASSERT_LT(r->client, 40u);
    ASSERT_LT(r->entry_node, 5u);
    if (node_of[r->client] < 0) node_of[r->client] = static_cast<int>(r->entry_node);
    EXPECT_EQ(node_of[r->client], static_cast<int>(r->entry_node));
  }
}

TEST(MmluWorkloadTest, RejectsBadOptions) {
  auto bad = [](auto mutate) {
    MmluOptions o;
    mutate(o);
    return !MmluWorkload::Create(o, Rng(1)).ok();
  };
  EXPECT_TRUE(bad([](MmluOptions& o) { o.variants = 0; }));
  EXPECT_TRUE(bad([](MmluOptions& o) { o.zipf_s = -1; }));
  EXPECT_TRUE(bad([](MmluOptions& o) { o.prefix_min_tokens = 4000; }));
  EXPECT_TRUE(bad([](MmluOptions& o) { o.prefix_min_tokens = 10; }));
  EXPECT_TRUE(bad([](MmluOptions& o) { o.suffix_min_tokens = 0; }));
  EXPECT_TRUE(bad([](MmluOptions& o) { o.cot_min_tokens = 400; }));
  EXPECT_TRUE(bad([](MmluOptions& o) { o.prefix_sigma = NAN; }));
  EXPECT_TRUE(bad([](MmluOptions& o) {
    o.harness = true;
    o.burst_size = 0;
  }));
  EXPECT_TRUE(bad([](MmluOptions& o) { o.arrivals.rate_per_s = 0; }));
  EXPECT_TRUE(bad([](MmluOptions& o) { o.entry.nodes = 0; }));
  EXPECT_TRUE(bad([](MmluOptions& o) { o.vocab = 10; }));
  EXPECT_FALSE(bad([](MmluOptions&) {}));
}

}  // namespace
}  // namespace hearsay::workload::mmlu_workload_test
