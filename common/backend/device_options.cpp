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

}  // namespace dancemoe::backend
