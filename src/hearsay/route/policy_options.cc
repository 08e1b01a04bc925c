#include "hearsay/route/policy_options.h"

#include <cmath>
#include <string>

namespace hearsay::route {
namespace {

Status NonNegative(const char* name, double v) {
  if (std::isfinite(v) && v >= 0) return OkStatus();
  return InvalidArgumentError(std::string("policy options: ") + name +
                              " must be a finite number >= 0, got " + std::to_string(v));
}

}  // namespace

Status PolicyOptions::Validate() const {
  HEARSAY_RETURN_IF_ERROR(cost.Validate());
  const HearsayParams& h = hearsay;
  HEARSAY_RETURN_IF_ERROR(NonNegative("near_tie_fraction", h.near_tie_fraction));
  HEARSAY_RETURN_IF_ERROR(NonNegative("near_tie_ms", h.near_tie_ms));
  HEARSAY_RETURN_IF_ERROR(NonNegative("forward_overhead_ms", h.forward_overhead_ms));
  HEARSAY_RETURN_IF_ERROR(NonNegative("reported_wait_drain", h.reported_wait_drain));
  HEARSAY_RETURN_IF_ERROR(NonNegative("busy_wait_ms", h.busy_wait_ms));
  HEARSAY_RETURN_IF_ERROR(NonNegative("work_weight", h.work_weight));
  HEARSAY_RETURN_IF_ERROR(NonNegative("shared_host_work_weight", h.shared_host_work_weight));
  HEARSAY_RETURN_IF_ERROR(NonNegative("queue_memory_per_wait", h.queue_memory_per_wait));
  HEARSAY_RETURN_IF_ERROR(NonNegative("learning_rate", h.learning_rate));
  HEARSAY_RETURN_IF_ERROR(NonNegative("min_confidence", h.min_confidence));
  HEARSAY_RETURN_IF_ERROR(NonNegative("lease_confidence", h.lease_confidence));
  HEARSAY_RETURN_IF_ERROR(NonNegative("initial_fill", h.initial_fill));
  HEARSAY_RETURN_IF_ERROR(NonNegative("wait_mean_weight", h.wait_mean_weight));
  if (h.queue_memory <= Duration::zero() || h.wait_mean_weight > 1) {
    return InvalidArgumentError(
        "policy options: queue_memory must be > 0 and wait_mean_weight <= 1");
  }
  if (h.learning_rate > 1 || h.min_confidence > 1 || h.lease_confidence > 1 ||
      h.reported_wait_drain > 1 || h.initial_fill > 1) {
    return InvalidArgumentError(
        "policy options: learning_rate, min_confidence, lease_confidence, initial_fill and "
        "reported_wait_drain must be <= 1");
  }
  if (h.lease_ttl < Duration::zero() || h.stale_half_life <= Duration::zero() ||
      sent_horizon < Duration::zero()) {
    return InvalidArgumentError(
        "policy options: lease_ttl and sent_horizon must be >= 0, stale_half_life > 0");
  }
  if (h.lease_capacity_log2 < 4 || h.lease_capacity_log2 > 24) {
    return InvalidArgumentError("policy options: lease_capacity_log2 must be in [4, 24], got " +
                                std::to_string(h.lease_capacity_log2));
  }
  return OkStatus();
}

}  // namespace hearsay::route
