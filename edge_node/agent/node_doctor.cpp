#include "edge_node/agent/node_doctor.h"

#include <chrono>
#include <cmath>
#include <memory>
#include <optional>

#include "common/assembly/runtime_devices.h"
#include "common/base/byte_size.h"
#include "common/model/checkpoint.h"
#include "common/model/expert_manifest.h"
#include "common/net/curve_keys.h"
#include "common/net/status_request.h"
#include "common/runtime/host_processes.h"
#include "common/tokenizer/tokenizer.h"
#include "edge_node/agent/node_preflight.h"

namespace dancemoe::node {
namespace {

// Skews below this are what NTP leaves; above the second bound, report
// windows and "last report" ages across machines stop meaning anything.
constexpr double kClockWarnS = 1.0;
constexpr double kClockFailS = 30.0;

std::string short_id(const std::string& id) { return id.substr(0, 12); }

void check_model(const NodeOptions& o, DoctorReport& r, std::unique_ptr<Checkpoint>* out) {
  Result<std::unique_ptr<Checkpoint>> ckpt = Checkpoint::open(o.model_dir);
  if (!ckpt.is_ok()) {
    r.fail("model", ckpt.status().message(),
           "point --model at the model's directory (config.json and *.safetensors) or its "
           ".gguf file; "
           "`dancemoe model-info --model DIR` shows what it reads");
    return;
  }
  const Checkpoint& c = **ckpt;
  const ModelConfig& config = c.config();
  uint64_t experts = 0;
  for (int64_t l = 0; l < config.n_layers; ++l) {
    if (!config.layer_is_moe[static_cast<size_t>(l)]) continue;
    for (int64_t e = 0; e < config.n_experts; ++e) experts += c.expert_bytes(l, e);
  }
  r.ok("model", config.hf_architecture + " in " + o.model_dir + ": " +
                    std::to_string(config.n_layers) + " layers, " +
                    std::to_string(config.n_experts) + " experts (top " +
                    std::to_string(config.n_experts_per_token) + "), dense " +
                    format_bytes(c.dense_bytes()) + ", experts " + format_bytes(experts) + ", id " +
                    short_id(c.model_id()));
  if (c.is_split()) {
    int64_t on_disk = 0, total = 0;
    for (int32_t l = 0; l < config.n_layers; ++l) {
      if (!config.layer_is_moe[static_cast<size_t>(l)]) continue;
      for (int32_t e = 0; e < config.n_experts; ++e, ++total) {
        on_disk += c.has_expert_weights({l, e}) ? 1 : 0;
      }
    }
    const std::string what = "partial checkpoint: " + std::to_string(on_disk) + " of " +
                             std::to_string(total) +
                             " experts on disk, the rest fetched from peers";
    if (c.has_dense_weights()) {
      r.ok("weights", what);
    } else if (o.role == NodeRole::kExperts) {
      r.ok("weights", "header-only copy, experts only: " + what);
    } else {
      r.fail("weights", o.model_dir + " is a header-only copy: no dense weights",
             "give this node a split checkpoint (dancemoe model split) or the whole model, or "
             "start it with --role experts");
    }
  }
  // tokenizer.json beside the weights, or a GGUF's metadata.
  if (o.role == NodeRole::kExperts) {
    // experts only: no prompts, no tokenizer needed
  } else if (Result<std::unique_ptr<tokenizer::Tokenizer>> t = c.load_tokenizer(); t.is_ok()) {
    r.ok("tokenizer", c.tokenizer_source());
  } else if (t.status().code() != StatusCode::kNotFound) {
    r.fail("tokenizer", t.status().message(),
           "replace " + c.tokenizer_source() + " with the model's own tokenizer");
  } else {
    r.warn("tokenizer", "no tokenizer.json in " + o.model_dir,
           "copy the model's tokenizer.json there; until then prompts must be sent as "
           "prompt_tokens");
  }
  if (c.is_split() && c.manifest() == nullptr) {
    r.ok("manifest", "the split index's per-expert SHA-256: expert weights are verified");
  } else if (c.is_gguf()) {
    r.warn("manifest",
           "a GGUF file carries no per-expert digests: expert weights load and move "
           "between nodes unverified (docs/security.md)",
           "run the cluster from the safetensors directory with its manifest (and --expert-type "
           "for quantized experts) where expert weights must be verified");
  } else if (c.manifest() == nullptr) {
    r.warn("manifest", std::string("no ") + ExpertManifest::kFileName + " in " + o.model_dir,
           "`dancemoe model manifest --model " + o.model_dir +
               "` writes one, so that expert weights are verified when loaded and fetched");
  } else {
    r.ok("manifest", std::string(ExpertManifest::kFileName) + ": expert weights are verified");
  }
  *out = std::move(*ckpt);
}

void check_devices(const NodeOptions& o, const Checkpoint* ckpt, DoctorReport& r) {
  if (ckpt == nullptr) return;  // budgets are sized from the model
  Result<std::vector<RuntimeDevice>> devices =
      resolve_runtime_devices(*ckpt, node_device_request(o));
  if (!devices.is_ok()) {
    r.fail("devices", devices.status().message(),
           "change --devices, or give smaller budgets with --expert-memory / --device-memory "
           "DEV=BYTES");
    return;
  }
  // The first MoE layer's expert: how many experts a budget holds.
  uint64_t expert_bytes = 0;
  const ModelConfig& config = ckpt->config();
  for (int64_t l = 0; l < config.n_layers && expert_bytes == 0; ++l) {
    if (config.layer_is_moe[static_cast<size_t>(l)]) expert_bytes = ckpt->expert_bytes(l, 0);
  }
  for (const RuntimeDevice& d : *devices) {
    const uint64_t holds = expert_bytes > 0 ? d.expert_budget_bytes / expert_bytes : 0;
    std::string detail = d.label + ": expert budget " + format_bytes(d.expert_budget_bytes) +
                         " (about " + std::to_string(holds) + " experts), " +
                         format_bytes(d.available_bytes) + " free of " +
                         format_bytes(d.total_bytes);
    if (holds == 0) {
      r.warn("devices", detail + ": not one expert fits",
             "raise this device's budget (--device-memory " + d.name +
                 "=BYTES) or leave it out of --devices");
    } else {
      r.ok("devices", detail);
    }
  }
}

void check_host(const NodeOptions& o, DoctorReport& r) {
  const std::vector<int> others = processes_named("dancemoe-node");
  const Status shared = check_shared_host(o);
  if (!shared.is_ok()) {
    r.fail("host", shared.message(), "add --expert-memory BYTES (each node its share)");
  } else if (others.empty()) {
    r.ok("host", "no other dancemoe-node on this host");
  } else {
    r.ok("host", std::to_string(others.size()) +
                     " other dancemoe-node(s) on this host; this node's budget is given");
  }
}

void check_ports(const NodeOptions& o, DoctorReport& r) {
  const Status ports = check_node_ports(o);
  if (ports.is_ok()) {
    r.ok("ports", "--http " + o.http + " and --experts " + o.experts_bind + " can be bound");
  } else {
    r.fail("ports", ports.message(),
           "stop what holds the port (`ss -ltnp` names it) or choose another with --http / "
           "--experts");
  }
}

// The node's key pair when it reads, for the scheduler check.
std::optional<net::CurveOptions> check_keys(const NodeOptions& o, DoctorReport& r) {
  if (o.insecure) {
    r.warn("keys",
           "--insecure: no CurveZMQ; anyone reaching the expert port may call experts "
           "and download weights",
           "generate keys (`dancemoe keys generate`) and start with --secret-key and "
           "--scheduler-key (docs/security.md)");
    return std::nullopt;
  }
  Result<net::CurveKeyPair> own = net::read_secret_key_file(o.secret_key);
  if (!own.is_ok()) {
    r.fail("keys", "--secret-key: " + own.status().message(),
           "`dancemoe keys generate --name " + o.node_id +
               "` writes a key pair (mode 0600); an existing one: chmod 600 FILE");
    return std::nullopt;
  }
  std::string detail =
      "--secret-key " + o.secret_key + " (public " + own->public_key.substr(0, 8) + "...)";
  if (!o.scheduler.empty()) {
    Result<std::string> scheduler_key = net::read_public_key_file(o.scheduler_key);
    if (!scheduler_key.is_ok()) {
      r.fail("keys", "--scheduler-key: " + scheduler_key.status().message(),
             "copy the scheduler's public key (its NAME.pub) here and name it with "
             "--scheduler-key");
      return std::nullopt;
    }
    r.ok("keys", detail + "; scheduler key " + o.scheduler_key + " pinned");
    return net::CurveOptions{*own, *scheduler_key};
  }
  Result<std::map<std::string, std::string>> peers = net::read_public_key_dir(o.peer_keys);
  if (!peers.is_ok()) {
    r.fail("keys", "--peer-keys: " + peers.status().message(),
           "a directory of the cluster's nodes' NODE_ID.pub files");
    return std::nullopt;
  }
  r.ok("keys", detail + "; " + std::to_string(peers->size()) + " peer key(s) in " + o.peer_keys);
  return std::nullopt;
}

void check_scheduler(const NodeOptions& o, const std::optional<net::CurveOptions>& curve,
                     const Checkpoint* ckpt, std::chrono::milliseconds timeout, DoctorReport& r) {
  if (o.scheduler.empty()) {
    r.ok("scheduler", "standalone (--placement " + o.placement_file + "): no scheduler");
    return;
  }
  if (!o.insecure && !curve) {
    r.fail("scheduler", "not asked: the keys above do not read", "fix the keys first");
    return;
  }
  net::StatusRequestOptions request;
  request.endpoint = o.scheduler;
  request.curve = curve;
  request.cluster_id = o.cluster_id;
  request.sender = o.node_id;
  request.timeout = timeout;
  request.unreachable_message =
      "no answer from " + o.scheduler + " within " + std::to_string(timeout.count()) + " ms";
  const auto sent = std::chrono::system_clock::now();
  Result<nlohmann::json> status = net::request_status(request, "status");
  const auto received = std::chrono::system_clock::now();
  if (!status.is_ok()) {
    if (status.status().code() == StatusCode::kUnavailable) {
      r.fail("scheduler", status.status().message(),
             "start dancemoe-scheduler there, check --scheduler (its control endpoint, "
             "tcp://HOST:PORT)" +
                 std::string(o.insecure ? ", and that it runs with --insecure too"
                                        : ", and that it admitted this node's key (`dancemoe "
                                          "nodes admit`) and --scheduler-key is its key"));
    } else {
      r.fail("scheduler", "refused: " + status.status().message(),
             "the cluster id must be the scheduler's (--cluster-id)");
    }
    return;
  }
  const nlohmann::json& s = *status;
  const std::string model_id = s["model"].value("id", std::string());
  if (ckpt != nullptr && model_id != ckpt->model_id()) {
    r.fail("scheduler",
           o.scheduler + " serves model " + short_id(model_id) + " (" +
               s["model"].value("dir", std::string()) + "), this node's --model is " +
               short_id(ckpt->model_id()),
           "give the node the scheduler's model (the same config.json and weights)");
  } else {
    r.ok("scheduler", o.scheduler + ": cluster '" +
                          s["scheduler"].value("cluster_id", std::string()) +
                          "', same model, policy " + s["scheduler"].value("policy", std::string()));
  }
  const nlohmann::json time = s["scheduler"]["time_ms"];
  if (!time.is_number()) return;
  const double here_ms =
      std::chrono::duration<double, std::milli>((sent + (received - sent) / 2).time_since_epoch())
          .count();
  const double skew_s = (time.get<double>() - here_ms) / 1000.0;
  const double round_trip_s = std::chrono::duration<double>(received - sent).count();
  char text[160];
  std::snprintf(text, sizeof(text), "%+.3f s against the scheduler (round trip %.3f s)", skew_s,
                round_trip_s);
  const std::string fix =
      "synchronise the clocks (systemd-timesyncd or chrony on both machines): report windows "
      "and ages are compared across machines";
  if (std::fabs(skew_s) > kClockFailS) {
    r.fail("clock", text, fix);
  } else if (std::fabs(skew_s) > kClockWarnS + round_trip_s) {
    r.warn("clock", text, fix);
  } else {
    r.ok("clock", text);
  }
}

}  // namespace

DoctorReport check_node(const NodeOptions& options, std::chrono::milliseconds scheduler_timeout) {
  DoctorReport report;
  report.ok("flags",
            "node '" + options.node_id + "', " +
                (options.scheduler.empty() ? "standalone"
                                           : "attached to " + options.scheduler + " in cluster '" +
                                                 options.cluster_id + "'"));
  std::unique_ptr<Checkpoint> ckpt;
  check_model(options, report, &ckpt);
  check_devices(options, ckpt.get(), report);
  check_host(options, report);
  check_ports(options, report);
  const std::optional<net::CurveOptions> curve = check_keys(options, report);
  check_scheduler(options, curve, ckpt.get(), scheduler_timeout, report);
  return report;
}

}  // namespace dancemoe::node
