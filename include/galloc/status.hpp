// Errors as values: every fallible galloc call returns a Status or a Result<T>.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace galloc {

enum class ErrorCode {
  kOk = 0,
  kInvalidArgument,     // bad input: ids out of range, malformed graph, bad file
  kOutOfMemory,         // a buffer type failed to allocate, or a buffer is full
  kInfeasible,          // a capacity or size limit cannot be met
  kFailedPrecondition,  // call order: alloc before reserve, graph differs from the reservation
  kDeadlineExceeded,    // a time budget ran out before any solution was found
  kInternal,            // a bug in galloc: please report it
};

[[nodiscard]] const char* error_code_name(ErrorCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message)
      : code_(code), message_(message.empty() ? nullptr : std::make_unique<std::string>(std::move(message))) {}
  Status(const Status& other)
      : code_(other.code_), message_(other.message_ ? std::make_unique<std::string>(*other.message_) : nullptr) {}
  Status& operator=(const Status& other) {
    if (this != &other) *this = Status(other);
    return *this;
  }
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;
  ~Status() = default;

  [[nodiscard]] static Status ok() { return {}; }
  [[nodiscard]] bool is_ok() const { return code_ == ErrorCode::kOk; }
  explicit operator bool() const { return is_ok(); }
  [[nodiscard]] ErrorCode code() const { return code_; }
  [[nodiscard]] const std::string& message() const { return message_ ? *message_ : no_message(); }
  // "invalid argument: tensor 3 (x3): source 0 is tensor 99, which is not in the graph"
  [[nodiscard]] std::string to_string() const;

 private:
  [[nodiscard]] static const std::string& no_message();

  ErrorCode code_ = ErrorCode::kOk;
  // On the heap, so that an OK status, returned for every tensor on alloc's path, is a code and
  // a null pointer to make and to destroy.
  std::unique_ptr<std::string> message_;
};

[[nodiscard]] inline Status invalid_argument(std::string message) {
  return {ErrorCode::kInvalidArgument, std::move(message)};
}
[[nodiscard]] inline Status out_of_memory(std::string message) { return {ErrorCode::kOutOfMemory, std::move(message)}; }
[[nodiscard]] inline Status failed_precondition(std::string message) {
  return {ErrorCode::kFailedPrecondition, std::move(message)};
}
[[nodiscard]] inline Status internal_error(std::string message) { return {ErrorCode::kInternal, std::move(message)}; }

// A value or the Status that explains why there is none; never neither.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  // An OK status explains nothing: passing one is a caller's bug, kept as an internal error
  // rather than a Result with neither a value nor an error. Checked at run time, because only
  // then is a Status known to be OK.
  Result(Status status)  // NOLINT: implicit by design
      : status_(status.is_ok() ? internal_error("a Result was built from an OK status and holds no value")
                               : std::move(status)) {}

  [[nodiscard]] bool is_ok() const { return value_.has_value(); }
  explicit operator bool() const { return is_ok(); }
  [[nodiscard]] const Status& status() const { return status_; }
  [[nodiscard]] T& value() & { return *value_; }
  [[nodiscard]] const T& value() const& { return *value_; }
  [[nodiscard]] T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace galloc

// Propagates a failed Status out of the calling function.
#define GALLOC_RETURN_IF_ERROR(expr)                    \
  do {                                                  \
    ::galloc::Status galloc_status_ = (expr);           \
    if (!galloc_status_.is_ok()) return galloc_status_; \
  } while (0)
