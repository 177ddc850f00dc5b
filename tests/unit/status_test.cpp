#include "galloc/status.hpp"

#include <gtest/gtest.h>

#include <string>

namespace galloc {
namespace {

Result<int> half(int n) {
  if (n % 2 != 0) return invalid_argument(std::to_string(n) + " is odd");
  return n / 2;
}

Result<int> quarter(int n) {
  Result<int> h = half(n);
  if (!h) return h.status();
  return half(*h);
}

TEST(Result, HoldsAValueOrTheErrorThatExplainsItsAbsence) {
  const Result<int> ok = quarter(8);
  ASSERT_TRUE(ok.is_ok());
  EXPECT_EQ(*ok, 2);
  EXPECT_TRUE(ok.status().is_ok());

  const Result<int> odd = quarter(6);
  ASSERT_FALSE(odd.is_ok());
  EXPECT_EQ(odd.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(odd.status().message(), "3 is odd");
}

TEST(Result, BuiltFromAnOkStatusIsAnInternalError) {
  const Result<int> neither = Status::ok();
  EXPECT_FALSE(neither.is_ok());
  EXPECT_FALSE(neither.status().is_ok());
  EXPECT_EQ(neither.status().code(), ErrorCode::kInternal);
  EXPECT_NE(neither.status().message().find("OK status"), std::string::npos) << neither.status().to_string();

  const Result<std::string> from_default = Status();
  EXPECT_FALSE(from_default.is_ok());
  EXPECT_EQ(from_default.status().code(), ErrorCode::kInternal);
}

TEST(Status, CopiesAndMovesKeepTheMessage) {
  const Status error = out_of_memory("chunk 0: 4096 bytes");
  Status copy = error;
  EXPECT_EQ(copy.code(), ErrorCode::kOutOfMemory);
  EXPECT_EQ(copy.message(), "chunk 0: 4096 bytes");
  EXPECT_EQ(error.message(), "chunk 0: 4096 bytes");  // a copy, not a move

  Status assigned = Status::ok();
  assigned = copy;
  EXPECT_EQ(assigned.to_string(), "out of memory: chunk 0: 4096 bytes");
  const Status& same = assigned;
  assigned = same;  // assigning a status to itself keeps the message
  EXPECT_EQ(assigned.message(), "chunk 0: 4096 bytes");

  const Status moved = std::move(copy);
  EXPECT_EQ(moved.message(), "chunk 0: 4096 bytes");

  copy = Status::ok();
  EXPECT_TRUE(copy.is_ok());
  EXPECT_EQ(copy.message(), "");
  EXPECT_EQ(copy.to_string(), "ok");
}

}  // namespace
}  // namespace galloc
