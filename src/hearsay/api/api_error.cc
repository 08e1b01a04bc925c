// The error factories and RenderError: the one mapping of failures to status, type and code.
#include "hearsay/api/api_error.h"

#include <string>

#include "hearsay/api/json_text.h"

namespace hearsay::api {
namespace {

constexpr std::string_view kInvalidRequest = "invalid_request_error";
constexpr std::string_view kServerError = "server_error";
// How much of a client's path an error quotes.
constexpr size_t kEchoBytes = 48;

ApiError Make(int status, std::string_view type, std::string_view code, std::string_view param,
              std::string message) {
  return ApiError{status, std::string(type), std::string(code), std::string(param),
                  std::move(message)};
}

}  // namespace

std::string Truncated(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  size_t cut = max_bytes;
  // Back up over UTF-8 continuation bytes so a character is not split.
  while (cut > 0 && (static_cast<uint8_t>(text[cut]) & 0xC0) == 0x80) --cut;
  std::string out(text.substr(0, cut));
  out.append("...");
  return out;
}

ApiError InvalidRequest(std::string_view param, std::string message, std::string_view code) {
  return Make(400, kInvalidRequest, code, param, std::move(message));
}

ApiError UnknownModel(std::string_view model) {
  return Make(
      404, kInvalidRequest, "model_not_found", "model",
      "The model `" + Truncated(model) + "` does not exist or you do not have access to it.");
}

ApiError TooManyRequests() {
  return Make(429, "requests", "rate_limit_exceeded", {},
              "Too many concurrent requests on this node; retry after the delay in the "
              "Retry-After header.");
}

ApiError BodyTooLarge(size_t limit_bytes) {
  return Make(413, kInvalidRequest, "request_too_large", {},
              "The request body is larger than this server's limit of " +
                  std::to_string(limit_bytes) + " bytes.");
}

ApiError Internal(std::string message) {
  return Make(500, kServerError, {}, {}, std::move(message));
}

ApiError Unavailable(std::string message) {
  return Make(503, kServerError, {}, {}, std::move(message));
}

ApiError BadGateway(std::string message) {
  return Make(502, kServerError, "upstream_error", {}, std::move(message));
}

ApiError GatewayTimeout(std::string message) {
  return Make(504, kServerError, "upstream_timeout", {}, std::move(message));
}

ApiError TenantRateLimited(std::string_view limit) {
  return Make(429, "requests", "rate_limit_exceeded", {},
              "Rate limit reached for your API key's tenant (" + std::string(limit) +
                  "); retry after the delay in the Retry-After header.");
}

ApiError Unauthorized(std::string message) {
  return Make(401, kInvalidRequest, "invalid_api_key", {}, std::move(message));
}

ApiError Forbidden(std::string message) {
  return Make(403, "permission_error", "forbidden", {}, std::move(message));
}

ApiError NotFound(std::string_view path) {
  return Make(
      404, kInvalidRequest, "not_found", {},
      "Invalid URL (" + Truncated(path, kEchoBytes) + "): no endpoint is served at this path.");
}

ApiError UnsupportedEncoding(std::string_view encoding) {
  return Make(415, kInvalidRequest, "unsupported_content_encoding", {},
              "Content-Encoding " + Truncated(encoding, 16) +
                  " is not supported: send the request body unencoded.");
}

ApiError MethodNotAllowed(std::string_view method, std::string_view path) {
  return Make(405, kInvalidRequest, "method_not_allowed", {},
              "Method " + Truncated(method, 16) + " is not allowed on " +
                  Truncated(path, kEchoBytes) + ".");
}

std::string RenderError(const ApiError& error) {
  std::string out;
  out.reserve(96 + error.message.size());
  out.append(R"({"error":{"message":)");
  AppendJsonString(error.message, &out);
  out.append(R"(,"type":)");
  AppendJsonString(error.type, &out);
  out.append(R"(,"param":)");
  AppendJsonStringOrNull(error.param, &out);
  out.append(R"(,"code":)");
  AppendJsonStringOrNull(error.code, &out);
  out.append("}}");
  return out;
}

}  // namespace hearsay::api
