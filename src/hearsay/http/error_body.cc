// HTTP-level errors as api::ApiError, so they look like every other error of the API.
#include "hearsay/http/error_body.h"

#include "hearsay/api/api_error.h"

namespace hearsay::http {

namespace {
std::string_view CodeFor(int status) {
  switch (status) {
    case 400:
      return "malformed_http";
    case 408:
      return "request_timeout";
    case 413:
      return "request_too_large";
    case 431:
      return "request_header_too_large";
    case 503:
      return "server_busy";
    default:
      return "";
  }
}
}  // namespace

std::string ErrorBody(int status, std::string_view message) {
  api::ApiError error;
  error.http_status = status;
  error.type = status >= 500 ? "server_error" : "invalid_request_error";
  error.code = std::string(CodeFor(status));
  error.message = std::string(message);
  return api::RenderError(error);
}

}  // namespace hearsay::http
