#include "scheduler/daemon/message_checks.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>

namespace dancemoe::scheduler {
namespace {

std::string num(uint64_t v) { return std::to_string(v); }

Status latency(double v, const std::string& field, const MessageLimits& limits) {
  if (!std::isfinite(v) || v < 0 || v > limits.max_latency_us) {
    return invalid_argument(field + ": expected 0 to " + std::to_string(limits.max_latency_us) +
                            " microseconds, got " + std::to_string(v));
  }
  return Status::ok();
}

Status at_most(uint64_t v, uint64_t limit, const std::string& field) {
  if (v > limit) {
    return invalid_argument(field + ": " + num(v) + " is more than the limit of " + num(limit));
  }
  return Status::ok();
}

}  // namespace

Status check_node_id(const std::string& id, const MessageLimits& limits) {
  if (id.empty() || id.size() > limits.max_node_id_chars) {
    return invalid_argument("node id must have 1 to " + std::to_string(limits.max_node_id_chars) +
                            " characters, got " + std::to_string(id.size()));
  }
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == ':' || c == '@' || c == '-';
    if (!ok) {
      return invalid_argument("node id '" + id + "' has a character outside [A-Za-z0-9._:@-]");
    }
  }
  return Status::ok();
}

Status check_register(const proto::Register& reg, const std::string& sender, const ModelInfo& model,
                      const MessageLimits& limits) {
  DMOE_RETURN_IF_ERROR(check_node_id(reg.node_id, limits).with_context("Register.node_id"));
  if (sender != reg.node_id) {
    return invalid_argument("Register.node_id '" + reg.node_id +
                            "' differs from the envelope sender '" + sender + "'");
  }
  if (reg.devices.size() > limits.max_devices) {
    return invalid_argument("Register.devices: " + num(reg.devices.size()) + " devices, at most " +
                            num(limits.max_devices) + " allowed");
  }
  std::set<std::string> names;
  for (size_t g = 0; g < reg.devices.size(); ++g) {
    const proto::DeviceInfo& d = reg.devices[g];
    const std::string where = "Register.devices[" + std::to_string(g) + "]";
    if (d.name.empty()) return invalid_argument(where + ".name: expected a device name");
    if (!d.kind.empty() && d.kind != "cpu" && d.kind != "cuda") {
      return invalid_argument(where + ".kind: expected cpu or cuda, got '" + d.kind + "'");
    }
    if (!names.insert(d.name).second) {
      return invalid_argument(where + ".name: device '" + d.name + "' is listed twice");
    }
    DMOE_RETURN_IF_ERROR(at_most(d.expert_budget_bytes, limits.max_device_budget_bytes,
                                 where + ".expert_budget_bytes"));
    if (!std::isfinite(d.load_bytes_per_s) || d.load_bytes_per_s < 0 ||
        d.load_bytes_per_s > limits.max_load_bytes_per_s) {
      return invalid_argument(where + ".load_bytes_per_s: expected 0 to " +
                              std::to_string(limits.max_load_bytes_per_s) + ", got " +
                              std::to_string(d.load_bytes_per_s));
    }
  }
  if (!reg.expert_layer_bytes.empty() && reg.expert_layer_bytes.size() != model.moe_layers.size()) {
    return invalid_argument("Register.expert_layer_bytes has " +
                            num(reg.expert_layer_bytes.size()) + " entries for the model's " +
                            num(model.moe_layers.size()) + " MoE layers");
  }
  for (uint64_t bytes : reg.expert_layer_bytes) {
    DMOE_RETURN_IF_ERROR(
        at_most(bytes, limits.max_device_budget_bytes, "Register.expert_layer_bytes"));
    if (bytes == 0) return invalid_argument("Register.expert_layer_bytes: an expert of 0 bytes");
  }
  if (reg.expert_type.size() > 16) {
    return invalid_argument("Register.expert_type: at most 16 characters");
  }
  if (!reg.resident_devices.empty() && reg.resident_devices.size() != reg.resident.size()) {
    return invalid_argument("Register.resident_devices has " + num(reg.resident_devices.size()) +
                            " entries for " + num(reg.resident.size()) + " resident experts");
  }
  for (size_t i = 0; i < reg.resident.size(); ++i) {
    const ExpertRef& r = reg.resident[i];
    if (model.flat(r.layer, r.expert) < 0) {
      return invalid_argument("Register.resident[" + std::to_string(i) + "]: layer " +
                              num(r.layer) + " expert " + num(r.expert) +
                              " is not an expert of the model");
    }
    if (!reg.resident_devices.empty() && reg.resident_devices[i] >= reg.devices.size()) {
      return invalid_argument("Register.resident_devices[" + std::to_string(i) + "]: device " +
                              num(reg.resident_devices[i]) + " of " + num(reg.devices.size()));
    }
  }
  for (size_t i = 0; i < reg.expert_files.size(); ++i) {
    const ExpertRef& r = reg.expert_files[i];
    if (model.flat(r.layer, r.expert) < 0) {
      return invalid_argument("Register.expert_files[" + std::to_string(i) + "]: layer " +
                              num(r.layer) + " expert " + num(r.expert) +
                              " is not an expert of the model");
    }
  }
  return Status::ok();
}

namespace {

// Co-activation pairs: experts a < b of one MoE layer, each pair once, at
// most max_pairs_per_layer per layer, a count no larger than either expert's
// count in the same report (a token that picked both counted both).
Status check_pairs(const proto::ActivationReport& report, const ModelInfo& model,
                   const MessageLimits& limits, const std::vector<uint32_t>& count_of,
                   store::ReportRecord* r) {
  const std::string what = "ActivationReport.pairs";
  std::vector<uint64_t> per_layer(model.n_layers, 0);
  for (const proto::ExpertPair& p : report.pairs) {
    const std::string pair = "layer " + num(p.layer) + " experts " + num(p.a) + " and " + num(p.b);
    const int32_t xa = model.flat(p.layer, p.a);
    const int32_t xb = model.flat(p.layer, p.b);
    if (xa < 0 || xb < 0 || p.a >= p.b) {
      return invalid_argument(
          what + ": " + pair + ": expected two experts a < b of one MoE layer (model: " +
          num(model.n_layers) + " layers, " + num(model.n_experts) + " experts per MoE layer)");
    }
    if (p.count > std::min(count_of[xa], count_of[xb])) {
      return invalid_argument(what + ": " + pair + " routed together " + num(p.count) +
                              " times, more often than one of them was routed (" +
                              num(std::min(count_of[xa], count_of[xb])) + ")");
    }
    if (++per_layer[p.layer] > limits.max_pairs_per_layer) {
      return invalid_argument(what + ": more than " + num(limits.max_pairs_per_layer) +
                              " pairs in layer " + num(p.layer));
    }
    if (p.count > 0) {
      r->pairs.push_back({static_cast<uint16_t>(p.layer), static_cast<uint16_t>(p.a),
                          static_cast<uint16_t>(p.b), p.count});
    }
  }
  std::sort(r->pairs.begin(), r->pairs.end(), [](const auto& x, const auto& y) {
    return std::tie(x.layer, x.a, x.b) < std::tie(y.layer, y.a, y.b);
  });
  for (size_t i = 1; i < r->pairs.size(); ++i) {
    const store::PairEntry& p = r->pairs[i];
    const store::PairEntry& q = r->pairs[i - 1];
    if (p.layer == q.layer && p.a == q.a && p.b == q.b) {
      return invalid_argument(what + ": layer " + num(p.layer) + " experts " + num(p.a) + " and " +
                              num(p.b) + " are listed twice");
    }
  }
  return Status::ok();
}

}  // namespace

Result<store::ReportRecord> check_report(const proto::ActivationReport& report,
                                         const std::string& node_id, uint64_t sequence,
                                         int64_t received_ms, const ModelInfo& model,
                                         const MessageLimits& limits) {
  const std::string what = "ActivationReport";
  if (report.window_start_ms > static_cast<uint64_t>(INT64_MAX) ||
      report.window_end_ms > static_cast<uint64_t>(INT64_MAX)) {
    return invalid_argument(what + ": window time out of range");
  }
  const uint64_t window_ms = report.window_end_ms - report.window_start_ms;  // codec: end >= start
  if (window_ms > static_cast<uint64_t>(limits.max_window_ms)) {
    return invalid_argument(what + ": window of " + num(window_ms) + " ms is longer than " +
                            num(static_cast<uint64_t>(limits.max_window_ms)) + " ms");
  }
  DMOE_RETURN_IF_ERROR(at_most(report.tokens, limits.max_tokens, what + ".tokens"));
  DMOE_RETURN_IF_ERROR(at_most(report.requests, limits.max_requests, what + ".requests"));
  DMOE_RETURN_IF_ERROR(at_most(report.local_calls, limits.max_calls, what + ".local_calls"));
  DMOE_RETURN_IF_ERROR(
      latency(report.local_mean_latency_us, what + ".local_mean_latency_us", limits));
  DMOE_RETURN_IF_ERROR(
      latency(report.local_p99_latency_us, what + ".local_p99_latency_us", limits));
  const size_t max_entries = static_cast<size_t>(model.index.n_total);
  if (report.counts.size() > max_entries) {
    return invalid_argument(what + ".counts: " + num(report.counts.size()) +
                            " entries, but the model has only " + num(max_entries) + " experts");
  }

  store::ReportRecord r;
  r.node_id = node_id;
  r.sequence = sequence;
  r.window_start_ms = static_cast<int64_t>(report.window_start_ms);
  r.window_end_ms = static_cast<int64_t>(report.window_end_ms);
  r.received_ms = received_ms;
  r.tokens = report.tokens;
  r.requests = report.requests;
  r.local_hits = report.local_hits;
  r.local_calls = report.local_calls;
  r.local_mean_us = report.local_mean_latency_us;
  r.local_p99_us = report.local_p99_latency_us;
  r.placement_version = report.placement_version;

  std::vector<std::pair<int32_t, uint32_t>> flat;  // flat id, count
  flat.reserve(report.counts.size());
  std::vector<uint64_t> per_layer(model.n_layers, 0);
  for (const proto::ExpertCount& c : report.counts) {
    const int32_t x = model.flat(c.layer, c.expert);
    if (x < 0) {
      const bool dense = c.layer < model.n_layers;
      return invalid_argument(what + ".counts: layer " + num(c.layer) + " expert " + num(c.expert) +
                              (dense && model.index.layer_offset[c.layer] < 0
                                   ? " is in a dense layer (no experts)"
                                   : " is out of range (model: " + num(model.n_layers) +
                                         " layers, " + num(model.n_experts) +
                                         " experts per MoE layer)"));
    }
    if (c.count > report.tokens) {
      return invalid_argument(what + ".counts: layer " + num(c.layer) + " expert " + num(c.expert) +
                              " has count " + num(c.count) + ", more than the window's " +
                              num(report.tokens) + " tokens");
    }
    per_layer[c.layer] += c.count;
    if (c.count > 0) flat.emplace_back(x, c.count);
  }
  const uint64_t per_layer_limit = report.tokens * static_cast<uint64_t>(model.n_experts_per_token);
  for (int32_t l = 0; l < model.n_layers; ++l) {
    if (per_layer[l] > per_layer_limit) {
      return invalid_argument(what + ".counts: layer " + std::to_string(l) + " sums to " +
                              num(per_layer[l]) +
                              ", more than tokens x top-k = " + num(per_layer_limit));
    }
  }
  std::sort(flat.begin(), flat.end());
  for (size_t i = 1; i < flat.size(); ++i) {
    if (flat[i].first == flat[i - 1].first) {
      return invalid_argument(what + ".counts: " + model.describe(flat[i].first) +
                              " is listed twice");
    }
  }
  r.counts.reserve(flat.size());
  for (const auto& [x, count] : flat) {
    const ExpertRef ref = model.ref(x);
    r.counts.push_back(
        {static_cast<uint16_t>(ref.layer), static_cast<uint16_t>(ref.expert), count});
    r.activations += count;
  }
  if (r.local_hits > r.activations) {
    return invalid_argument(what + ".local_hits: " + num(r.local_hits) + " is more than the " +
                            num(r.activations) + " activations counted");
  }
  if (!report.pairs.empty()) {
    std::vector<uint32_t> count_of(static_cast<size_t>(model.index.n_total), 0);
    for (const auto& [x, count] : flat) count_of[x] = count;
    DMOE_RETURN_IF_ERROR(check_pairs(report, model, limits, count_of, &r));
  }

  if (report.remote.size() > limits.max_peers) {
    return invalid_argument(what + ".remote: " + num(report.remote.size()) + " peers, at most " +
                            num(limits.max_peers) + " allowed");
  }
  std::set<std::string> peers;
  for (size_t i = 0; i < report.remote.size(); ++i) {
    const proto::PeerCallStats& p = report.remote[i];
    const std::string where = what + ".remote[" + std::to_string(i) + "]";
    DMOE_RETURN_IF_ERROR(check_node_id(p.peer, limits).with_context(where + ".peer"));
    if (p.peer == node_id) {
      return invalid_argument(where + ".peer: a node cannot be its own remote peer");
    }
    if (!peers.insert(p.peer).second) {
      return invalid_argument(where + ".peer: '" + p.peer + "' is listed twice");
    }
    DMOE_RETURN_IF_ERROR(at_most(p.calls, limits.max_calls, where + ".calls"));
    DMOE_RETURN_IF_ERROR(at_most(p.failures, limits.max_calls, where + ".failures"));
    DMOE_RETURN_IF_ERROR(at_most(p.bytes, limits.max_bytes, where + ".bytes"));
    DMOE_RETURN_IF_ERROR(latency(p.mean_latency_us, where + ".mean_latency_us", limits));
    DMOE_RETURN_IF_ERROR(latency(p.p99_latency_us, where + ".p99_latency_us", limits));
    r.peers.push_back(p);
  }

  if (report.devices.size() > limits.max_devices) {
    return invalid_argument(what + ".devices: " + num(report.devices.size()) +
                            " devices, at most " + num(limits.max_devices) + " allowed");
  }
  std::set<std::string> devices;
  for (size_t i = 0; i < report.devices.size(); ++i) {
    const proto::DeviceCompute& d = report.devices[i];
    const std::string where = what + ".devices[" + std::to_string(i) + "]";
    if (d.device.empty()) return invalid_argument(where + ".device: expected a device name");
    if (!devices.insert(d.device).second) {
      return invalid_argument(where + ".device: '" + d.device + "' is listed twice");
    }
    DMOE_RETURN_IF_ERROR(at_most(d.pairs, limits.max_calls, where + ".pairs"));
    DMOE_RETURN_IF_ERROR(latency(d.busy_us, where + ".busy_us", limits));
    r.devices.push_back(d);
  }
  return r;
}

}  // namespace dancemoe::scheduler
