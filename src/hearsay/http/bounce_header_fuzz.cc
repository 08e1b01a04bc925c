// Fuzz target: x-hearsay-bounce-above-ms comes from a peer's request; its parser must never crash,
// whatever it accepts is a positive finite number below 1e9, and a formatted value parses back
// within the format's precision.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "hearsay/http/bounce_header.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::optional<double> v = hearsay::http::ParseBounceAboveMs(text);
  if (!v) return 0;
  if (!(std::isfinite(*v) && *v > 0 && *v < 1e9)) __builtin_trap();
  const std::optional<double> again =
      hearsay::http::ParseBounceAboveMs(hearsay::http::FormatBounceAboveMs(*v));
  if (*v >= 0.001 && (!again || std::fabs(*again - *v) > 0.001)) __builtin_trap();
  return 0;
}
