#include "common/model/safetensors.h"

#include <doctest/doctest.h>

#include <string>

namespace dancemoe {
namespace {

// A file image: 8-byte length, the header text, then `data_bytes` zero bytes.
std::vector<uint8_t> file_image(const std::string& header, size_t data_bytes) {
  std::vector<uint8_t> out(8);
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<uint8_t>(n >> (8 * i));
  out.insert(out.end(), header.begin(), header.end());
  out.resize(out.size() + data_bytes, 0);
  return out;
}

Result<SafetensorsHeader> parse_header(const std::string& header, size_t data_bytes) {
  std::vector<uint8_t> image = file_image(header, data_bytes);
  return parse_safetensors_header(image, image.size(), "test.safetensors");
}

void check_header_error(const Result<SafetensorsHeader>& r, const std::string& fragment) {
  REQUIRE_FALSE(r.is_ok());
  INFO(r.status().message());
  CHECK(r.status().code() == StatusCode::kInvalidArgument);
  CHECK(r.status().message().find("test.safetensors") != std::string::npos);
  CHECK(r.status().message().find(fragment) != std::string::npos);
}

}  // namespace

TEST_CASE("safetensors: a valid header lists tensors in data order with metadata") {
  auto r = parse_header(R"({"__metadata__":{"format":"pt"},)"
                        R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]},)"
                        R"("a":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}})",
                        12);
  REQUIRE(r.is_ok());
  REQUIRE(r->tensors.size() == 2);
  CHECK(r->tensors[0].name == "a");
  CHECK(r->tensors[0].dtype == DType::kBF16);
  CHECK(r->tensors[1].name == "b");
  CHECK(r->tensors[1].n_bytes() == 8);
  CHECK(r->metadata.at("format") == "pt");
  CHECK(r->data_bytes == 12);
}

TEST_CASE("safetensors: headers that lie are rejected with the reason") {
  check_header_error(parse_header(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 8),
                     "past the data section");
  check_header_error(parse_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                  R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                                  12),
                     "overlap");
  check_header_error(
      parse_header(R"({"a":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}})", 2),
      "unsupported dtype 'F8_E4M3'");
  check_header_error(parse_header(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8),
                     "needs 12");
  check_header_error(parse_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8),
                     "end before they begin");
  check_header_error(parse_header(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8),
                     "not a non-negative integer");
  check_header_error(parse_header(R"({"a":{"dtype":"F32","shape":[2]}})", 8), "data_offsets");
  check_header_error(parse_header(R"({"a":{"shape":[2],"data_offsets":[0,8]}})", 8), "dtype");
  check_header_error(parse_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                  R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
                                  8),
                     "appears twice");
  check_header_error(parse_header(R"({"a": [1, 2)", 0), "not valid JSON");
  check_header_error(parse_header(R"([1, 2])", 0), "not a JSON object");
  check_header_error(parse_header(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296,16],)"
                                  R"("data_offsets":[0,8]}})",
                                  8),
                     "too large");
}

TEST_CASE("safetensors: a length field past the end of the file is rejected") {
  std::vector<uint8_t> image = file_image("{}", 0);
  image[0] = 0xff;
  image[1] = 0xff;
  auto r = parse_safetensors_header(image, image.size(), "test.safetensors");
  check_header_error(r, "past the end");
  image[7] = 0x7f;
  check_header_error(parse_safetensors_header(image, image.size(), "test.safetensors"), "100 MiB");
  check_header_error(
      parse_safetensors_header(std::span<const uint8_t>(image.data(), 3), 3, "test.safetensors"),
      "too short");
}

TEST_CASE("safetensors: zero-sized tensors are accepted and do not overlap anything") {
  auto r = parse_header(R"({"e":{"dtype":"F32","shape":[0],"data_offsets":[4,4]},)"
                        R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
                        8);
  REQUIRE(r.is_ok());
  CHECK(r->tensors.size() == 2);
}

}  // namespace dancemoe
