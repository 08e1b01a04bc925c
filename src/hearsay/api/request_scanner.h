// ScanRequest: the fast path of ParseRequest (openai_request.h).
//
// Every client request is parsed and validated before it is routed; building an nlohmann tree of
// the body for that was the largest single cost of a forwarded request (docs/benchmarks.md,
// "Forwarding path vs nginx"). This reads the body in one pass (json_scanner.h), validating the
// whole text as JSON and checking each known field as ParseRequest does, without a tree.
//
// Contract: it answers only when it is sure the request is valid. A value means the tree parser
// (ParseRequestTree) would return exactly the same ApiRequest. nullopt means "ask the tree
// parser": any invalid field, a missing one, a repeated key at any depth (the tree keeps the last
// one), numbers the tree reads as another type (negative, fractional or huge integers), a UTF-8
// byte-order mark, and nesting deeper than kMaxScanDepth. Bad input therefore always gets the tree
// parser's error, with its wording and `param`; only well-formed requests take the fast path.
// openai_request_test.cc and openai_request_fuzz.cc check the equivalence.
//
// Thread-safety: a pure function.
#pragma once

#include <optional>
#include <string_view>

#include "hearsay/api/openai_request.h"

namespace hearsay::api {

std::optional<ApiRequest> ScanRequest(Endpoint endpoint, std::string_view body,
                                      const Limits& limits);

}  // namespace hearsay::api
