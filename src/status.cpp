#include "galloc/status.hpp"

namespace galloc {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk: return "ok";
    case ErrorCode::kInvalidArgument: return "invalid argument";
    case ErrorCode::kOutOfMemory: return "out of memory";
    case ErrorCode::kInfeasible: return "infeasible";
    case ErrorCode::kFailedPrecondition: return "failed precondition";
    case ErrorCode::kDeadlineExceeded: return "deadline exceeded";
    case ErrorCode::kInternal: return "internal error";
  }
  return "unknown error";
}

std::string Status::to_string() const {
  if (is_ok()) return "ok";
  return std::string(error_code_name(code_)) + ": " + message();
}

const std::string& Status::no_message() {
  static const std::string empty;
  return empty;
}

}  // namespace galloc
