#include "common/backend/device_options.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

namespace dancemoe::backend {
namespace {

Status bad_device(const std::string& text) {
  return invalid_argument("--device '" + text + "': expected cpu, cuda, cuda:N or cuda:N,M,...");
}

}  // namespace

Result<DeviceSelection> parse_device(const std::string& text) {
  DeviceSelection selection;
  if (text == "cpu") return selection;
  selection.cpu = false;
  if (text == "cuda") {
    selection.cuda_ordinals = {0};
    return selection;
  }
  if (text.rfind("cuda:", 0) != 0 || text.size() == 5) return bad_device(text);
  size_t at = 5;
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    int ordinal = -1;
    const auto [end, ec] = std::from_chars(text.data() + at, text.data() + comma, ordinal);
    if (ec != std::errc() || end != text.data() + comma || ordinal < 0) return bad_device(text);
    if (std::find(selection.cuda_ordinals.begin(), selection.cuda_ordinals.end(), ordinal) !=
        selection.cuda_ordinals.end()) {
      return invalid_argument("--device '" + text + "': cuda:" + std::to_string(ordinal) +
                              " is listed twice");
    }
    selection.cuda_ordinals.push_back(ordinal);
    at = comma + 1;
  }
  return selection;
}

Result<uint64_t> parse_bytes(const std::string& text) {
  const auto fail = [&] {
    return invalid_argument("'" + text +
                            "' is not a byte size (expected e.g. 20G, 512M, 1.5G or 123456)");
  };
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
    ++i;
  if (i == 0) return fail();
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + i, value);
  if (ec != std::errc() || end != text.data() + i || value < 0) return fail();
  std::string suffix = text.substr(i);
  for (char& c : suffix) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  double scale = 1;
  if (!suffix.empty() && std::string("KMGT").find(suffix[0]) != std::string::npos) {
    scale = std::pow(1024.0, static_cast<double>(std::string("KMGT").find(suffix[0]) + 1));
    suffix.erase(0, 1);
  }
  if (suffix != "" && suffix != "B" && suffix != "IB") return fail();
  return static_cast<uint64_t>(value * scale);
}

Result<std::vector<uint64_t>> parse_byte_list(const std::string& text) {
  std::vector<uint64_t> values;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    DMOE_ASSIGN_OR_RETURN(uint64_t v, parse_bytes(text.substr(at, comma - at)));
    values.push_back(v);
    at = comma + 1;
  }
  return values;
}

}  // namespace dancemoe::backend
