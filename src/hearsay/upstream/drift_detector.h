// DriftDetector: decides from cache evidence whether the node's cache estimates for an engine are
// persistently wrong, and how.
//
// Each evidence report is one sample: the tokens the node estimated cached when it sent the
// request, the tokens the engine reported cached (converted to node tokens), and the prompt
// length. Over the last `window` samples the drift ratio is
//     sum |estimated - reported| / sum prompt_tokens,
// the share of prompt tokens the estimate got wrong. Once at least `min_samples` samples are in
// the window and the ratio reaches `threshold`, drift is flagged; it clears when the ratio falls
// below threshold * `clear_fraction` (hysteresis, so a borderline engine does not flap). The
// signed parts (over- and underestimated tokens) tell the likely cause: overestimates point at a
// capacity set too large or an engine evicting sooner than LRU; underestimates at keys that do not
// follow the engine's tokens (tokenizer, chat template or block size mismatch).
//
// Add() says when to log: on each transition, and while flagged at most once per `log_interval`
// (a rate-limited reminder). It never reads a clock: the time is passed in.
//
// Thread-safety: none; one owner (the engine, on the core thread).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>

#include "hearsay/common/status.h"
#include "hearsay/env/time.h"

namespace hearsay::upstream {

struct DriftOptions {
  uint32_t window = 64;
  uint32_t min_samples = 32;
  double threshold = 0.2;
  double clear_fraction = 0.5;
  Duration log_interval = std::chrono::seconds(60);
};

// INVALID_ARGUMENT naming the bad field.
Status ValidateDriftOptions(const DriftOptions& options);

class DriftDetector {
 public:
  enum class Event : uint8_t {
    kNone,      // nothing to say
    kRaised,    // drift just flagged
    kReminder,  // still flagged; the rate limit allows another warning
    kCleared,   // drift just cleared
  };

  explicit DriftDetector(DriftOptions options) : options_(options) {}

  // Records one evidence sample at `now`.
  Event Add(uint64_t estimated, uint64_t reported, uint64_t prompt_tokens, TimePoint now);

  bool flagged() const { return flagged_; }
  // The current windowed drift ratio (0 when the window is empty).
  double ratio() const;
  // Windowed tokens the estimate claimed beyond the evidence, and fell short of it.
  uint64_t over_tokens() const { return over_; }
  uint64_t under_tokens() const { return under_; }
  uint64_t prompt_tokens() const { return prompt_; }
  size_t samples() const { return samples_.size(); }
  // One sentence naming the likely cause from the signed parts (for the log).
  std::string LikelyCause() const;

 private:
  struct Sample {
    uint64_t over = 0;
    uint64_t under = 0;
    uint64_t prompt = 0;
  };

  DriftOptions options_;
  std::deque<Sample> samples_;
  uint64_t over_ = 0, under_ = 0, prompt_ = 0;
  bool flagged_ = false;
  TimePoint last_log_{};
};

}  // namespace hearsay::upstream
