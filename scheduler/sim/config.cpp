#include "scheduler/sim/config.h"

#include <cmath>
#include <set>

#include "scheduler/placement/policy.h"

namespace dancemoe::sim {
namespace {

using nlohmann::json;

std::string shown(const json& value) {
  std::string text = value.dump();
  return text.size() > 60 ? text.substr(0, 57) + "..." : text;
}

// Reads optional fields of one JSON object, remembering the first error.
class Reader {
 public:
  Reader(const json& object, std::string path) : object_(object), path_(std::move(path)) {
    if (!object_.is_object()) fail(path_, "an object", object_);
  }

  const Status& status() const { return status_; }
  std::string at(const char* key) const { return path_.empty() ? key : path_ + "." + key; }
  const json* find(const char* key) const {
    if (!object_.is_object()) return nullptr;
    auto it = object_.find(key);
    return it == object_.end() ? nullptr : &*it;
  }
  bool has(const char* key) const { return find(key) != nullptr; }

  void number(const char* key, double* out, bool positive, bool required = false) {
    const json* v = need(key, required);
    if (v == nullptr) return;
    if (!v->is_number() || !std::isfinite(v->get<double>()) || v->get<double>() < 0 ||
        (positive && v->get<double>() == 0)) {
      fail(at(key), positive ? "a finite number > 0" : "a finite number >= 0", *v);
      return;
    }
    *out = v->get<double>();
  }
  template <typename Int>
  void integer(const char* key, Int* out, int64_t lo, int64_t hi, bool required = false) {
    const json* v = need(key, required);
    if (v == nullptr) return;
    if (!v->is_number_integer() || v->get<int64_t>() < lo || v->get<int64_t>() > hi) {
      fail(at(key), "an integer in " + std::to_string(lo) + ".." + std::to_string(hi), *v);
      return;
    }
    *out = static_cast<Int>(v->get<int64_t>());
  }
  void string(const char* key, std::string* out, bool required = false) {
    const json* v = need(key, required);
    if (v == nullptr) return;
    if (v->is_number_integer()) {
      *out = std::to_string(v->get<int64_t>());  // task "2" may be written 2
      return;
    }
    if (!v->is_string() || v->get<std::string>().empty()) {
      fail(at(key), "a non-empty string", *v);
      return;
    }
    *out = v->get<std::string>();
  }
  void boolean(const char* key, bool* out) {
    const json* v = need(key, false);
    if (v == nullptr) return;
    if (!v->is_boolean()) {
      fail(at(key), "true or false", *v);
      return;
    }
    *out = v->get<bool>();
  }
  void fail(const std::string& path, const std::string& what, const json& got) {
    if (status_.is_ok())
      status_ = invalid_argument(path + ": expected " + what + ", got " + shown(got));
  }
  void fail(Status status) {
    if (status_.is_ok()) status_ = std::move(status);
  }

 private:
  const json* need(const char* key, bool required) {
    const json* v = find(key);
    if (v == nullptr && required && status_.is_ok()) {
      status_ = invalid_argument(at(key) + ": missing required field");
    }
    return v;
  }

  const json& object_;
  std::string path_;
  Status status_;
};

Status read_model(const json& root, SimModel* model) {
  const json* m = root.is_object() && root.contains("model") ? &root["model"] : nullptr;
  if (m == nullptr) return invalid_argument("model: missing required field");
  Reader r(*m, "model");
  r.integer("layers", &model->n_layers, 1, 10000, true);
  r.integer("experts", &model->n_experts, 1, 32767, true);
  r.integer("top_k", &model->top_k, 1, 64, true);
  r.integer("expert_bytes", &model->expert_bytes, 1, int64_t{1} << 50, true);
  r.integer("hidden_bytes_per_token", &model->hidden_bytes_per_token, 1, int64_t{1} << 30);
  return r.status();
}

Status read_nodes(const json& root, const SimModel& model, std::vector<SimNode>* nodes) {
  if (!root.contains("nodes") || !root["nodes"].is_array() || root["nodes"].empty()) {
    return invalid_argument("nodes: expected a non-empty array of nodes");
  }
  const json& list = root["nodes"];
  const double model_bytes =
      static_cast<double>(model.expert_bytes) * model.n_layers * model.n_experts;
  for (size_t n = 0; n < list.size(); ++n) {
    const std::string path = "nodes[" + std::to_string(n) + "]";
    Reader r(list[n], path);
    SimNode node;
    r.string("id", &node.id, true);
    r.string("task", &node.task, true);
    r.number("arrival_rate_per_s", &node.arrival_rate_per_s, false);
    r.number("dense_s_per_layer", &node.dense_s_per_layer, false);
    DMOE_RETURN_IF_ERROR(r.status());
    const json* devices = r.find("devices");
    if (devices == nullptr || !devices->is_array() || devices->empty()) {
      return invalid_argument(path + ".devices: expected a non-empty array of devices");
    }
    for (size_t g = 0; g < devices->size(); ++g) {
      const std::string dpath = path + ".devices[" + std::to_string(g) + "]";
      Reader d((*devices)[g], dpath);
      SimDevice device;
      d.string("id", &device.id, true);
      if (d.has("memory_fraction")) {
        double fraction = 0;
        d.number("memory_fraction", &fraction, true);
        device.expert_budget_bytes = static_cast<uint64_t>(std::floor(model_bytes * fraction));
      } else {
        d.integer("expert_budget_bytes", &device.expert_budget_bytes, 0, int64_t{1} << 55, true);
      }
      d.number("load_bytes_per_s", &device.load_bytes_per_s, true);
      d.number("expert_a_s", &device.expert_a_s, false);
      d.number("expert_b_s", &device.expert_b_s, false);
      DMOE_RETURN_IF_ERROR(d.status());
      node.devices.push_back(std::move(device));
    }
    nodes->push_back(std::move(node));
  }
  return Status::ok();
}

Status read_workload(const json& root, const std::filesystem::path& base_dir, SimConfig* config) {
  if (!root.contains("workload")) return Status::ok();
  Reader r(root["workload"], "workload");
  std::string kind = "synthetic";
  r.string("kind", &kind);
  if (kind == "synthetic") {
    SyntheticWorkload& s = config->synthetic;
    r.integer("tokens_per_request", &s.tokens_per_request, 1, 100000);
    r.integer("tasks", &s.n_tasks, 1, 100000);
    r.number("zipf_min", &s.zipf_min, false);
    r.number("zipf_max", &s.zipf_max, false);
    r.number("shared_ranking", &s.shared_ranking, false);
    r.number("profile_tokens", &s.profile_tokens, false);
  } else if (kind == "trace") {
    config->trace_workload = true;
    std::string path;
    r.string("path", &path, true);
    config->trace.path =
        std::filesystem::path(path).is_absolute() ? std::filesystem::path(path) : base_dir / path;
    r.number("calibration_fraction", &config->trace.calibration_fraction, false);
  } else {
    return invalid_argument("workload.kind: expected \"synthetic\" or \"trace\", got \"" + kind +
                            "\"");
  }
  return r.status();
}

Status read_schedule(const json& root, SimConfig* config) {
  if (root.contains("shifts")) {
    const json& shifts = root["shifts"];
    if (!shifts.is_array()) return invalid_argument("shifts: expected an array");
    for (size_t i = 0; i < shifts.size(); ++i) {
      Reader r(shifts[i], "shifts[" + std::to_string(i) + "]");
      WorkloadShift shift;
      r.number("at_s", &shift.at_s, false, true);
      r.string("node", &shift.node, true);
      r.string("task", &shift.task, true);
      DMOE_RETURN_IF_ERROR(r.status());
      config->shifts.push_back(shift);
    }
  }
  if (!root.contains("placement")) return Status::ok();
  Reader r(root["placement"], "placement");
  PlacementSchedule& p = config->placement;
  if (const json* policies = r.find("policies")) {
    if (!policies->is_array() || policies->empty()) {
      return invalid_argument("placement.policies: expected a non-empty array of policy names");
    }
    p.policies.clear();
    for (const json& name : *policies) {
      if (!name.is_string()) return invalid_argument("placement.policies: names must be strings");
      p.policies.push_back(name.get<std::string>());
    }
  }
  r.number("period_s", &p.period_s, false);
  r.number("horizon_s", &p.horizon_s, false);
  r.boolean("gate", &p.gate);
  r.integer("chunk_bytes", &p.chunk_bytes, 1, int64_t{1} << 40);
  r.number("migration_link_share", &p.migration_link_share, true);
  return r.status();
}

// Every component of a synthetic task mixture is an index in 0..n_tasks-1.
bool valid_synthetic_task(const std::string& task, int32_t n_tasks) {
  for (const std::string& part : task_components(task)) {
    char* end = nullptr;
    const long index = std::strtol(part.c_str(), &end, 10);
    if (part.empty() || *end != '\0' || index < 0 || index >= n_tasks) return false;
  }
  return true;
}

}  // namespace

std::vector<std::string> task_components(const std::string& task) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t plus = task.find('+', start);
    parts.push_back(task.substr(start, plus == std::string::npos ? plus : plus - start));
    if (plus == std::string::npos) break;
    start = plus + 1;
  }
  return parts;
}

Status validate_sim_config(const SimConfig& c) {
  if (c.model.n_layers <= 0 || c.model.n_experts <= 0 || c.model.top_k <= 0 ||
      c.model.expert_bytes == 0) {
    return invalid_argument("model: layers, experts, top_k and expert_bytes must be positive");
  }
  if (c.model.top_k > c.model.n_experts) {
    return invalid_argument("model.top_k: " + std::to_string(c.model.top_k) + " exceeds the " +
                            std::to_string(c.model.n_experts) + " experts per layer");
  }
  if (!(c.duration_s > 0)) return invalid_argument("duration_s: expected a value > 0");
  if (!(c.timeline_bucket_s > 0)) return invalid_argument("timeline_bucket_s: expected > 0");
  if (!(c.link.bandwidth_bytes_per_s > 0) || c.link.rtt_s < 0) {
    return invalid_argument("link: bandwidth must be > 0 and rtt >= 0");
  }
  if (c.nodes.empty()) return invalid_argument("nodes: expected at least one node");
  std::set<std::string> ids;
  for (const SimNode& node : c.nodes) {
    if (!ids.insert(node.id).second) {
      return invalid_argument("nodes: node id '" + node.id + "' appears twice");
    }
    if (node.devices.empty()) return invalid_argument("node '" + node.id + "' has no device");
    if (!c.trace_workload && !valid_synthetic_task(node.task, c.synthetic.n_tasks)) {
      return invalid_argument(
          "node '" + node.id + "': task '" + node.task + "' is not a synthetic task index in 0.." +
          std::to_string(c.synthetic.n_tasks - 1) + " (or a mixture such as \"0+2\")");
    }
  }
  if (!c.trace_workload && (c.synthetic.zipf_min > c.synthetic.zipf_max)) {
    return invalid_argument("workload: zipf_min exceeds zipf_max");
  }
  if (c.trace_workload &&
      !(c.trace.calibration_fraction >= 0 && c.trace.calibration_fraction < 1)) {
    return invalid_argument("workload.calibration_fraction: expected a value in [0, 1)");
  }
  for (const WorkloadShift& shift : c.shifts) {
    if (!ids.count(shift.node)) {
      return invalid_argument("shifts: no node '" + shift.node + "'");
    }
    if (!c.trace_workload && !valid_synthetic_task(shift.task, c.synthetic.n_tasks)) {
      return invalid_argument("shifts: task '" + shift.task + "' is not a synthetic task index");
    }
  }
  for (const std::string& policy : c.placement.policies) {
    if (placement::find_policy(policy) == nullptr) {
      return invalid_argument("placement.policies: unknown policy '" + policy +
                              "'; known: " + placement::policy_names());
    }
  }
  if (!(c.placement.migration_link_share > 0 && c.placement.migration_link_share <= 1)) {
    return invalid_argument("placement.migration_link_share: expected a value in (0, 1]");
  }
  if (c.placement.period_s < 0 || c.placement.horizon_s < 0) {
    return invalid_argument("placement: period_s and horizon_s must be >= 0");
  }
  return Status::ok();
}

Result<SimConfig> sim_config_from_json(const nlohmann::json& root,
                                       const std::filesystem::path& base_dir) {
  if (!root.is_object()) return invalid_argument("config: expected a JSON object");
  SimConfig config;
  Reader r(root, "");
  r.string("name", &config.name);
  r.integer("seed", &config.seed, 0, 4294967295LL);
  r.number("duration_s", &config.duration_s, true);
  r.number("timeline_bucket_s", &config.timeline_bucket_s, true);
  DMOE_RETURN_IF_ERROR(r.status());
  DMOE_RETURN_IF_ERROR(read_model(root, &config.model));
  if (root.contains("link")) {
    Reader link(root["link"], "link");
    link.number("bandwidth_bytes_per_s", &config.link.bandwidth_bytes_per_s, true);
    link.number("rtt_s", &config.link.rtt_s, false);
    DMOE_RETURN_IF_ERROR(link.status());
  }
  DMOE_RETURN_IF_ERROR(read_nodes(root, config.model, &config.nodes));
  DMOE_RETURN_IF_ERROR(read_workload(root, base_dir, &config));
  DMOE_RETURN_IF_ERROR(read_schedule(root, &config));
  DMOE_RETURN_IF_ERROR(validate_sim_config(config));
  return config;
}

}  // namespace dancemoe::sim
