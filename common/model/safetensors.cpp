#include "common/model/safetensors.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

namespace dancemoe {
namespace {

using nlohmann::json;

Status header_error(std::string_view file_name, const std::string& what) {
  return invalid_argument(std::string(file_name) + ": invalid safetensors header: " + what);
}

// Parses the JSON text, rejecting duplicate top-level names (which the JSON
// library would otherwise silently collapse to the last one).
Result<json> parse_header_json(std::string_view text, std::string_view file_name) {
  std::set<std::string> seen;
  std::string duplicate;
  auto callback = [&](int depth, json::parse_event_t event, json& parsed) {
    if (depth == 1 && event == json::parse_event_t::key && parsed.is_string()) {
      const auto& key = parsed.get_ref<const std::string&>();
      if (!seen.insert(key).second && duplicate.empty()) duplicate = key;
    }
    return true;
  };
  json header;
  try {
    header = json::parse(text.begin(), text.end(), callback);
  } catch (const json::exception& e) {
    return header_error(file_name, std::string("the header is not valid JSON (") + e.what() + ")");
  }
  if (!duplicate.empty())
    return header_error(file_name, "tensor '" + duplicate + "' appears twice");
  if (!header.is_object()) return header_error(file_name, "the header is not a JSON object");
  return header;
}

Result<SafetensorsTensor> parse_tensor_entry(const std::string& name, const json& entry,
                                             uint64_t data_bytes, std::string_view file_name) {
  auto fail = [&](const std::string& what) {
    return header_error(file_name, "tensor '" + name + "': " + what);
  };
  if (!entry.is_object()) return fail("entry is not an object");
  SafetensorsTensor tensor;
  tensor.name = name;

  auto dtype_it = entry.find("dtype");
  if (dtype_it == entry.end() || !dtype_it->is_string())
    return fail("missing string field 'dtype'");
  const std::string& dtype_text = dtype_it->get_ref<const std::string&>();
  std::optional<DType> dtype = parse_dtype(dtype_text);
  if (!dtype) return fail("unsupported dtype '" + dtype_text + "' (expected F32, F16 or BF16)");
  tensor.dtype = *dtype;

  auto shape_it = entry.find("shape");
  if (shape_it == entry.end() || !shape_it->is_array()) return fail("missing array field 'shape'");
  uint64_t n_elements = 1;
  bool overflow = false;
  for (const json& dim : *shape_it) {
    if (!dim.is_number_unsigned() && !(dim.is_number_integer() && dim.get<int64_t>() >= 0)) {
      return fail("shape has an entry that is not a non-negative integer: " + dim.dump());
    }
    const uint64_t d = dim.get<uint64_t>();
    if (d > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return fail("shape dimension " + std::to_string(d) + " is too large");
    }
    if (d != 0 && n_elements > std::numeric_limits<uint64_t>::max() / d) overflow = true;
    n_elements *= d;
    tensor.shape.push_back(static_cast<int64_t>(d));
  }
  const uint64_t elem = dtype_size_bytes(tensor.dtype);
  if (overflow || n_elements > std::numeric_limits<uint64_t>::max() / elem) {
    return fail("shape is too large to address");
  }

  auto offsets_it = entry.find("data_offsets");
  if (offsets_it == entry.end() || !offsets_it->is_array() || offsets_it->size() != 2 ||
      !(*offsets_it)[0].is_number_unsigned() || !(*offsets_it)[1].is_number_unsigned()) {
    return fail("'data_offsets' must be an array of two non-negative integers");
  }
  tensor.data_begin = (*offsets_it)[0].get<uint64_t>();
  tensor.data_end = (*offsets_it)[1].get<uint64_t>();
  if (tensor.data_begin > tensor.data_end) {
    return fail("data_offsets [" + std::to_string(tensor.data_begin) + ", " +
                std::to_string(tensor.data_end) + "] end before they begin");
  }
  if (tensor.data_end > data_bytes) {
    return fail("data_offsets end at " + std::to_string(tensor.data_end) +
                " past the data section of " + std::to_string(data_bytes) + " bytes");
  }
  if (tensor.n_bytes() != n_elements * elem) {
    return fail("data_offsets span " + std::to_string(tensor.n_bytes()) + " bytes but shape x " +
                dtype_text + " needs " + std::to_string(n_elements * elem));
  }
  return tensor;
}

}  // namespace

Result<SafetensorsHeader> parse_safetensors_header(std::span<const uint8_t> bytes,
                                                   uint64_t file_size, std::string_view file_name) {
  if (file_size < 8 || bytes.size() < 8) {
    return header_error(file_name, "file is " + std::to_string(file_size) +
                                       " bytes, too short for the 8-byte header length");
  }
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | bytes[static_cast<size_t>(i)];
  if (header_len > kMaxSafetensorsHeaderBytes) {
    return header_error(
        file_name, "header length " + std::to_string(header_len) + " exceeds the 100 MiB limit");
  }
  if (header_len > file_size - 8) {
    return header_error(file_name, "header length " + std::to_string(header_len) +
                                       " runs past the end of the " + std::to_string(file_size) +
                                       "-byte file");
  }
  if (bytes.size() < 8 + header_len) {
    return header_error(file_name, "only " + std::to_string(bytes.size()) +
                                       " bytes given for a header of " +
                                       std::to_string(header_len));
  }
  std::string_view text(reinterpret_cast<const char*>(bytes.data() + 8), header_len);
  DMOE_ASSIGN_OR_RETURN(json header_json, parse_header_json(text, file_name));

  SafetensorsHeader header;
  header.data_offset = 8 + header_len;
  header.data_bytes = file_size - header.data_offset;
  for (const auto& [name, entry] : header_json.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) return header_error(file_name, "'__metadata__' is not an object");
      for (const auto& [key, value] : entry.items()) {
        if (!value.is_string()) {
          return header_error(file_name, "'__metadata__." + key + "' is not a string");
        }
        header.metadata[key] = value.get<std::string>();
      }
      continue;
    }
    DMOE_ASSIGN_OR_RETURN(SafetensorsTensor tensor,
                          parse_tensor_entry(name, entry, header.data_bytes, file_name));
    header.tensors.push_back(std::move(tensor));
  }

  std::sort(header.tensors.begin(), header.tensors.end(),
            [](const SafetensorsTensor& a, const SafetensorsTensor& b) {
              return a.data_begin != b.data_begin ? a.data_begin < b.data_begin
                                                  : a.data_end < b.data_end;
            });
  for (size_t i = 1; i < header.tensors.size(); ++i) {
    const SafetensorsTensor& prev = header.tensors[i - 1];
    const SafetensorsTensor& cur = header.tensors[i];
    if (cur.data_begin < prev.data_end && cur.n_bytes() > 0 && prev.n_bytes() > 0) {
      return header_error(file_name, "tensors '" + prev.name + "' and '" + cur.name +
                                         "' overlap in the data section");
    }
  }
  return header;
}

Result<SafetensorsHeader> read_safetensors_header(const std::filesystem::path& path) {
  const std::string file_name = path.string();
  std::error_code ec;
  const uint64_t file_size = std::filesystem::file_size(path, ec);
  if (ec) return not_found(file_name + ": cannot read file size (" + ec.message() + ")");
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found(file_name + ": cannot open file");
  std::vector<uint8_t> prefix(8);
  if (file_size >= 8) in.read(reinterpret_cast<char*>(prefix.data()), 8);
  if (file_size < 8 || !in) {
    return parse_safetensors_header(std::span<const uint8_t>(), file_size, file_name);
  }
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | prefix[static_cast<size_t>(i)];
  // Read the header only if its claimed length is plausible; the parser
  // reports the precise error otherwise.
  if (header_len <= kMaxSafetensorsHeaderBytes && header_len <= file_size - 8) {
    prefix.resize(8 + header_len);
    in.read(reinterpret_cast<char*>(prefix.data() + 8), static_cast<std::streamsize>(header_len));
    if (!in) return internal_error(file_name + ": short read of the safetensors header");
  }
  return parse_safetensors_header(prefix, file_size, file_name);
}

}  // namespace dancemoe
