// Rng: the one random number generator of the core, seedable and identical on every platform.
//
// The algorithm is xoshiro256** (Blackman and Vigna), seeded through SplitMix64. All draws are
// computed here from raw 64-bit outputs: the core never uses std::*_distribution, whose output
// differs between standard libraries, so a seed reproduces a simulation anywhere.
//
// Thread-safety: none; each core owns its generators. Fork() derives independent streams, so
// one seed can feed many components without their draws interleaving.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace hearsay {

class Rng {
 public:
  explicit Rng(uint64_t seed);

  // The next raw 64-bit output.
  uint64_t NextU64();

  // A new generator whose stream is independent of this one's later draws.
  Rng Fork();

  // Uniform integer in [0, bound); bound must be > 0 (returns 0 otherwise). Unbiased.
  uint64_t Below(uint64_t bound);
  // Uniform integer in [lo, hi], inclusive; returns lo if hi < lo.
  int64_t UniformInt(int64_t lo, int64_t hi);
  // Uniform double in [0, 1), with 53 random bits.
  double UniformDouble();
  // Uniform double in [lo, hi).
  double Uniform(double lo, double hi);
  // True with probability p (clamped to [0, 1]).
  bool Bernoulli(double p);
  // Exponential with the given mean (> 0).
  double Exponential(double mean);
  // Normal with the given mean and standard deviation.
  double Normal(double mean, double stddev);
  // exp(Normal(mu, sigma)): the median is exp(mu).
  double LogNormal(double mu, double sigma);
  // Gamma with shape k > 0 and scale theta > 0: mean k*theta, coefficient of variation 1/sqrt(k).
  double Gamma(double shape, double scale);

  // Shuffles `items` in place (Fisher-Yates).
  template <typename T>
  void Shuffle(std::vector<T>& items) {
    for (size_t i = items.size(); i > 1; --i) {
      size_t j = static_cast<size_t>(Below(i));
      std::swap(items[i - 1], items[j]);
    }
  }

 private:
  std::array<uint64_t, 4> s_;
};

// Draws ranks 0..n-1 with P(rank i) proportional to 1 / (i + 1)^s. s = 0 is uniform.
// Precomputes the CDF once (O(n) memory); each draw is one uniform and a binary search.
class ZipfSampler {
 public:
  // n must be >= 1 and s >= 0; other values are clamped (n to 1, s to 0).
  ZipfSampler(size_t n, double s);

  size_t Sample(Rng& rng) const;
  // The probability of rank i.
  double Probability(size_t i) const;
  size_t size() const { return cdf_.size(); }

 private:
  std::vector<double> cdf_;
};

}  // namespace hearsay
