// Status and Result<T>: errors as values across module boundaries.
//
// The code set is shared by the wire protocol and the HTTP API (STYLE.md,
// "Errors"). A Status carries a code and a human-readable message that names
// the file, field or message at fault and what was expected. Status and
// Result are plain values: copyable, movable, not thread-safe to mutate
// concurrently (like any value).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace dancemoe {

enum class StatusCode : uint8_t {
  kOk = 0,
  kInvalidArgument = 1,
  kNotFound = 2,
  kUnavailable = 3,
  kDeadlineExceeded = 4,
  kResourceExhausted = 5,
  kFailedPrecondition = 6,
  kVersionMismatch = 7,
  kInternal = 8,
};

// Stable lower_snake name of a code ("invalid_argument"), used on the wire and in logs.
std::string_view status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // ok
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return Status(); }

  bool is_ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // "invalid_argument: <message>", or "ok".
  std::string to_string() const;

  // Returns a copy whose message is "<context>: <message>"; ok stays ok.
  Status with_context(std::string_view context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status invalid_argument(std::string msg) {
  return Status(StatusCode::kInvalidArgument, std::move(msg));
}
inline Status not_found(std::string msg) { return Status(StatusCode::kNotFound, std::move(msg)); }
inline Status unavailable(std::string msg) {
  return Status(StatusCode::kUnavailable, std::move(msg));
}
inline Status deadline_exceeded(std::string msg) {
  return Status(StatusCode::kDeadlineExceeded, std::move(msg));
}
inline Status resource_exhausted(std::string msg) {
  return Status(StatusCode::kResourceExhausted, std::move(msg));
}
inline Status failed_precondition(std::string msg) {
  return Status(StatusCode::kFailedPrecondition, std::move(msg));
}
inline Status version_mismatch(std::string msg) {
  return Status(StatusCode::kVersionMismatch, std::move(msg));
}
inline Status internal_error(std::string msg) {
  return Status(StatusCode::kInternal, std::move(msg));
}

// A value of T or the Status explaining why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}        // NOLINT: implicit by design
  Result(Status status) : state_(std::move(status)) {  // NOLINT: implicit by design
    if (std::get<Status>(state_).is_ok()) {
      state_ = Status(StatusCode::kInternal, "Result constructed from an ok Status");
    }
  }

  bool is_ok() const { return std::holds_alternative<T>(state_); }
  const Status& status() const {
    static const Status kOkStatus;
    return is_ok() ? kOkStatus : std::get<Status>(state_);
  }

  // This result, its error (if any) prefixed "<context>: " as Status::with_context does.
  Result with_context(std::string_view context) && {
    if (is_ok()) return std::move(*this);
    return Result(std::get<Status>(state_).with_context(context));
  }

  T& value() & { return std::get<T>(state_); }
  const T& value() const& { return std::get<T>(state_); }
  T&& value() && { return std::get<T>(std::move(state_)); }

  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> state_;
};

}  // namespace dancemoe

#define DMOE_STATUS_CONCAT_INNER(a, b) a##b
#define DMOE_STATUS_CONCAT(a, b) DMOE_STATUS_CONCAT_INNER(a, b)

// Returns the Status of `expr` from the enclosing function when it is not ok.
#define DMOE_RETURN_IF_ERROR(expr)                  \
  do {                                              \
    ::dancemoe::Status dmoe_status_ = (expr);       \
    if (!dmoe_status_.is_ok()) return dmoe_status_; \
  } while (0)

// `DMOE_ASSIGN_OR_RETURN(auto x, f());` declares x from a Result or returns its Status.
#define DMOE_ASSIGN_OR_RETURN(lhs, expr) \
  DMOE_ASSIGN_OR_RETURN_IMPL(DMOE_STATUS_CONCAT(dmoe_result_, __LINE__), lhs, expr)
#define DMOE_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.is_ok()) return tmp.status();           \
  lhs = std::move(tmp).value()
