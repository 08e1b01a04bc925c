// What the scanner tests share (request, stream event and upstream chunk scanners): each one-pass
// scanner is checked against its full decoder, the reference, on a corpus and on seeded random
// mutations of it. Whenever the scanner answers, the reference must accept the same input and
// read the same thing; what the scanner declines is the reference's to answer.
//
// Test-only (includes gtest).
#pragma once

#include <gtest/gtest.h>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "hearsay/env/rng.h"

namespace hearsay::api::testing {

// Checks a scanner's answer `fast` on `input` against the reference decoder's: when the scanner
// answered, `reference` (the reference's value, null if it rejected the input, with
// `reference_error` saying why) must be equal to it, field by field where T has operator==, else
// as `describe` renders the two. Returns whether the scanner answered.
template <typename T, typename Describe>
bool AgreesWithReference(std::string_view input, const std::optional<T>& fast, const T* reference,
                         const std::string& reference_error, Describe describe) {
  if (!fast) return false;
  EXPECT_NE(reference, nullptr) << "the scanner accepted what the reference rejects: " << input
                                << " -> " << reference_error;
  if (reference == nullptr) return true;
  if constexpr (std::equality_comparable<T>) {
    EXPECT_TRUE(*fast == *reference)
        << input << "\n reference: " << describe(*reference) << "\n scanner:   " << describe(*fast);
  } else {
    EXPECT_EQ(describe(*fast), describe(*reference)) << input;
  }
  return true;
}

// One to three random edits of `s`, each a byte replaced by one of `alphabet`, one of `alphabet`
// inserted, a byte erased, or the end cut off: the damage a decoder of untrusted bytes meets.
inline void Mutate(std::string& s, std::string_view alphabet, Rng& rng) {
  const int edits = 1 + static_cast<int>(rng.Below(3));
  for (int e = 0; e < edits && !s.empty(); ++e) {
    const size_t at = rng.Below(s.size());
    switch (rng.Below(4)) {
      case 0:
        s[at] = alphabet[rng.Below(alphabet.size())];
        break;
      case 1:
        s.insert(s.begin() + static_cast<ptrdiff_t>(at), alphabet[rng.Below(alphabet.size())]);
        break;
      case 2:
        s.erase(at, 1);
        break;
      default:
        s.resize(at);
        break;
    }
  }
}

// Runs `rounds` mutation rounds from `seed`: each draws an input with `pick(rng)`, mutates the
// text `text(input)` refers to, and hands the input to `check`, which compares scanner and
// reference on it and returns whether the scanner answered. Returns how many it answered, which
// callers bound from below so that the mutants exercise the fast path, not only the fallback.
template <typename Pick, typename Text, typename Check>
size_t CountAnsweredMutants(uint64_t seed, int rounds, std::string_view alphabet, Pick pick,
                            Text text, Check check) {
  Rng rng(seed);
  size_t answered = 0;
  for (int round = 0; round < rounds; ++round) {
    auto input = pick(rng);
    Mutate(text(input), alphabet, rng);
    answered += check(input) ? 1 : 0;
  }
  return answered;
}

// The same, for inputs that are plain strings.
template <typename Pick, typename Check>
size_t CountAnsweredMutants(uint64_t seed, int rounds, std::string_view alphabet, Pick pick,
                            Check check) {
  return CountAnsweredMutants(
      seed, rounds, alphabet, pick, [](std::string& s) -> std::string& { return s; }, check);
}

}  // namespace hearsay::api::testing
