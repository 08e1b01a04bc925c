// The OpenAI-shaped error bodies the HTTP layer sends on its own (limits, timeouts, malformed
// HTTP, connection limit), rendered through api::RenderError like every other API error.
//
// Thread-safety: pure function.
#pragma once

#include <string>
#include <string_view>

namespace hearsay::http {

// The JSON error body for an HTTP-level failure with `status` (400, 408, 413, 431, 503, ...).
std::string ErrorBody(int status, std::string_view message);

}  // namespace hearsay::http
