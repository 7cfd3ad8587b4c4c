#include "scheduler/placement/json_io.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/base/json_field.h"

namespace dancemoe::placement {
namespace {

using nlohmann::json;

// Errors carry no file name: the CLI prefixes the input's path.
const std::string kNoSource;

// Bytes as a non-negative whole number (a float with no fraction is taken:
// some tools print sizes as 1.2e10).
Result<uint64_t> read_bytes(const JsonField& owner, std::string_view key) {
  DMOE_ASSIGN_OR_RETURN(JsonField field, owner.member(key));
  const json& value = field.json();
  if (value.is_number_unsigned()) return value.get<uint64_t>();
  if (value.is_number_integer() && value.get<int64_t>() >= 0) {
    return static_cast<uint64_t>(value.get<int64_t>());
  }
  if (value.is_number_float()) {
    const double d = value.get<double>();
    if (d >= 0 && d < 1.8e19 && std::floor(d) == d) return static_cast<uint64_t>(d);
  }
  return owner.member_error(key, "a non-negative whole number of bytes");
}

Result<std::string> read_id(const JsonField& owner) {
  DMOE_ASSIGN_OR_RETURN(std::string id, owner.required_string("id"));
  if (id.empty()) return owner.member_error("id", "a non-empty string");
  return id;
}

Result<JsonField> non_empty_array(const JsonField& owner, std::string_view key,
                                  std::string_view items) {
  DMOE_ASSIGN_OR_RETURN(JsonField field, owner.member(key));
  if (!field.json().is_array() || field.json().empty()) {
    return owner.member_error(key, "a non-empty array of " + std::string(items));
  }
  return field;
}

Result<ModelShape> read_model(const JsonField& root) {
  DMOE_ASSIGN_OR_RETURN(JsonField model, root.member("model"));
  DMOE_ASSIGN_OR_RETURN(JsonField layers, non_empty_array(model, "layers", "layers"));
  std::vector<LayerShape> shapes;
  for (size_t l = 0; l < layers.json().size(); ++l) {
    const JsonField layer = layers.element(l);
    DMOE_RETURN_IF_ERROR(layer.expect_object());
    DMOE_ASSIGN_OR_RETURN(int64_t experts, layer.int_in("experts", 1, 1'000'000));
    DMOE_ASSIGN_OR_RETURN(uint64_t expert_bytes, read_bytes(layer, "expert_bytes"));
    if (expert_bytes == 0) return layer.member_error("expert_bytes", "a size > 0");
    shapes.push_back(LayerShape{static_cast<int32_t>(experts), expert_bytes});
  }
  return ModelShape(std::move(shapes));
}

Result<Cluster> read_cluster(const JsonField& root) {
  DMOE_ASSIGN_OR_RETURN(JsonField nodes, non_empty_array(root, "nodes", "nodes"));
  Cluster cluster;
  for (size_t n = 0; n < nodes.json().size(); ++n) {
    const JsonField node_json = nodes.element(n);
    DMOE_RETURN_IF_ERROR(node_json.expect_object());
    Node node;
    DMOE_ASSIGN_OR_RETURN(node.id, read_id(node_json));
    DMOE_ASSIGN_OR_RETURN(node.remote_penalty_s, node_json.finite_non_negative("remote_penalty_s"));
    DMOE_ASSIGN_OR_RETURN(JsonField devices, non_empty_array(node_json, "devices", "devices"));
    for (size_t g = 0; g < devices.json().size(); ++g) {
      const JsonField device_json = devices.element(g);
      DMOE_RETURN_IF_ERROR(device_json.expect_object());
      Device device;
      DMOE_ASSIGN_OR_RETURN(device.id, read_id(device_json));
      DMOE_ASSIGN_OR_RETURN(device.expert_budget_bytes,
                            read_bytes(device_json, "expert_budget_bytes"));
      DMOE_ASSIGN_OR_RETURN(device.load_bytes_per_s,
                            device_json.finite_positive("load_bytes_per_s"));
      DMOE_ASSIGN_OR_RETURN(device.compute_cost,
                            device_json.finite_positive_or("compute_cost", 1.0));
      node.devices.push_back(std::move(device));
    }
    cluster.nodes.push_back(std::move(node));
  }
  return cluster;
}

Result<Activations> read_activations(const JsonField& root, const Cluster& cluster,
                                     const ModelShape& model) {
  DMOE_ASSIGN_OR_RETURN(JsonField act, root.member("activations"));
  if (!act.json().is_object())
    return root.member_error("activations", "an object keyed by node id");
  for (const auto& item : act.json().items()) {
    const std::string& id = item.key();
    const bool known = std::any_of(cluster.nodes.begin(), cluster.nodes.end(),
                                   [&](const Node& node) { return node.id == id; });
    if (!known) {
      return invalid_argument("activations." + id + ": no node with id '" + id + "' in nodes");
    }
  }
  Activations out;
  for (const Node& node : cluster.nodes) {
    const std::string path = "activations." + node.id;
    auto it = act.json().find(node.id);
    if (it == act.json().end()) {
      return invalid_argument(path +
                              ": missing; every node needs its counts (zeros if it saw nothing)");
    }
    const JsonField per_node(*it, kNoSource, path);
    if (!it->is_array() || it->size() != static_cast<size_t>(model.n_layers())) {
      return per_node.error("expected an array of " + std::to_string(model.n_layers()) +
                            " per-layer lists, got " + it->dump().substr(0, 60));
    }
    std::vector<double> counts;
    counts.reserve(model.n_experts_total());
    for (int32_t l = 0; l < model.n_layers(); ++l) {
      const JsonField layer = per_node.element(static_cast<size_t>(l));
      if (!layer.json().is_array() ||
          layer.json().size() != static_cast<size_t>(model.n_experts(l))) {
        return layer.error("expected an array of " + std::to_string(model.n_experts(l)) +
                           " counts, got " + layer.json().dump().substr(0, 60));
      }
      for (size_t e = 0; e < layer.json().size(); ++e) {
        const json& c = layer.json()[e];
        if (!c.is_number() || !std::isfinite(c.get<double>()) || c.get<double>() < 0) {
          return layer.element(e).error("expected a finite number >= 0, got " + c.dump());
        }
        counts.push_back(c.get<double>());
      }
    }
    out.counts.push_back(std::move(counts));
  }
  return out;
}

}  // namespace

Result<Problem> problem_from_json(const json& json_root) {
  const JsonField root(json_root, kNoSource);
  DMOE_RETURN_IF_ERROR(root.expect_object());
  Problem problem;
  DMOE_ASSIGN_OR_RETURN(problem.model, read_model(root));
  DMOE_ASSIGN_OR_RETURN(problem.cluster, read_cluster(root));
  DMOE_ASSIGN_OR_RETURN(problem.activations,
                        read_activations(root, problem.cluster, problem.model));
  DMOE_ASSIGN_OR_RETURN(problem.horizon_s, root.finite_positive_or("horizon_s", 300.0));
  DMOE_ASSIGN_OR_RETURN(problem.activations.window_s,
                        root.finite_positive_or("window_s", problem.horizon_s));
  return problem;
}

}  // namespace dancemoe::placement
