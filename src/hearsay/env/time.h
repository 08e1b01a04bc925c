// Time as the core sees it: a monotonic point and a duration, both in nanoseconds.
// The core never reads a clock itself; it asks an injected Clock (clock.h). The epoch is the
// host's: the simulator starts at zero, the daemon at an arbitrary monotonic origin.
#pragma once

#include <chrono>
#include <cstdint>

namespace hearsay {

using Duration = std::chrono::nanoseconds;

// Tag type naming the host's monotonic time line. It has no now(): only a Clock reads time.
struct HostTimeline {
  using rep = int64_t;
  using period = std::nano;
  using duration = Duration;
  using time_point = std::chrono::time_point<HostTimeline, Duration>;
  static constexpr bool is_steady = true;
};

using TimePoint = HostTimeline::time_point;

// Seconds as a double, for figures and cost models.
inline double ToSeconds(Duration d) { return std::chrono::duration<double>(d).count(); }
inline double ToMillis(Duration d) { return std::chrono::duration<double, std::milli>(d).count(); }
// A duration from (possibly fractional) seconds or milliseconds, rounded to nanoseconds.
inline Duration FromSeconds(double s) {
  return std::chrono::round<Duration>(std::chrono::duration<double>(s));
}
inline Duration FromMillis(double ms) {
  return std::chrono::round<Duration>(std::chrono::duration<double, std::milli>(ms));
}

}  // namespace hearsay
