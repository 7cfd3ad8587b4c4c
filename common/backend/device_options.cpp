#include "common/backend/device_options.h"

#include <algorithm>
#include <charconv>

#include "common/base/byte_size.h"

namespace dancemoe::backend {
namespace {

Status bad_list(std::string_view text, const std::string& why) {
  return invalid_argument("--devices '" + std::string(text) + "': " + why +
                          " (expected a comma-separated list of cpu, cpu:N and cuda:N, e.g. "
                          "cpu, cpu:0,cpu:1 or cuda:0,cpu)");
}

Result<DeviceName> parse_one(std::string_view item, std::string_view list) {
  if (item == "cpu") return DeviceName{};
  DeviceName name;
  std::string_view number;
  if (item.rfind("cpu:", 0) == 0) {
    number = item.substr(4);
  } else if (item.rfind("cuda:", 0) == 0) {
    name.kind = DeviceKind::kCuda;
    number = item.substr(5);
  } else {
    return bad_list(list, "'" + std::string(item) + "' is not a device");
  }
  int index = -1;
  const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), index);
  if (number.empty() || ec != std::errc() || end != number.data() + number.size() || index < 0) {
    return bad_list(list, "'" + std::string(item) + "' needs a device number N >= 0");
  }
  name.index = index;
  return name;
}

}  // namespace

std::string_view device_kind_name(DeviceKind kind) {
  return kind == DeviceKind::kCuda ? "cuda" : "cpu";
}

std::string DeviceName::text() const {
  if (index < 0) return std::string(device_kind_name(kind));
  return std::string(device_kind_name(kind)) + ":" + std::to_string(index);
}

int DeviceOptions::first_cuda() const {
  for (size_t i = 0; i < devices.size(); ++i) {
    if (devices[i].is_cuda()) return static_cast<int>(i);
  }
  return -1;
}

int DeviceOptions::find(std::string_view text) const {
  for (size_t i = 0; i < devices.size(); ++i) {
    if (devices[i].text() == text) return static_cast<int>(i);
  }
  return -1;
}

std::string DeviceOptions::text() const {
  std::string out;
  for (const DeviceName& d : devices) out += (out.empty() ? "" : ",") + d.text();
  return out;
}

Result<std::vector<DeviceName>> parse_device_list(std::string_view text) {
  if (text.empty()) return bad_list(text, "no device");
  std::vector<DeviceName> devices;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    DMOE_ASSIGN_OR_RETURN(DeviceName name, parse_one(text.substr(at, comma - at), text));
    if (std::find(devices.begin(), devices.end(), name) != devices.end()) {
      return bad_list(text, name.text() + " is listed twice");
    }
    devices.push_back(name);
    at = comma + 1;
  }
  const bool whole = std::any_of(devices.begin(), devices.end(),
                                 [](const DeviceName& d) { return d.is_cpu() && d.index < 0; });
  const bool sliced = std::any_of(devices.begin(), devices.end(),
                                  [](const DeviceName& d) { return d.is_cpu() && d.index >= 0; });
  if (whole && sliced) {
    return bad_list(text,
                    "cpu (every core) and cpu:N (a part of them) overlap; list one or the other");
  }
  return devices;
}

Status parse_device_memory(std::string_view text, DeviceOptions* options) {
  const size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    return invalid_argument("--device-memory '" + std::string(text) +
                            "': expected DEVICE=BYTES, e.g. cuda:0=20G or cpu=64G");
  }
  const std::string device(text.substr(0, eq));
  if (options->find(device) < 0) {
    return invalid_argument("--device-memory '" + std::string(text) + "': " + device +
                            " is not among --devices " + options->text());
  }
  if (options->expert_memory.count(device) != 0) {
    return invalid_argument("--device-memory '" + std::string(text) + "': " + device +
                            " is given twice");
  }
  DMOE_ASSIGN_OR_RETURN(uint64_t bytes,
                        parse_byte_size(text.substr(eq + 1), "--device-memory " + device));
  options->expert_memory[device] = bytes;
  return Status::ok();
}

}  // namespace dancemoe::backend
