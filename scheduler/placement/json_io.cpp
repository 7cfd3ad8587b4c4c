#include "scheduler/placement/json_io.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace dancemoe::placement {
namespace {

using nlohmann::json;

std::string shown(const json& value) {
  std::string text = value.dump();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

Status expected(const std::string& path, const std::string& what, const json& got) {
  return invalid_argument(path + ": expected " + what + ", got " + shown(got));
}

Result<const json*> member(const json& object, const std::string& path, const char* key) {
  if (!object.is_object()) return expected(path, "an object", object);
  auto it = object.find(key);
  if (it == object.end()) {
    return invalid_argument((path.empty() ? std::string() : path + ".") + key +
                            ": missing required field");
  }
  return &*it;
}

Result<uint64_t> read_bytes(const json& value, const std::string& path) {
  if (value.is_number_unsigned()) return value.get<uint64_t>();
  if (value.is_number_integer() && value.get<int64_t>() >= 0) {
    return static_cast<uint64_t>(value.get<int64_t>());
  }
  if (value.is_number_float()) {
    const double d = value.get<double>();
    if (d >= 0 && d < 1.8e19 && std::floor(d) == d) return static_cast<uint64_t>(d);
  }
  return expected(path, "a non-negative whole number of bytes", value);
}

Result<double> read_number(const json& value, const std::string& path, bool positive) {
  if (!value.is_number()) return expected(path, "a number", value);
  const double d = value.get<double>();
  if (!std::isfinite(d) || d < 0 || (positive && d == 0)) {
    return expected(path, positive ? "a finite number > 0" : "a finite number >= 0", value);
  }
  return d;
}

Result<std::string> read_id(const json& value, const std::string& path) {
  if (!value.is_string() || value.get<std::string>().empty()) {
    return expected(path, "a non-empty string", value);
  }
  return value.get<std::string>();
}

Result<ModelShape> read_model(const json& root) {
  DMOE_ASSIGN_OR_RETURN(const json* model, member(root, "", "model"));
  DMOE_ASSIGN_OR_RETURN(const json* layers, member(*model, "model", "layers"));
  if (!layers->is_array() || layers->empty()) {
    return expected("model.layers", "a non-empty array of layers", *layers);
  }
  std::vector<LayerShape> shapes;
  for (size_t l = 0; l < layers->size(); ++l) {
    const std::string path = "model.layers[" + std::to_string(l) + "]";
    const json& layer = (*layers)[l];
    DMOE_ASSIGN_OR_RETURN(const json* experts, member(layer, path, "experts"));
    if (!experts->is_number_integer() || experts->get<int64_t>() <= 0 ||
        experts->get<int64_t>() > 1'000'000) {
      return expected(path + ".experts", "a whole number of experts in 1..1000000", *experts);
    }
    DMOE_ASSIGN_OR_RETURN(const json* bytes, member(layer, path, "expert_bytes"));
    DMOE_ASSIGN_OR_RETURN(uint64_t expert_bytes, read_bytes(*bytes, path + ".expert_bytes"));
    if (expert_bytes == 0) return expected(path + ".expert_bytes", "a size > 0", *bytes);
    shapes.push_back(LayerShape{static_cast<int32_t>(experts->get<int64_t>()), expert_bytes});
  }
  return ModelShape(std::move(shapes));
}

Result<Cluster> read_cluster(const json& root) {
  DMOE_ASSIGN_OR_RETURN(const json* nodes, member(root, "", "nodes"));
  if (!nodes->is_array() || nodes->empty()) {
    return expected("nodes", "a non-empty array of nodes", *nodes);
  }
  Cluster cluster;
  for (size_t n = 0; n < nodes->size(); ++n) {
    const std::string path = "nodes[" + std::to_string(n) + "]";
    const json& node_json = (*nodes)[n];
    Node node;
    DMOE_ASSIGN_OR_RETURN(const json* id, member(node_json, path, "id"));
    DMOE_ASSIGN_OR_RETURN(node.id, read_id(*id, path + ".id"));
    DMOE_ASSIGN_OR_RETURN(const json* penalty, member(node_json, path, "remote_penalty_s"));
    DMOE_ASSIGN_OR_RETURN(node.remote_penalty_s,
                          read_number(*penalty, path + ".remote_penalty_s", false));
    DMOE_ASSIGN_OR_RETURN(const json* devices, member(node_json, path, "devices"));
    if (!devices->is_array() || devices->empty()) {
      return expected(path + ".devices", "a non-empty array of devices", *devices);
    }
    for (size_t g = 0; g < devices->size(); ++g) {
      const std::string dpath = path + ".devices[" + std::to_string(g) + "]";
      const json& device_json = (*devices)[g];
      Device device;
      DMOE_ASSIGN_OR_RETURN(const json* did, member(device_json, dpath, "id"));
      DMOE_ASSIGN_OR_RETURN(device.id, read_id(*did, dpath + ".id"));
      DMOE_ASSIGN_OR_RETURN(const json* budget, member(device_json, dpath, "expert_budget_bytes"));
      DMOE_ASSIGN_OR_RETURN(device.expert_budget_bytes,
                            read_bytes(*budget, dpath + ".expert_budget_bytes"));
      DMOE_ASSIGN_OR_RETURN(const json* speed, member(device_json, dpath, "load_bytes_per_s"));
      DMOE_ASSIGN_OR_RETURN(device.load_bytes_per_s,
                            read_number(*speed, dpath + ".load_bytes_per_s", true));
      node.devices.push_back(std::move(device));
    }
    cluster.nodes.push_back(std::move(node));
  }
  return cluster;
}

Result<Activations> read_activations(const json& root, const Cluster& cluster,
                                     const ModelShape& model) {
  DMOE_ASSIGN_OR_RETURN(const json* act, member(root, "", "activations"));
  if (!act->is_object()) return expected("activations", "an object keyed by node id", *act);
  for (auto it = act->begin(); it != act->end(); ++it) {
    const bool known = std::any_of(cluster.nodes.begin(), cluster.nodes.end(),
                                   [&](const Node& node) { return node.id == it.key(); });
    if (!known) {
      return invalid_argument("activations." + it.key() + ": no node with id '" + it.key() +
                              "' in nodes");
    }
  }
  Activations out;
  for (const Node& node : cluster.nodes) {
    const std::string path = "activations." + node.id;
    auto it = act->find(node.id);
    if (it == act->end()) {
      return invalid_argument(path +
                              ": missing; every node needs its counts (zeros if it saw nothing)");
    }
    if (!it->is_array() || it->size() != static_cast<size_t>(model.n_layers())) {
      return expected(path, "an array of " + std::to_string(model.n_layers()) + " per-layer lists",
                      *it);
    }
    std::vector<double> counts;
    counts.reserve(model.n_experts_total());
    for (int32_t l = 0; l < model.n_layers(); ++l) {
      const std::string lpath = path + "[" + std::to_string(l) + "]";
      const json& layer = (*it)[l];
      if (!layer.is_array() || layer.size() != static_cast<size_t>(model.n_experts(l))) {
        return expected(lpath, "an array of " + std::to_string(model.n_experts(l)) + " counts",
                        layer);
      }
      for (size_t e = 0; e < layer.size(); ++e) {
        DMOE_ASSIGN_OR_RETURN(double c,
                              read_number(layer[e], lpath + "[" + std::to_string(e) + "]", false));
        counts.push_back(c);
      }
    }
    out.counts.push_back(std::move(counts));
  }
  return out;
}

}  // namespace

Result<Problem> problem_from_json(const json& root) {
  if (!root.is_object()) return expected("input", "a JSON object", root);
  Problem problem;
  DMOE_ASSIGN_OR_RETURN(problem.model, read_model(root));
  DMOE_ASSIGN_OR_RETURN(problem.cluster, read_cluster(root));
  DMOE_ASSIGN_OR_RETURN(problem.activations,
                        read_activations(root, problem.cluster, problem.model));
  problem.horizon_s = 300.0;
  if (auto it = root.find("horizon_s"); it != root.end()) {
    DMOE_ASSIGN_OR_RETURN(problem.horizon_s, read_number(*it, "horizon_s", true));
  }
  problem.activations.window_s = problem.horizon_s;
  if (auto it = root.find("window_s"); it != root.end()) {
    DMOE_ASSIGN_OR_RETURN(problem.activations.window_s, read_number(*it, "window_s", true));
  }
  return problem;
}

Result<Placement> placement_from_json(const json& input, const Problem& problem) {
  const json* root = &input;
  if (input.is_object() && input.contains("placement")) root = &input["placement"];
  if (!root->is_object()) return expected("placement", "an object keyed by node id", *root);
  Placement placement = empty_placement(problem.cluster);
  const ModelShape& model = problem.model;
  for (auto it = root->begin(); it != root->end(); ++it) {
    const std::string path = "placement." + it.key();
    auto node_it = std::find_if(problem.cluster.nodes.begin(), problem.cluster.nodes.end(),
                                [&](const Node& node) { return node.id == it.key(); });
    if (node_it == problem.cluster.nodes.end()) {
      return invalid_argument(path + ": no node with id '" + it.key() + "' in the input's nodes");
    }
    const size_t n = static_cast<size_t>(node_it - problem.cluster.nodes.begin());
    if (!it->is_object()) return expected(path, "an object keyed by device id", *it);
    for (auto dev = it->begin(); dev != it->end(); ++dev) {
      const std::string dpath = path + "." + dev.key();
      const auto& devices = node_it->devices;
      auto dev_it = std::find_if(devices.begin(), devices.end(),
                                 [&](const Device& d) { return d.id == dev.key(); });
      if (dev_it == devices.end()) {
        return invalid_argument(dpath + ": node '" + it.key() + "' has no device '" + dev.key() +
                                "'");
      }
      if (!dev->is_array()) return expected(dpath, "an array of [layer, expert] pairs", *dev);
      std::vector<ExpertIndex>& ids = placement.experts[n][dev_it - devices.begin()];
      for (size_t i = 0; i < dev->size(); ++i) {
        const json& pair = (*dev)[i];
        const std::string ppath = dpath + "[" + std::to_string(i) + "]";
        if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number_integer() ||
            !pair[1].is_number_integer()) {
          return expected(ppath, "a [layer, expert] pair of integers", pair);
        }
        const int64_t layer = pair[0].get<int64_t>(), expert = pair[1].get<int64_t>();
        if (layer < 0 || layer >= model.n_layers() || expert < 0 ||
            expert >= model.n_experts(static_cast<int32_t>(layer))) {
          return invalid_argument(ppath + ": no expert " + std::to_string(expert) + " in layer " +
                                  std::to_string(layer) + " of the model");
        }
        ids.push_back(
            model.expert_index(static_cast<int32_t>(layer), static_cast<int32_t>(expert)));
      }
      std::sort(ids.begin(), ids.end());
      if (std::adjacent_find(ids.begin(), ids.end()) != ids.end()) {
        return invalid_argument(dpath + ": lists an expert twice");
      }
    }
  }
  placement.method = "read from JSON";
  return placement;
}

nlohmann::ordered_json placement_to_json(const Problem& problem, const Placement& placement) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (size_t n = 0; n < problem.cluster.nodes.size(); ++n) {
    const Node& node = problem.cluster.nodes[n];
    nlohmann::ordered_json devices = nlohmann::ordered_json::object();
    for (size_t g = 0; g < node.devices.size(); ++g) {
      nlohmann::ordered_json list = nlohmann::ordered_json::array();
      if (n < placement.experts.size() && g < placement.experts[n].size()) {
        for (ExpertIndex x : placement.experts[n][g]) {
          list.push_back({problem.model.layer_of(x), problem.model.expert_in_layer(x)});
        }
      }
      devices[node.devices[g].id] = std::move(list);
    }
    out[node.id] = std::move(devices);
  }
  return out;
}

}  // namespace dancemoe::placement
