// A tensor shape as error messages print it: "[2, 3]". Pure; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dancemoe {

inline std::string shape_text(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

}  // namespace dancemoe
