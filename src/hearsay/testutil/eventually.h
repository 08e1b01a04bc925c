// Eventually: waits until a condition holds, for tests of code that runs on other threads or in
// other processes (sockets, daemons, child processes).
//
// It checks `condition` at once, then again after a pause that starts at 1 ms and doubles up to
// 64 ms (cheap conditions are seen at once; expensive ones, such as an HTTP request to every node
// of a cluster, do not load the machine), and returns true as soon as it holds, or false once
// `bound` has passed. The bound only decides when a failing test gives up: a passing test never
// waits for it, so make it generous (seconds) and never assert on how long the wait took. Wrap the
// call in ASSERT_TRUE/EXPECT_TRUE.
//
// To assert that something did NOT happen, do not wait a fixed time: drain the work that could make
// it happen (run the event loop until it has no ready work, or wait for a later event that must
// come after it), then check.
//
// Thread-safety: `condition` runs on the calling thread and must read shared state safely
// (atomics, or under the lock its writers take).
#pragma once

#include <algorithm>
#include <chrono>
#include <thread>

namespace hearsay::testutil {

inline constexpr std::chrono::seconds kEventuallyBound{10};

template <typename Condition>
[[nodiscard]] bool Eventually(Condition&& condition,
                              std::chrono::steady_clock::duration bound = kEventuallyBound) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  std::chrono::milliseconds pause(1);
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= deadline) return condition();
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(64));
  }
  return true;
}

}  // namespace hearsay::testutil
