#include "common/base/status.h"

#include <doctest/doctest.h>

namespace dancemoe {
namespace {

Result<int> parse_positive(int value) {
  if (value <= 0) return invalid_argument("value must be positive, got " + std::to_string(value));
  return value;
}

Result<int> doubled(int value) {
  DMOE_ASSIGN_OR_RETURN(int checked, parse_positive(value));
  return checked * 2;
}

}  // namespace

TEST_CASE("status: ok and error values carry code and message") {
  CHECK(Status::ok().is_ok());
  CHECK(Status::ok().to_string() == "ok");
  Status s = not_found("config.json: no such file");
  CHECK_FALSE(s.is_ok());
  CHECK(s.code() == StatusCode::kNotFound);
  CHECK(s.to_string() == "not_found: config.json: no such file");
  CHECK(s.with_context("loading model").message() == "loading model: config.json: no such file");
}

TEST_CASE("status: Result propagates errors through DMOE_ASSIGN_OR_RETURN") {
  Result<int> good = doubled(21);
  REQUIRE(good.is_ok());
  CHECK(*good == 42);
  Result<int> bad = doubled(-1);
  REQUIRE_FALSE(bad.is_ok());
  CHECK(bad.status().code() == StatusCode::kInvalidArgument);
  CHECK(bad.status().message().find("-1") != std::string::npos);
}

TEST_CASE("status: a Result built from an ok Status is an internal error, not a value") {
  Result<int> r(Status::ok());
  CHECK_FALSE(r.is_ok());
  CHECK(r.status().code() == StatusCode::kInternal);
}

}  // namespace dancemoe
