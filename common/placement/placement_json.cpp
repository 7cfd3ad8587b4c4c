#include "common/placement/placement_json.h"

#include <algorithm>

#include "common/base/json_field.h"
#include "common/base/json_preview.h"

namespace dancemoe {
namespace {

// The member `key` of `parent` as a view whose path reads `parent.key`: node
// ids and device names are plain words, so errors name `nodes.a.devices.cpu0`.
JsonField named(const JsonField& parent, const std::string& key, const nlohmann::json& value) {
  return JsonField(value, parent.source(), parent.path() + "." + key);
}

Result<ExpertRef> read_expert(const JsonField& pair) {
  const nlohmann::json& j = pair.json();
  const auto in_range = [](const nlohmann::json& v) {
    return v.is_number_integer() && v.get<int64_t>() >= 0 && v.get<int64_t>() <= 65535;
  };
  if (!j.is_array() || j.size() != 2 || !in_range(j[0]) || !in_range(j[1])) {
    return pair.error("expected a pair [layer, expert] of integers in 0..65535, got " +
                      json_preview(j));
  }
  return ExpertRef{static_cast<int32_t>(j[0].get<int64_t>()),
                   static_cast<int32_t>(j[1].get<int64_t>())};
}

// device name -> [[layer, expert], ...]
Result<std::vector<DevicePlacement>> read_devices(const JsonField& devices) {
  if (!devices.json().is_object()) {
    return devices.error("expected an object of device name -> [[layer, expert], ...]");
  }
  std::vector<DevicePlacement> out;
  for (const auto& [name, list] : devices.json().items()) {
    const JsonField field = named(devices, name, list);
    if (!list.is_array()) return field.error("expected a list of [layer, expert] pairs");
    DevicePlacement device{name, {}};
    for (size_t i = 0; i < list.size(); ++i) {
      DMOE_ASSIGN_OR_RETURN(ExpertRef expert, read_expert(field.element(i)));
      device.experts.push_back(expert);
    }
    std::sort(device.experts.begin(), device.experts.end());
    device.experts.erase(std::unique(device.experts.begin(), device.experts.end()),
                         device.experts.end());
    out.push_back(std::move(device));
  }
  return out;
}

Result<std::string> read_endpoint(const JsonField& owner, std::string_view key,
                                  Endpoints endpoints) {
  const nlohmann::json* value =
      owner.json().contains(key) ? &owner.json()[std::string(key)] : nullptr;
  if (value == nullptr && endpoints == Endpoints::kOptional) return std::string();
  if (value == nullptr || !value->is_string() || value->get<std::string>().empty()) {
    return owner.member_error(key, "a ZeroMQ endpoint string such as \"tcp://127.0.0.1:5551\"");
  }
  return value->get<std::string>();
}

Result<std::vector<NodePlacement>> read_nodes_form(const JsonField& nodes, Endpoints endpoints) {
  if (!nodes.json().is_object() || nodes.json().empty()) {
    return nodes.error("expected a non-empty object of node id -> {expert_endpoint, devices}");
  }
  std::vector<NodePlacement> out;
  for (const auto& [id, node] : nodes.json().items()) {
    const JsonField field = named(nodes, id, node);
    DMOE_RETURN_IF_ERROR(field.expect_object());
    NodePlacement n{id, "", {}};
    DMOE_ASSIGN_OR_RETURN(n.expert_endpoint, read_endpoint(field, "expert_endpoint", endpoints));
    DMOE_ASSIGN_OR_RETURN(JsonField devices, field.member("devices"));
    DMOE_ASSIGN_OR_RETURN(n.devices, read_devices(devices));
    out.push_back(std::move(n));
  }
  return out;
}

Result<std::vector<NodePlacement>> read_compact_form(const JsonField& root, Endpoints endpoints) {
  DMOE_ASSIGN_OR_RETURN(JsonField nodes, root.member("placement"));
  if (!nodes.json().is_object() || nodes.json().empty()) {
    return nodes.error("expected a non-empty object of node id -> devices");
  }
  DMOE_ASSIGN_OR_RETURN(std::optional<JsonField> endpoint_map, root.optional_member("endpoints"));
  if (endpoint_map) {
    DMOE_RETURN_IF_ERROR(endpoint_map->expect_object());
  } else if (endpoints == Endpoints::kRequired) {
    return root.member_error("endpoints",
                             "an object of node id -> expert endpoint beside "
                             "\"placement\"");
  }
  std::vector<NodePlacement> out;
  for (const auto& [id, devices] : nodes.json().items()) {
    NodePlacement n{id, "", {}};
    if (endpoint_map) {
      DMOE_ASSIGN_OR_RETURN(n.expert_endpoint, read_endpoint(*endpoint_map, id, endpoints));
    }
    DMOE_ASSIGN_OR_RETURN(n.devices, read_devices(named(nodes, id, devices)));
    out.push_back(std::move(n));
  }
  return out;
}

}  // namespace

Result<ClusterPlacement> placement_from_json(const nlohmann::json& json, const std::string& source,
                                             Endpoints endpoints) {
  const JsonField root(json, source);
  DMOE_RETURN_IF_ERROR(root.expect_object());
  ClusterPlacement placement;
  placement.version = 1;
  if (root.has("version")) {
    DMOE_ASSIGN_OR_RETURN(JsonField version, root.member("version"));
    DMOE_ASSIGN_OR_RETURN(placement.version, version.as_uint());
    if (placement.version == 0) return root.member_error("version", "a positive integer");
  }
  const bool has_nodes = json.contains("nodes");
  if (has_nodes == json.contains("placement")) {
    return root.error(
        "expected exactly one of \"nodes\" (node id -> {expert_endpoint, devices}) or "
        "\"placement\" (node id -> devices, with \"endpoints\")");
  }
  if (has_nodes) {
    DMOE_ASSIGN_OR_RETURN(JsonField nodes, root.member("nodes"));
    DMOE_ASSIGN_OR_RETURN(placement.nodes, read_nodes_form(nodes, endpoints));
  } else {
    DMOE_ASSIGN_OR_RETURN(placement.nodes, read_compact_form(root, endpoints));
  }
  std::sort(placement.nodes.begin(), placement.nodes.end(),
            [](const NodePlacement& a, const NodePlacement& b) { return a.node_id < b.node_id; });
  return placement;
}

Result<ClusterPlacement> read_placement_file(const std::filesystem::path& path,
                                             Endpoints endpoints) {
  DMOE_ASSIGN_OR_RETURN(nlohmann::json json, read_json_file(path));
  return placement_from_json(json, path.string(), endpoints);
}

nlohmann::ordered_json placement_to_json(const ClusterPlacement& placement) {
  nlohmann::ordered_json nodes = nlohmann::ordered_json::object();
  for (const NodePlacement& n : placement.nodes) {
    nlohmann::ordered_json devices = nlohmann::ordered_json::object();
    for (const DevicePlacement& d : n.devices) {
      nlohmann::ordered_json list = nlohmann::ordered_json::array();
      for (ExpertRef k : d.experts) list.push_back({k.layer, k.expert});
      devices[d.device] = std::move(list);
    }
    nlohmann::ordered_json node = nlohmann::ordered_json::object();
    if (!n.expert_endpoint.empty()) node["expert_endpoint"] = n.expert_endpoint;
    node["devices"] = std::move(devices);
    nodes[n.node_id] = std::move(node);
  }
  return {{"version", placement.version}, {"nodes", std::move(nodes)}};
}

}  // namespace dancemoe
