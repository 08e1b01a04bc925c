// DriftDetector: see drift_detector.h.
#include "hearsay/upstream/drift_detector.h"

namespace hearsay::upstream {

Status ValidateDriftOptions(const DriftOptions& o) {
  if (o.window == 0) return InvalidArgumentError("drift window must be >= 1");
  if (o.min_samples == 0 || o.min_samples > o.window) {
    return InvalidArgumentError("drift min_samples must be in [1, window]");
  }
  if (!(o.threshold > 0)) return InvalidArgumentError("drift threshold must be > 0");
  if (!(o.clear_fraction > 0 && o.clear_fraction <= 1)) {
    return InvalidArgumentError("drift clear_fraction must be in (0, 1]");
  }
  if (o.log_interval < Duration::zero()) {
    return InvalidArgumentError("drift log_interval must be >= 0");
  }
  return OkStatus();
}

double DriftDetector::ratio() const {
  if (prompt_ == 0) return 0;
  return static_cast<double>(over_ + under_) / static_cast<double>(prompt_);
}

DriftDetector::Event DriftDetector::Add(uint64_t estimated, uint64_t reported,
                                        uint64_t prompt_tokens, TimePoint now) {
  Sample s;
  s.over = estimated > reported ? estimated - reported : 0;
  s.under = reported > estimated ? reported - estimated : 0;
  s.prompt = prompt_tokens;
  samples_.push_back(s);
  over_ += s.over;
  under_ += s.under;
  prompt_ += s.prompt;
  if (samples_.size() > options_.window) {
    const Sample& old = samples_.front();
    over_ -= old.over;
    under_ -= old.under;
    prompt_ -= old.prompt;
    samples_.pop_front();
  }
  const double r = ratio();
  if (!flagged_) {
    if (samples_.size() >= options_.min_samples && r >= options_.threshold) {
      flagged_ = true;
      last_log_ = now;
      return Event::kRaised;
    }
    return Event::kNone;
  }
  if (r < options_.threshold * options_.clear_fraction) {
    flagged_ = false;
    return Event::kCleared;
  }
  if (now - last_log_ >= options_.log_interval) {
    last_log_ = now;
    return Event::kReminder;
  }
  return Event::kNone;
}

std::string DriftDetector::LikelyCause() const {
  if (over_ >= under_) {
    return "the engine holds less than estimated: capacity_tokens set larger than the engine's "
           "cache, an engine that evicts sooner than LRU, or keys that do not follow the "
           "engine's tokens (tokenizer, chat template or block size mismatch)";
  }
  return "the engine holds more than estimated: the node's keys do not follow the engine's "
         "tokens (tokenizer, chat template or block size mismatch; try --tokenizer engine), or "
         "the engine reuses shifted chunks (llama.cpp --cache-reuse)";
}

}  // namespace hearsay::upstream
