// ArrivalProcess: when requests arrive, as an open-loop stream of times from the workload start.
//
// Two processes: Poisson (exponential gaps, coefficient of variation 1) and bursty (Gamma gaps
// with a chosen CV; CV 2-4 gives clumps of near-simultaneous arrivals separated by long lulls).
// Both have the same mean rate, so a sweep over burstiness keeps the load fixed. Trace replay
// uses the trace's own timestamps instead (see trace_workload.h).
//
// Rates are in requests per second. RateForUtilization turns a target utilisation rho of the
// cluster's capacity into a rate, so experiments can be stated as "rho = 0.7" on any cluster.
//
// Thread-safety: none; an ArrivalProcess owns its Rng.
#pragma once

#include "hearsay/common/status.h"
#include "hearsay/env/rng.h"
#include "hearsay/env/time.h"

namespace hearsay::workload {

enum class ArrivalKind {
  kPoisson,
  // Gamma-distributed gaps with coefficient of variation `cv`.
  kGamma,
};

struct ArrivalOptions {
  ArrivalKind kind = ArrivalKind::kPoisson;
  // Mean arrival rate in requests per second; must be finite and > 0.
  double rate_per_s = 10.0;
  // Coefficient of variation of the gaps (kGamma only); must be finite and > 0.
  double cv = 3.0;
};

// OK if `options` describes a process (finite positive rate, and cv for kGamma).
Status ValidateArrivalOptions(const ArrivalOptions& options);

// The arrival rate (requests/s) that loads a cluster of `nodes` nodes to utilisation `rho`, when
// one request occupies one node for `mean_service_time` on average: rho * nodes / service.
// Fails unless rho > 0, nodes >= 1 and mean_service_time > 0.
Result<double> RateForUtilization(double rho, Duration mean_service_time, int nodes);

// Invariants: now_ns_ never decreases; gaps have mean 1 / rate and the configured CV.
class ArrivalProcess {
 public:
  // Validates `options` first; the only way to build one.
  static Result<ArrivalProcess> Create(const ArrivalOptions& options, Rng rng);

  // The next arrival time from the start (the first arrival is one gap after zero).
  Duration Next();

  const ArrivalOptions& options() const { return options_; }

 private:
  ArrivalProcess(const ArrivalOptions& options, Rng rng);

  ArrivalOptions options_;
  Rng rng_;
  double mean_gap_ns_;
  double gamma_shape_;
  // Accumulated in double nanoseconds so rounding does not drift over millions of arrivals.
  double now_ns_ = 0;
};

}  // namespace hearsay::workload
