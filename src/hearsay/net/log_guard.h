// Guards for log lines that carry what outsiders send.
//
// LogField makes one value safe to put into a `key=value` log line: at most `max_bytes` of it,
// with every byte outside printable ASCII, and space, '"', '\\' and '=', written as \xNN, so a
// header cannot end a line, forge a field or flood the log with one huge value.
//
// LogRateLimiter bounds how often one kind of line is written: at most `per_second` lines in
// each one-second window; the lines it holds back are counted and reported with the next line
// it lets through (suppressed=N). The matching Prometheus counter counts every event.
//
// Thread-safety: LogField is a pure function; LogRateLimiter is internally synchronised.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace hearsay::net {

// How many bytes of an outside value a log line quotes at most.
inline constexpr size_t kLogFieldBytes = 64;

// `value`, escaped and cut to `max_bytes` of input ("..." marks a cut); "-" when empty.
std::string LogField(std::string_view value, size_t max_bytes = kLogFieldBytes);

class LogRateLimiter {
 public:
  using Clock = std::chrono::steady_clock;
  explicit LogRateLimiter(uint32_t per_second) : per_second_(per_second) {}

  // nullopt: hold this line back. Otherwise write it, with the count of lines held back since
  // the last one written.
  std::optional<uint64_t> Admit(Clock::time_point now);

 private:
  std::mutex mu_;
  const uint32_t per_second_;
  Clock::time_point window_start_;  // guarded by mu_
  uint32_t in_window_ = 0;          // guarded by mu_
  uint64_t suppressed_ = 0;         // guarded by mu_
};

}  // namespace hearsay::net
