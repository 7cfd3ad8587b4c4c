#include "scheduler/daemon/scheduler_doctor.h"

#include <unistd.h>

#include <filesystem>
#include <optional>

#include "common/net/curve_keys.h"
#include "common/net/endpoint.h"
#include "common/net/port_probe.h"
#include "scheduler/daemon/model_info.h"
#include "scheduler/store/store_inspect.h"

namespace dancemoe::scheduler {
namespace {

std::optional<ModelInfo> check_model(const SchedulerConfig& c, DoctorReport& r) {
  Result<ModelInfo> model = ModelInfo::from_directory(c.model_dir);
  if (!model.is_ok()) {
    r.fail("model", "--model: " + model.status().message(),
           "point --model (model in the config) at the model's directory: config.json and the "
           "*.safetensors headers are read, no weights");
    return std::nullopt;
  }
  r.ok("model", c.model_dir + ": " + std::to_string(model->n_layers) + " layers (" +
                    std::to_string(model->moe_layers.size()) + " MoE) x " +
                    std::to_string(model->n_experts) + " experts, id " +
                    model->model_id.substr(0, 12));
  return std::move(model).value();
}

void check_database(const SchedulerConfig& c, const std::optional<ModelInfo>& model,
                    DoctorReport& r) {
  std::error_code ec;
  if (!std::filesystem::exists(c.db, ec)) {
    std::filesystem::path dir = std::filesystem::absolute(c.db, ec).parent_path();
    if (::access(dir.c_str(), W_OK) != 0) {
      r.fail("database", c.db + " does not exist and " + dir.string() + " is not writable",
             "give --db a file in a directory this user can write (the systemd unit uses "
             "/var/lib/dancemoe)");
    } else {
      r.ok("database", c.db + ": created at the first start (a new cluster)");
    }
    return;
  }
  Result<store::StoreSummary> summary = store::inspect_store(c.db);
  if (!summary.is_ok()) {
    r.fail("database", summary.status().message(), "see the message; --db names the file");
    return;
  }
  if (model && !summary->model_id.empty() && summary->model_id != model->model_id) {
    r.fail("database",
           c.db + " holds the statistics of model " + summary->model_id.substr(0, 12) +
               ", --model is " + model->model_id.substr(0, 12),
           "give this model its own --db (or point --model at the model this database served)");
    return;
  }
  if (!summary->cluster_id.empty() && summary->cluster_id != c.cluster_id) {
    r.fail("database",
           c.db + " belongs to cluster '" + summary->cluster_id + "', --cluster-id is '" +
               c.cluster_id + "'",
           "use --cluster-id " + summary->cluster_id + " or another --db");
    return;
  }
  r.ok("database",
       c.db + ": intact, schema " + std::to_string(summary->schema_version) + ", " +
           std::to_string(summary->nodes) + " node(s) known" +
           (summary->cluster_id.empty() ? "" : ", cluster '" + summary->cluster_id + "'"));
}

void check_port(const SchedulerConfig& c, DoctorReport& r) {
  Result<net::HostPort> control = net::parse_tcp_endpoint("--control", c.control, true);
  Status free = control.is_ok()
                    ? net::check_tcp_port_free("--control", control->host, control->port)
                    : control.status();
  if (free.is_ok()) {
    r.ok("port", "--control " + c.control + " can be bound");
  } else {
    r.fail("port", free.message(),
           "stop what holds the port (`ss -ltnp` names it; another dancemoe-scheduler?) or "
           "choose another --control");
  }
}

void check_keys(const SchedulerConfig& c, DoctorReport& r) {
  if (c.insecure) {
    r.warn("keys",
           "--insecure: no CurveZMQ; anyone reaching " + c.control +
               " may join, apply placements and read the cluster's state",
           "generate keys (`dancemoe keys generate`) and start with --secret-key, --nodes-keys "
           "and --operator-keys (docs/security.md)");
    return;
  }
  Result<net::CurveKeyPair> own = net::read_secret_key_file(c.secret_key);
  if (!own.is_ok()) {
    r.fail("keys", "--secret-key: " + own.status().message(),
           "`dancemoe keys generate --name scheduler` writes a key pair (mode 0600); an existing "
           "one: chmod 600 FILE");
    return;
  }
  Result<std::map<std::string, std::string>> nodes = net::read_public_key_dir(c.nodes_keys);
  if (!nodes.is_ok()) {
    r.fail("keys", "--nodes-keys: " + nodes.status().message(),
           "a directory of the admitted nodes' NAME.pub files (it may start empty: `dancemoe "
           "nodes admit` adds to it)");
    return;
  }
  Result<std::map<std::string, std::string>> operators = net::read_public_key_dir(c.operator_keys);
  if (!operators.is_ok()) {
    r.fail("keys", "--operator-keys: " + operators.status().message(),
           "a directory of the operators' NAME.pub files");
    return;
  }
  const std::string detail = "--secret-key " + c.secret_key + " (public " +
                             own->public_key.substr(0, 8) + "...), " +
                             std::to_string(nodes->size()) + " node key(s), " +
                             std::to_string(operators->size()) + " operator key(s)";
  if (operators->empty()) {
    r.warn("keys", detail,
           "put an operator's NAME.pub in " + c.operator_keys +
               ": without one nobody can admit nodes or apply placements");
  } else {
    r.ok("keys", detail);
  }
}

}  // namespace

DoctorReport check_scheduler(const SchedulerConfig& config) {
  DoctorReport report;
  const std::optional<ModelInfo> model = check_model(config, report);
  check_database(config, model, report);
  check_port(config, report);
  check_keys(config, report);
  return report;
}

}  // namespace dancemoe::scheduler
