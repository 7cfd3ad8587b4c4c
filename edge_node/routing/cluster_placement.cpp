#include "edge_node/routing/cluster_placement.h"

#include <algorithm>
#include <fstream>
#include <set>

namespace dancemoe::node {
namespace {

using nlohmann::json;

bool key_less(ExpertKey a, ExpertKey b) {
  return a.layer != b.layer ? a.layer < b.layer : a.expert < b.expert;
}

std::string shown(const json& value) {
  std::string text = value.dump();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

Status expected(std::string_view source, const std::string& path, const std::string& what,
                const json& got) {
  return invalid_argument(std::string(source) + ": " + path + ": expected " + what + ", got " +
                          shown(got));
}

Result<std::vector<DeviceExperts>> read_devices(const json& devices, std::string_view source,
                                                const std::string& path) {
  if (!devices.is_object()) {
    return expected(source, path, "an object of device name -> [[layer, expert], ...]", devices);
  }
  std::vector<DeviceExperts> out;
  for (const auto& [name, list] : devices.items()) {
    const std::string at = path + "." + name;
    if (!list.is_array()) return expected(source, at, "a list of [layer, expert] pairs", list);
    DeviceExperts device{name, {}};
    for (size_t i = 0; i < list.size(); ++i) {
      const json& pair = list[i];
      const std::string pair_at = at + "[" + std::to_string(i) + "]";
      if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number_integer() ||
          !pair[1].is_number_integer() || pair[0].get<int64_t>() < 0 ||
          pair[1].get<int64_t>() < 0 || pair[0].get<int64_t>() > 65535 ||
          pair[1].get<int64_t>() > 65535) {
        return expected(source, pair_at, "a pair [layer, expert] of integers in 0..65535", pair);
      }
      device.experts.push_back({static_cast<int32_t>(pair[0].get<int64_t>()),
                                static_cast<int32_t>(pair[1].get<int64_t>())});
    }
    out.push_back(std::move(device));
  }
  return out;
}

}  // namespace

std::vector<ExpertKey> NodeAssignment::experts() const {
  std::vector<ExpertKey> all;
  for (const DeviceExperts& d : devices) all.insert(all.end(), d.experts.begin(), d.experts.end());
  std::sort(all.begin(), all.end(), key_less);
  all.erase(std::unique(all.begin(), all.end()), all.end());
  return all;
}

const NodeAssignment* ClusterPlacement::find(std::string_view node_id) const {
  for (const NodeAssignment& n : nodes) {
    if (n.node_id == node_id) return &n;
  }
  return nullptr;
}

Result<ClusterPlacement> placement_from_json(const json& root, std::string_view source) {
  if (!root.is_object()) return expected(source, "(top level)", "a JSON object", root);
  ClusterPlacement placement;
  placement.version = 1;
  if (auto it = root.find("version"); it != root.end()) {
    if (!it->is_number_unsigned() || it->get<uint64_t>() == 0) {
      return expected(source, "version", "a positive integer", *it);
    }
    placement.version = it->get<uint64_t>();
  }
  const bool has_nodes = root.contains("nodes");
  const bool has_placement = root.contains("placement");
  if (has_nodes == has_placement) {
    return invalid_argument(std::string(source) +
                            ": expected exactly one of \"nodes\" (node id -> {expert_endpoint, "
                            "devices}) or \"placement\" (with \"endpoints\")");
  }
  if (has_nodes) {
    const json& nodes = root["nodes"];
    if (!nodes.is_object() || nodes.empty()) {
      return expected(source, "nodes", "a non-empty object of node id -> node", nodes);
    }
    for (const auto& [id, node] : nodes.items()) {
      const std::string path = "nodes." + id;
      if (!node.is_object()) return expected(source, path, "an object", node);
      NodeAssignment a;
      a.node_id = id;
      auto endpoint = node.find("expert_endpoint");
      if (endpoint == node.end() || !endpoint->is_string() ||
          endpoint->get<std::string>().empty()) {
        return invalid_argument(std::string(source) + ": " + path +
                                ".expert_endpoint: expected a ZeroMQ endpoint string such as "
                                "\"tcp://127.0.0.1:5551\"");
      }
      a.expert_endpoint = endpoint->get<std::string>();
      auto devices = node.find("devices");
      if (devices == node.end()) {
        return invalid_argument(std::string(source) + ": " + path +
                                ".devices: missing required field");
      }
      DMOE_ASSIGN_OR_RETURN(a.devices, read_devices(*devices, source, path + ".devices"));
      placement.nodes.push_back(std::move(a));
    }
  } else {
    const json& nodes = root["placement"];
    if (!nodes.is_object() || nodes.empty()) {
      return expected(source, "placement", "a non-empty object of node id -> devices", nodes);
    }
    auto endpoints = root.find("endpoints");
    if (endpoints == root.end() || !endpoints->is_object()) {
      return invalid_argument(std::string(source) +
                              ": endpoints: expected an object of node id -> expert endpoint "
                              "beside \"placement\"");
    }
    for (const auto& [id, devices] : nodes.items()) {
      NodeAssignment a;
      a.node_id = id;
      auto endpoint = endpoints->find(id);
      if (endpoint == endpoints->end() || !endpoint->is_string() ||
          endpoint->get<std::string>().empty()) {
        return invalid_argument(std::string(source) + ": endpoints." + id +
                                ": missing expert endpoint for node '" + id + "'");
      }
      a.expert_endpoint = endpoint->get<std::string>();
      DMOE_ASSIGN_OR_RETURN(a.devices, read_devices(devices, source, "placement." + id));
      placement.nodes.push_back(std::move(a));
    }
  }
  std::sort(placement.nodes.begin(), placement.nodes.end(),
            [](const NodeAssignment& a, const NodeAssignment& b) { return a.node_id < b.node_id; });
  return placement;
}

Result<ClusterPlacement> read_placement_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return not_found("cannot open placement file " + path.string());
  json root = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) {
    return invalid_argument(path.string() + ": not valid JSON (expected a placement object)");
  }
  return placement_from_json(root, path.string());
}

json placement_to_json(const ClusterPlacement& placement) {
  json nodes = json::object();
  for (const NodeAssignment& n : placement.nodes) {
    json devices = json::object();
    for (const DeviceExperts& d : n.devices) {
      json list = json::array();
      for (ExpertKey k : d.experts) list.push_back({k.layer, k.expert});
      devices[d.device] = std::move(list);
    }
    nodes[n.node_id] = {{"expert_endpoint", n.expert_endpoint}, {"devices", std::move(devices)}};
  }
  return {{"version", placement.version}, {"nodes", std::move(nodes)}};
}

ClusterPlacement placement_from_proto(const proto::PlacementPrepare& prepare) {
  ClusterPlacement placement;
  placement.version = prepare.version;
  for (const proto::NodePlacement& n : prepare.nodes) {
    NodeAssignment a{n.node_id, n.expert_endpoint, {}};
    for (const proto::DevicePlacement& d : n.devices) {
      DeviceExperts device{d.device, {}};
      for (const proto::ExpertRef& r : d.experts) device.experts.push_back({r.layer, r.expert});
      a.devices.push_back(std::move(device));
    }
    placement.nodes.push_back(std::move(a));
  }
  std::sort(placement.nodes.begin(), placement.nodes.end(),
            [](const NodeAssignment& a, const NodeAssignment& b) { return a.node_id < b.node_id; });
  return placement;
}

proto::PlacementPrepare placement_to_proto(const ClusterPlacement& placement) {
  proto::PlacementPrepare prepare;
  prepare.version = placement.version;
  for (const NodeAssignment& n : placement.nodes) {
    proto::NodePlacement np{n.node_id, n.expert_endpoint, {}};
    for (const DeviceExperts& d : n.devices) {
      proto::DevicePlacement dp{d.device, {}};
      for (ExpertKey k : d.experts) {
        dp.experts.push_back({static_cast<uint16_t>(k.layer), static_cast<uint16_t>(k.expert)});
      }
      np.devices.push_back(std::move(dp));
    }
    prepare.nodes.push_back(std::move(np));
  }
  return prepare;
}

Status check_placement(const ClusterPlacement& placement, const ModelConfig& config,
                       std::string_view source) {
  std::set<std::string> ids;
  for (const NodeAssignment& n : placement.nodes) {
    if (n.node_id.empty()) {
      return invalid_argument(std::string(source) + ": a node has an empty id");
    }
    if (!ids.insert(n.node_id).second) {
      return invalid_argument(std::string(source) + ": node '" + n.node_id +
                              "' appears more than once");
    }
    for (const DeviceExperts& d : n.devices) {
      for (ExpertKey k : d.experts) {
        const std::string where = std::string(source) + ": node '" + n.node_id + "' device '" +
                                  d.device + "' expert [" + std::to_string(k.layer) + ", " +
                                  std::to_string(k.expert) + "]: ";
        if (k.layer < 0 || k.layer >= config.n_layers) {
          return invalid_argument(where + "layer out of range [0, " +
                                  std::to_string(config.n_layers) + ")");
        }
        if (!config.layer_is_moe[static_cast<size_t>(k.layer)]) {
          return invalid_argument(where + "layer " + std::to_string(k.layer) +
                                  " is a dense layer and has no experts");
        }
        if (k.expert < 0 || k.expert >= config.n_experts) {
          return invalid_argument(where + "expert out of range [0, " +
                                  std::to_string(config.n_experts) + ")");
        }
      }
    }
  }
  return Status::ok();
}

}  // namespace dancemoe::node
