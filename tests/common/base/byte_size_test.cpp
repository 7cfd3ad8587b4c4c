#include "common/base/byte_size.h"

#include <doctest/doctest.h>

namespace dancemoe {

TEST_CASE("byte size: units are powers of 1024 with optional B or iB, any case") {
  CHECK(*parse_byte_size("123456", "--x") == 123456u);
  CHECK(*parse_byte_size("4kb", "--x") == 4096u);
  CHECK(*parse_byte_size("1.5k", "--x") == 1536u);
  CHECK(*parse_byte_size("512M", "--x") == 512ull << 20);
  CHECK(*parse_byte_size("1.5GiB", "--x") == 3ull << 29);
  CHECK(*parse_byte_size("20g", "--x") == 20ull << 30);
  CHECK(*parse_byte_size("2T", "--x") == 2ull << 40);
  CHECK(*parse_byte_size("0", "--x") == 0u);
}

TEST_CASE("byte size: bad text is refused naming the flag, the text and the form") {
  for (const char* bad : {"", "G", "-1G", "1.5X", "12 G", "1e3", "nan", "inf", "1iB", "1GBB", "16E",
                          "99999999999T", "18446744073709551616"}) {
    Result<uint64_t> r = parse_byte_size(bad, "--expert-memory");
    CAPTURE(bad);
    REQUIRE_FALSE(r.is_ok());
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
    CHECK(r.status().message().find("--expert-memory") != std::string::npos);
    CHECK(r.status().message().find("'" + std::string(bad) + "'") != std::string::npos);
    CHECK(r.status().message().find("512M") != std::string::npos);
  }
}

TEST_CASE("byte size: lists give one value per item and refuse empty items") {
  CHECK(*parse_byte_size_list("20G,16G", "--budget") ==
        std::vector<uint64_t>{20ull << 30, 16ull << 30});
  CHECK(*parse_byte_size_list("7", "--budget") == std::vector<uint64_t>{7});
  CHECK_FALSE(parse_byte_size_list("20G,,16G", "--budget").is_ok());
  CHECK_FALSE(parse_byte_size_list("20G,", "--budget").is_ok());
}

TEST_CASE("byte size: formatting shows exact bytes and MiB") {
  CHECK(format_bytes(3ull << 20) == "3145728 bytes (3.0 MiB)");
  CHECK(format_bytes(0) == "0 bytes (0.0 MiB)");
}

}  // namespace dancemoe
