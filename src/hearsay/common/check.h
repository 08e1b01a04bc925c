// Invariant checks that crash loudly. Use them for programming errors only; untrusted input and
// caller mistakes are answered with a Status (see status.h), never with a check.
#pragma once

#include <string_view>

namespace hearsay {

// Prints the failed check to stderr and aborts.
[[noreturn]] void CheckFailed(const char* file, int line, const char* expr, std::string_view msg);

}  // namespace hearsay

#define HEARSAY_CHECK(cond) \
  ((cond) ? static_cast<void>(0) : ::hearsay::CheckFailed(__FILE__, __LINE__, #cond, {}))
#define HEARSAY_CHECK_MSG(cond, msg) \
  ((cond) ? static_cast<void>(0) : ::hearsay::CheckFailed(__FILE__, __LINE__, #cond, (msg)))
