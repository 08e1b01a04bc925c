// ApiError: an OpenAI-shaped error, and the one place that maps failures to HTTP status and JSON.
//
// Every failure the HTTP API reports, from a malformed body to an overloaded node, is an ApiError:
// an HTTP status plus the four fields of OpenAI's error object. The factories below fix the status,
// `type` and `code` of each kind of failure so that every caller reports it the same way.
// RenderError() turns one into the response body:
//   {"error":{"message":"...","type":"...","param":"..."|null,"code":"..."|null}}
// Strings that come from the client (a model name, a path) are truncated before they are echoed,
// so an error body stays small whatever the request held.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace hearsay::api {

struct ApiError {
  // The HTTP status to answer with (400, 403, 404, 405, 413, 429, 500, 502, 503, 504).
  int http_status = 500;
  // OpenAI's error type, e.g. "invalid_request_error", "server_error".
  std::string type;
  // A machine-readable code, e.g. "context_length_exceeded"; empty renders as null.
  std::string code;
  // The request field at fault, e.g. "max_tokens" or "messages[1].role"; empty renders as null.
  std::string param;
  // What went wrong, in words a client developer can act on.
  std::string message;

  friend bool operator==(const ApiError&, const ApiError&) = default;
};

// 400 invalid_request_error about `param` (may be empty), with an optional `code`.
ApiError InvalidRequest(std::string_view param, std::string message, std::string_view code = {});
// 404 model_not_found for a model this node does not serve.
ApiError UnknownModel(std::string_view model);
// 429 rate_limit_exceeded: more concurrent requests than allowed. The caller adds Retry-After.
ApiError TooManyRequests();
// 429 rate_limit_exceeded: the tenant's own limit (`limit`: "requests per second" or "tokens per
// minute") is spent. The caller adds Retry-After.
ApiError TenantRateLimited(std::string_view limit);
// 401 invalid_request_error, code invalid_api_key: no API key, or one this node does not know
// (OpenAI's answer to a wrong key).
ApiError Unauthorized(std::string message);
// 413: a request body over `limit_bytes`.
ApiError BodyTooLarge(size_t limit_bytes);
// 500 server_error: a failure of this node, not of the request.
ApiError Internal(std::string message);
// 503 server_error: the node cannot serve now (draining, no engine, upstream down).
ApiError Unavailable(std::string message);
// 502 server_error, code upstream_error: the engine or peer behind this node answered with
// something that is not a valid response (malformed events, a stream cut short).
ApiError BadGateway(std::string message);
// 504 server_error, code upstream_timeout: the engine or peer behind this node did not answer in
// time.
ApiError GatewayTimeout(std::string message);
// 403 permission_error, e.g. a peer request without a valid cluster token.
ApiError Forbidden(std::string message);
// 404 invalid_request_error for a path no endpoint serves.
ApiError NotFound(std::string_view path);
// 415: a request body in a Content-Encoding this server does not decode.
ApiError UnsupportedEncoding(std::string_view encoding);
// 405 invalid_request_error: `method` is not served on `path`.
ApiError MethodNotAllowed(std::string_view method, std::string_view path);

// The JSON body for `error` (always valid JSON: invalid UTF-8 in a field becomes U+FFFD).
std::string RenderError(const ApiError& error);

// Client-supplied text as echoed in error messages: at most `max_bytes` bytes (cut on a UTF-8
// boundary) followed by "..." when longer.
std::string Truncated(std::string_view text, size_t max_bytes = 128);

}  // namespace hearsay::api
