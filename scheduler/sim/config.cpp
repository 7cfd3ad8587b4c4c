#include "scheduler/sim/config.h"

#include <cmath>
#include <optional>
#include <set>

#include "common/base/json_field.h"
#include "scheduler/placement/policy.h"

namespace dancemoe::sim {
namespace {

using nlohmann::json;

// Errors carry no file name: dancemoe-sim prefixes the config's path.
const std::string kNoSource;

// A non-empty string member; a task index may be written as a number (2 for
// "2"). Absent or null: `fallback`, or "missing required field" without one.
Result<std::string> name(const JsonField& f, std::string_view key,
                         std::optional<std::string> fallback = std::nullopt) {
  if (!f.has(key) && fallback) return *fallback;
  DMOE_ASSIGN_OR_RETURN(JsonField value, f.member(key));
  if (value.json().is_number_integer()) return std::to_string(value.json().get<int64_t>());
  if (value.is_null()) return value.error("missing required field");
  if (!value.json().is_string() || value.json().get<std::string>().empty()) {
    return f.member_error(key, "a non-empty string");
  }
  return value.json().get<std::string>();
}

// A non-empty array member, or an error saying what its items are.
Result<JsonField> non_empty_array(const JsonField& f, std::string_view key,
                                  std::string_view items) {
  if (!f.has(key) || !f.json()[std::string(key)].is_array() || f.json()[std::string(key)].empty()) {
    return f.member_error(key, "a non-empty array of " + std::string(items));
  }
  return f.member(key);
}

Status read_model(const JsonField& root, SimModel* model) {
  DMOE_ASSIGN_OR_RETURN(JsonField m, root.member("model"));
  DMOE_RETURN_IF_ERROR(m.expect_object());
  DMOE_ASSIGN_OR_RETURN(model->n_layers, m.int_in("layers", 1, 10000));
  DMOE_ASSIGN_OR_RETURN(model->n_experts, m.int_in("experts", 1, 32767));
  DMOE_ASSIGN_OR_RETURN(model->top_k, m.int_in("top_k", 1, 64));
  DMOE_ASSIGN_OR_RETURN(model->expert_bytes, m.int_in("expert_bytes", 1, int64_t{1} << 50));
  DMOE_ASSIGN_OR_RETURN(
      model->hidden_bytes_per_token,
      m.int_in_or("hidden_bytes_per_token", 1, int64_t{1} << 30, model->hidden_bytes_per_token));
  return Status::ok();
}

Result<SimDevice> read_device(const JsonField& d, double model_bytes) {
  DMOE_RETURN_IF_ERROR(d.expect_object());
  SimDevice device;
  DMOE_ASSIGN_OR_RETURN(device.id, name(d, "id"));
  if (d.has("memory_fraction")) {
    DMOE_ASSIGN_OR_RETURN(double fraction, d.finite_positive("memory_fraction"));
    device.expert_budget_bytes = static_cast<uint64_t>(std::floor(model_bytes * fraction));
  } else {
    DMOE_ASSIGN_OR_RETURN(device.expert_budget_bytes,
                          d.int_in("expert_budget_bytes", 0, int64_t{1} << 55));
  }
  DMOE_ASSIGN_OR_RETURN(device.load_bytes_per_s,
                        d.finite_positive_or("load_bytes_per_s", device.load_bytes_per_s));
  DMOE_ASSIGN_OR_RETURN(device.expert_a_s,
                        d.finite_non_negative_or("expert_a_s", device.expert_a_s));
  DMOE_ASSIGN_OR_RETURN(device.expert_b_s,
                        d.finite_non_negative_or("expert_b_s", device.expert_b_s));
  return device;
}

Status read_nodes(const JsonField& root, const SimModel& model, std::vector<SimNode>* nodes) {
  DMOE_ASSIGN_OR_RETURN(JsonField list, non_empty_array(root, "nodes", "nodes"));
  const double model_bytes =
      static_cast<double>(model.expert_bytes) * model.n_layers * model.n_experts;
  for (size_t n = 0; n < list.json().size(); ++n) {
    const JsonField f = list.element(n);
    DMOE_RETURN_IF_ERROR(f.expect_object());
    SimNode node;
    DMOE_ASSIGN_OR_RETURN(node.id, name(f, "id"));
    DMOE_ASSIGN_OR_RETURN(node.task, name(f, "task"));
    DMOE_ASSIGN_OR_RETURN(node.arrival_rate_per_s,
                          f.finite_non_negative_or("arrival_rate_per_s", node.arrival_rate_per_s));
    DMOE_ASSIGN_OR_RETURN(node.dense_s_per_layer,
                          f.finite_non_negative_or("dense_s_per_layer", node.dense_s_per_layer));
    DMOE_ASSIGN_OR_RETURN(JsonField devices, non_empty_array(f, "devices", "devices"));
    for (size_t g = 0; g < devices.json().size(); ++g) {
      DMOE_ASSIGN_OR_RETURN(SimDevice device, read_device(devices.element(g), model_bytes));
      node.devices.push_back(std::move(device));
    }
    nodes->push_back(std::move(node));
  }
  return Status::ok();
}

Status read_workload(const JsonField& root, const std::filesystem::path& base_dir,
                     SimConfig* config) {
  DMOE_ASSIGN_OR_RETURN(std::optional<JsonField> w, root.optional_member("workload"));
  if (!w) return Status::ok();
  DMOE_RETURN_IF_ERROR(w->expect_object());
  DMOE_ASSIGN_OR_RETURN(std::string kind, name(*w, "kind", "synthetic"));
  if (kind == "synthetic") {
    SyntheticWorkload& s = config->synthetic;
    DMOE_ASSIGN_OR_RETURN(s.tokens_per_request,
                          w->int_in_or("tokens_per_request", 1, 100000, s.tokens_per_request));
    DMOE_ASSIGN_OR_RETURN(s.n_tasks, w->int_in_or("tasks", 1, 100000, s.n_tasks));
    DMOE_ASSIGN_OR_RETURN(s.zipf_min, w->finite_non_negative_or("zipf_min", s.zipf_min));
    DMOE_ASSIGN_OR_RETURN(s.zipf_max, w->finite_non_negative_or("zipf_max", s.zipf_max));
    DMOE_ASSIGN_OR_RETURN(s.shared_ranking,
                          w->finite_non_negative_or("shared_ranking", s.shared_ranking));
    DMOE_ASSIGN_OR_RETURN(s.profile_tokens,
                          w->finite_non_negative_or("profile_tokens", s.profile_tokens));
  } else if (kind == "trace") {
    config->trace_workload = true;
    DMOE_ASSIGN_OR_RETURN(std::string path, name(*w, "path"));
    config->trace.path =
        std::filesystem::path(path).is_absolute() ? std::filesystem::path(path) : base_dir / path;
    DMOE_ASSIGN_OR_RETURN(
        config->trace.calibration_fraction,
        w->finite_non_negative_or("calibration_fraction", config->trace.calibration_fraction));
  } else {
    return w->member_error("kind", "\"synthetic\" or \"trace\"");
  }
  return Status::ok();
}

Status read_shifts(const JsonField& root, SimConfig* config) {
  DMOE_ASSIGN_OR_RETURN(std::optional<JsonField> shifts, root.optional_member("shifts"));
  if (!shifts) return Status::ok();
  DMOE_RETURN_IF_ERROR(shifts->expect_array());
  for (size_t i = 0; i < shifts->json().size(); ++i) {
    const JsonField f = shifts->element(i);
    DMOE_RETURN_IF_ERROR(f.expect_object());
    WorkloadShift shift;
    DMOE_ASSIGN_OR_RETURN(shift.at_s, f.finite_non_negative("at_s"));
    DMOE_ASSIGN_OR_RETURN(shift.node, name(f, "node"));
    DMOE_ASSIGN_OR_RETURN(shift.task, name(f, "task"));
    config->shifts.push_back(shift);
  }
  return Status::ok();
}

Status read_placement(const JsonField& root, PlacementSchedule* p) {
  DMOE_ASSIGN_OR_RETURN(std::optional<JsonField> f, root.optional_member("placement"));
  if (!f) return Status::ok();
  DMOE_RETURN_IF_ERROR(f->expect_object());
  if (f->has("policies")) {
    DMOE_ASSIGN_OR_RETURN(JsonField policies, non_empty_array(*f, "policies", "policy names"));
    p->policies.clear();
    for (size_t i = 0; i < policies.json().size(); ++i) {
      DMOE_ASSIGN_OR_RETURN(std::string policy, policies.element(i).as_string());
      p->policies.push_back(std::move(policy));
    }
  }
  DMOE_ASSIGN_OR_RETURN(p->period_s, f->finite_non_negative_or("period_s", p->period_s));
  DMOE_ASSIGN_OR_RETURN(p->horizon_s, f->finite_non_negative_or("horizon_s", p->horizon_s));
  DMOE_ASSIGN_OR_RETURN(p->gate, f->bool_or("gate", p->gate));
  DMOE_ASSIGN_OR_RETURN(p->chunk_bytes, f->int_in_or("chunk_bytes", 1, int64_t{1} << 40,
                                                     static_cast<int64_t>(p->chunk_bytes)));
  DMOE_ASSIGN_OR_RETURN(p->migration_link_share,
                        f->finite_positive_or("migration_link_share", p->migration_link_share));
  DMOE_ASSIGN_OR_RETURN(p->report_interval_s,
                        f->finite_positive_or("report_interval_s", p->report_interval_s));
  DMOE_ASSIGN_OR_RETURN(const int64_t pairs,
                        f->int_in_or("coactivation_pairs", 0, 1 << 20, p->coactivation_pairs));
  p->coactivation_pairs = static_cast<int32_t>(pairs);
  return Status::ok();
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

Result<SimConfig> sim_config_from_json(const nlohmann::json& json,
                                       const std::filesystem::path& base_dir) {
  if (!json.is_object()) return invalid_argument("config: expected a JSON object");
  const JsonField root(json, kNoSource);
  SimConfig config;
  DMOE_ASSIGN_OR_RETURN(config.name, name(root, "name", config.name));
  DMOE_ASSIGN_OR_RETURN(config.seed, root.int_in_or("seed", 0, 4294967295LL, config.seed));
  DMOE_ASSIGN_OR_RETURN(config.duration_s,
                        root.finite_positive_or("duration_s", config.duration_s));
  DMOE_ASSIGN_OR_RETURN(config.timeline_bucket_s,
                        root.finite_positive_or("timeline_bucket_s", config.timeline_bucket_s));
  DMOE_RETURN_IF_ERROR(read_model(root, &config.model));
  DMOE_ASSIGN_OR_RETURN(std::optional<JsonField> link, root.optional_member("link"));
  if (link) {
    DMOE_RETURN_IF_ERROR(link->expect_object());
    DMOE_ASSIGN_OR_RETURN(
        config.link.bandwidth_bytes_per_s,
        link->finite_positive_or("bandwidth_bytes_per_s", config.link.bandwidth_bytes_per_s));
    DMOE_ASSIGN_OR_RETURN(config.link.rtt_s,
                          link->finite_non_negative_or("rtt_s", config.link.rtt_s));
    DMOE_ASSIGN_OR_RETURN(
        config.link.message_overhead_s,
        link->finite_non_negative_or("message_overhead_s", config.link.message_overhead_s));
  }
  DMOE_RETURN_IF_ERROR(read_nodes(root, config.model, &config.nodes));
  DMOE_RETURN_IF_ERROR(read_workload(root, base_dir, &config));
  DMOE_RETURN_IF_ERROR(read_shifts(root, &config));
  DMOE_RETURN_IF_ERROR(read_placement(root, &config.placement));
  DMOE_RETURN_IF_ERROR(validate_sim_config(config));
  return config;
}

}  // namespace dancemoe::sim
