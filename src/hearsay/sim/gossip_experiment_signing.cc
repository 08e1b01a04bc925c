#include "hearsay/sim/gossip_experiment_signing.h"

#include <array>
#include <chrono>
#include <cstdint>
#include <ctime>
#include <string>

#include "hearsay/gossip/state_signing.h"

namespace hearsay::sim::gossip_experiment {

namespace {

// Process CPU time: the simulator is single-threaded, and on a loaded machine wall time would
// charge other processes' work to these operations.
struct Clock {
  using duration = std::chrono::nanoseconds;
  using time_point = std::chrono::time_point<Clock, duration>;
  static time_point now() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return time_point(duration(int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec));
  }
};

}  // namespace

SigningCosts MeasureSigningCosts() {
  constexpr int kOps = 2000;
  std::array<uint8_t, gossip::kSigningSeedBytes> seed{};
  seed[0] = 1;
  const gossip::SigningKey key = gossip::SigningKey::FromSeed(seed);
  gossip::StateHash h;
  SigningCosts c;
  auto start = Clock::now();
  for (int i = 0; i < kOps; ++i) {
    h.Add(gossip::CacheElement(static_cast<uint64_t>(i), static_cast<uint32_t>(i)));
  }
  c.element_us = std::chrono::duration<double, std::micro>(Clock::now() - start).count() / kOps;
  const std::string statement = gossip::StateStatement("node-1", 1, 1, 16, h.Digest());
  const std::span<const uint8_t> msg{reinterpret_cast<const uint8_t*>(statement.data()),
                                     statement.size()};
  start = Clock::now();
  gossip::Signature sig{};
  for (int i = 0; i < kOps / 4; ++i) sig = key.Sign(msg);
  c.sign_us = std::chrono::duration<double, std::micro>(Clock::now() - start).count() / (kOps / 4);
  start = Clock::now();
  int ok = 0;
  for (int i = 0; i < kOps / 4; ++i)
    ok += gossip::VerifySignature(key.public_key(), msg, sig) ? 1 : 0;
  c.verify_us =
      std::chrono::duration<double, std::micro>(Clock::now() - start).count() / (kOps / 4);
  if (ok != kOps / 4) c.verify_us = -1;  // cannot happen: says the measurement is void
  // The statement's digest: one pass over the lanes per signature and per verification.
  start = Clock::now();
  std::array<uint8_t, 32> d{};
  for (int i = 0; i < kOps; ++i) {
    h.Add(gossip::CacheElement(static_cast<uint64_t>(i), 0));
    d = h.Digest();
  }
  const double digest_us =
      std::chrono::duration<double, std::micro>(Clock::now() - start).count() / kOps - c.element_us;
  // The digests are used, so the loop is not optimized away.
  if (d[0] == 0 && d[1] == 0 && d[2] == 0 && d[3] == 0) c.element_us += 0.0;
  c.sign_us += digest_us;
  c.verify_us += digest_us;
  return c;
}

}  // namespace hearsay::sim::gossip_experiment
