// RewriteRequestBodyByScan: the fast path of RewriteRequestBody (upstream_response.h).
//
// Every request's body is rewritten for the upstream; doing it over a JSON tree (parse, set four
// members, print) cost about a tenth of the node's CPU time per request. This copies the client's
// members verbatim and appends the rewritten ones, after one validating pass (json_scanner.h).
//
// Contract: the result is the same JSON value as RewriteRequestBodyTree's (members may come in
// another order; the client's spelling of untouched values is kept). nullopt means "ask the tree":
// invalid JSON, a repeated key at any depth (the tree keeps the last one; the copy would keep
// both), nesting deeper than kMaxScanDepth. upstream_response_test.cc and
// upstream_response_fuzz.cc check the equivalence.
//
// Thread-safety: a pure function.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace hearsay::upstream {

std::optional<std::string> RewriteRequestBodyByScan(std::string_view body, bool llamacpp,
                                                    std::string_view model, bool stream = true);

}  // namespace hearsay::upstream
