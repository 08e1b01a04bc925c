#include "hearsay/workload/arrivals.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace hearsay::workload {
namespace {

struct GapStats {
  double rate_per_s = 0;
  double cv = 0;
};

// Draws n arrivals and measures the mean rate and the gaps' coefficient of variation.
GapStats Measure(const ArrivalOptions& options, uint64_t seed, int n) {
  Result<ArrivalProcess> p = ArrivalProcess::Create(options, Rng(seed));
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  if (!p.ok()) return {};
  double sum = 0;
  double sum_sq = 0;
  Duration last{0};
  for (int i = 0; i < n; ++i) {
    const Duration t = p->Next();
    EXPECT_GE(t, last);
    const double gap = ToSeconds(t - last);
    sum += gap;
    sum_sq += gap * gap;
    last = t;
  }
  const double mean = sum / n;
  GapStats s;
  s.rate_per_s = n / ToSeconds(last);
  s.cv = std::sqrt(sum_sq / n - mean * mean) / mean;
  return s;
}

TEST(ArrivalsTest, PoissonHasTheMeanRateAndCvOne) {
  for (uint64_t seed : {1, 2, 3}) {
    const GapStats s = Measure({ArrivalKind::kPoisson, 250.0, 0}, seed, 200000);
    EXPECT_NEAR(s.rate_per_s, 250.0, 250.0 * 0.01) << "seed " << seed;
    EXPECT_NEAR(s.cv, 1.0, 0.02) << "seed " << seed;
  }
}

TEST(ArrivalsTest, GammaHasTheMeanRateAndTheChosenCv) {
  for (double cv : {2.0, 3.0, 4.0}) {
    const GapStats s = Measure({ArrivalKind::kGamma, 40.0, cv}, 11, 400000);
    EXPECT_NEAR(s.rate_per_s, 40.0, 40.0 * 0.03) << "cv " << cv;
    EXPECT_NEAR(s.cv, cv, cv * 0.06) << "cv " << cv;
  }
}

TEST(ArrivalsTest, SameSeedSameTimes) {
  const ArrivalOptions o{ArrivalKind::kGamma, 5.0, 3.0};
  Result<ArrivalProcess> a = ArrivalProcess::Create(o, Rng(9));
  Result<ArrivalProcess> b = ArrivalProcess::Create(o, Rng(9));
  Result<ArrivalProcess> c = ArrivalProcess::Create(o, Rng(10));
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  bool differs = false;
  for (int i = 0; i < 1000; ++i) {
    const Duration t = a->Next();
    EXPECT_EQ(t, b->Next());
    differs |= t != c->Next();
  }
  EXPECT_TRUE(differs);
}

TEST(ArrivalsTest, RejectsBadOptions) {
  EXPECT_FALSE(ArrivalProcess::Create({ArrivalKind::kPoisson, 0.0, 1.0}, Rng(1)).ok());
  EXPECT_FALSE(ArrivalProcess::Create({ArrivalKind::kPoisson, -3.0, 1.0}, Rng(1)).ok());
  EXPECT_FALSE(ArrivalProcess::Create({ArrivalKind::kPoisson, NAN, 1.0}, Rng(1)).ok());
  EXPECT_FALSE(ArrivalProcess::Create({ArrivalKind::kPoisson, INFINITY, 1.0}, Rng(1)).ok());
  EXPECT_FALSE(ArrivalProcess::Create({ArrivalKind::kGamma, 1.0, 0.0}, Rng(1)).ok());
  EXPECT_FALSE(ArrivalProcess::Create({ArrivalKind::kGamma, 1.0, NAN}, Rng(1)).ok());
  // cv is ignored for Poisson.
  EXPECT_TRUE(ArrivalProcess::Create({ArrivalKind::kPoisson, 1.0, 0.0}, Rng(1)).ok());
}

TEST(ArrivalsTest, RateForUtilization) {
  // 8 nodes, 0.5 s per request: capacity 16 req/s; rho 0.75 -> 12 req/s.
  Result<double> rate = RateForUtilization(0.75, FromMillis(500), 8);
  ASSERT_TRUE(rate.ok());
  EXPECT_DOUBLE_EQ(*rate, 12.0);
  EXPECT_FALSE(RateForUtilization(0, FromMillis(500), 8).ok());
  EXPECT_FALSE(RateForUtilization(0.5, Duration::zero(), 8).ok());
  EXPECT_FALSE(RateForUtilization(0.5, FromMillis(500), 0).ok());
  EXPECT_FALSE(RateForUtilization(NAN, FromMillis(500), 2).ok());
}

}  // namespace
}  // namespace hearsay::workload
