// Status and Result<T>: how core code reports errors, without exceptions.
//
// A Status is either OK or a code with a message. Result<T> holds either a T or a non-OK Status.
// Both are [[nodiscard]]: an ignored error is a compile error. Caller errors (bad arguments,
// untrusted input) are returned as Status; broken invariants crash through HEARSAY_CHECK instead.
//
// Thread-safety: plain values; safe to copy between threads.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "hearsay/common/check.h"

namespace hearsay {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,
  kNotFound,
  kAlreadyExists,
  kOutOfRange,
  kFailedPrecondition,
  kResourceExhausted,
  kUnavailable,
  kDeadlineExceeded,
  kPermissionDenied,
  kUnauthenticated,
  kDataLoss,
  kAborted,
  kUnimplemented,
  kInternal,
};

// The code's name, for example "INVALID_ARGUMENT".
std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  // An OK status.
  Status() = default;
  // A status with `code`; `message` says what went wrong in terms the caller can act on.
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "OK", or "CODE: message".
  std::string ToString() const;

  // Marks a status as deliberately ignored.
  void IgnoreError() const {}

  friend bool operator==(const Status& a, const Status& b) {
    return a.code_ == b.code_ && a.message_ == b.message_;
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status OkStatus() { return Status(); }
inline Status InvalidArgumentError(std::string m) {
  return {StatusCode::kInvalidArgument, std::move(m)};
}
inline Status NotFoundError(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status AlreadyExistsError(std::string m) {
  return {StatusCode::kAlreadyExists, std::move(m)};
}
inline Status OutOfRangeError(std::string m) { return {StatusCode::kOutOfRange, std::move(m)}; }
inline Status FailedPreconditionError(std::string m) {
  return {StatusCode::kFailedPrecondition, std::move(m)};
}
inline Status ResourceExhaustedError(std::string m) {
  return {StatusCode::kResourceExhausted, std::move(m)};
}
inline Status UnavailableError(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status DeadlineExceededError(std::string m) {
  return {StatusCode::kDeadlineExceeded, std::move(m)};
}
inline Status PermissionDeniedError(std::string m) {
  return {StatusCode::kPermissionDenied, std::move(m)};
}
inline Status UnauthenticatedError(std::string m) {
  return {StatusCode::kUnauthenticated, std::move(m)};
}
inline Status DataLossError(std::string m) { return {StatusCode::kDataLoss, std::move(m)}; }
inline Status AbortedError(std::string m) { return {StatusCode::kAborted, std::move(m)}; }
inline Status UnimplementedError(std::string m) {
  return {StatusCode::kUnimplemented, std::move(m)};
}
inline Status InternalError(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

// Either a value or a non-OK Status.
// Invariants: holds a T, or a Status whose ok() is false.
template <typename T>
class [[nodiscard]] Result {
 public:
  // Implicit, so `return value;` and `return SomeError(...);` both work.
  Result(T value) : data_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Status status) : data_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    HEARSAY_CHECK_MSG(!std::get<Status>(data_).ok(), "Result built from an OK Status");
  }

  bool ok() const { return std::holds_alternative<T>(data_); }
  // OK when a value is held, else the error.
  Status status() const { return ok() ? Status() : std::get<Status>(data_); }

  // The value. Calling these on an error is a programming error and crashes.
  const T& value() const& {
    CheckOk();
    return std::get<T>(data_);
  }
  T& value() & {
    CheckOk();
    return std::get<T>(data_);
  }
  T&& value() && {
    CheckOk();
    return std::get<T>(std::move(data_));
  }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

  // The value, or `fallback` on error.
  T value_or(T fallback) const& { return ok() ? std::get<T>(data_) : std::move(fallback); }

 private:
  void CheckOk() const {
    if (!ok()) CheckFailed(__FILE__, __LINE__, "ok()", std::get<Status>(data_).ToString());
  }

  std::variant<T, Status> data_;
};

}  // namespace hearsay

#define HEARSAY_STATUS_CONCAT_INNER(a, b) a##b
#define HEARSAY_STATUS_CONCAT(a, b) HEARSAY_STATUS_CONCAT_INNER(a, b)

// Returns the Status of `expr` from the enclosing function if it is not OK.
#define HEARSAY_RETURN_IF_ERROR(expr)                         \
  do {                                                        \
    ::hearsay::Status hearsay_status_ = (expr);               \
    if (!hearsay_status_.ok()) return hearsay_status_;        \
  } while (false)

// Evaluates `rexpr` (a Result<T>); on error returns its Status, else moves the value into `lhs`.
#define HEARSAY_ASSIGN_OR_RETURN(lhs, rexpr) \
  HEARSAY_ASSIGN_OR_RETURN_IMPL(HEARSAY_STATUS_CONCAT(hearsay_result_, __LINE__), lhs, rexpr)
#define HEARSAY_ASSIGN_OR_RETURN_IMPL(result, lhs, rexpr) \
  auto result = (rexpr);                                  \
  if (!result.ok()) return result.status();               \
  lhs = std::move(result).value()
