#include "hearsay/loadgen/request_result.h"

namespace hearsay::loadgen {

std::string ErrorKindName(ErrorKind kind, int http_status) {
  switch (kind) {
    case ErrorKind::kNone:
      return "none";
    case ErrorKind::kConnect:
      return "connect";
    case ErrorKind::kTimeout:
      return "timeout";
    case ErrorKind::kHttpStatus:
      return "http_" + std::to_string(http_status);
    case ErrorKind::kStream:
      return "stream";
    case ErrorKind::kProtocol:
      return "protocol";
    case ErrorKind::kSkipped:
      return "skipped";
    case ErrorKind::kCancelled:
      return "cancelled";
  }
  return "unknown";
}

}  // namespace hearsay::loadgen
