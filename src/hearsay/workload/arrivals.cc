#include "hearsay/workload/arrivals.h"

#include <cmath>
#include <string>

namespace hearsay::workload {

Status ValidateArrivalOptions(const ArrivalOptions& options) {
  if (!std::isfinite(options.rate_per_s) || options.rate_per_s <= 0) {
    return InvalidArgumentError("arrival rate must be finite and > 0, got " +
                                std::to_string(options.rate_per_s));
  }
  if (options.kind == ArrivalKind::kGamma && (!std::isfinite(options.cv) || options.cv <= 0)) {
    return InvalidArgumentError("gamma arrival cv must be finite and > 0, got " +
                                std::to_string(options.cv));
  }
  return OkStatus();
}

Result<double> RateForUtilization(double rho, Duration mean_service_time, int nodes) {
  if (!std::isfinite(rho) || rho <= 0) return InvalidArgumentError("rho must be > 0");
  if (nodes < 1) return InvalidArgumentError("nodes must be >= 1");
  if (mean_service_time <= Duration::zero()) {
    return InvalidArgumentError("mean service time must be > 0");
  }
  return rho * nodes / ToSeconds(mean_service_time);
}

Result<ArrivalProcess> ArrivalProcess::Create(const ArrivalOptions& options, Rng rng) {
  HEARSAY_RETURN_IF_ERROR(ValidateArrivalOptions(options));
  return ArrivalProcess(options, rng);
}

ArrivalProcess::ArrivalProcess(const ArrivalOptions& options, Rng rng)
    : options_(options),
      rng_(rng),
      mean_gap_ns_(1e9 / options.rate_per_s),
      // CV of Gamma(k) is 1/sqrt(k).
      gamma_shape_(1.0 / (options.cv * options.cv)) {}

Duration ArrivalProcess::Next() {
  double gap;
  if (options_.kind == ArrivalKind::kPoisson) {
    gap = rng_.Exponential(mean_gap_ns_);
  } else {
    gap = rng_.Gamma(gamma_shape_, mean_gap_ns_ / gamma_shape_);
  }
  now_ns_ += gap;
  return Duration(static_cast<Duration::rep>(std::llround(now_ns_)));
}

}  // namespace hearsay::workload
