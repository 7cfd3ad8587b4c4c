#include "common/model/local_model.h"

#include <thread>

#include "common/backend/backend_registry.h"

namespace dancemoe {

int default_thread_count() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

Result<std::unique_ptr<LocalModel>> LocalModel::open(const std::filesystem::path& model_dir,
                                                     const LocalModelOptions& options) {
  std::unique_ptr<LocalModel> m(new LocalModel());
  DMOE_ASSIGN_OR_RETURN(m->checkpoint_, Checkpoint::open(model_dir));
  const Checkpoint& ckpt = *m->checkpoint_;
  const ModelConfig& config = ckpt.config();

  std::vector<ExpertRef> keys;
  if (options.experts) {
    keys = *options.experts;
  } else {
    for (int32_t l = 0; l < config.n_layers; ++l) {
      if (!config.layer_is_moe[static_cast<size_t>(l)]) continue;
      for (int32_t e = 0; e < config.n_experts; ++e) keys.push_back({l, e});
    }
  }
  m->experts_ = std::make_unique<ExpertStore>(ckpt);
  uint64_t expert_total = 0;
  for (ExpertRef key : keys) {
    DMOE_RETURN_IF_ERROR(m->experts_->check_key(key));
    expert_total += m->experts_->expert_bytes(key);
  }
  const uint64_t dense_total = ckpt.dense_bytes();
  const uint64_t total = dense_total + expert_total;
  LoadProgress dense_progress, expert_progress;
  if (options.progress) {
    dense_progress = [&](uint64_t done, uint64_t) { options.progress(done, total); };
    expert_progress = [&](uint64_t done, uint64_t) { options.progress(dense_total + done, total); };
  }
  DMOE_ASSIGN_OR_RETURN(DenseWeights dense, DenseWeights::load(ckpt, dense_progress));
  m->dense_.emplace(std::move(dense));
  DMOE_RETURN_IF_ERROR(m->experts_->load_many(keys, expert_progress));

  const int n_threads = options.n_threads > 0 ? options.n_threads : default_thread_count();
  m->pool_ = std::make_unique<ThreadPool>(n_threads);
  DMOE_ASSIGN_OR_RETURN(backend::DeviceSelection selection,
                        backend::parse_device(options.devices.device));
  if (!options.expert_devices.empty() && options.expert_devices.size() != keys.size()) {
    return invalid_argument("expert_devices names " +
                            std::to_string(options.expert_devices.size()) + " devices for " +
                            std::to_string(keys.size()) + " experts");
  }
  if (selection.cpu) {
    m->computer_ = std::make_unique<ExpertComputer>(*m->pool_, options.precision);
    m->executor_ =
        std::make_unique<LocalMoeExecutor>(*m->experts_, *m->computer_, config.n_experts);
    m->transformer_ =
        std::make_unique<Transformer>(config, *m->dense_, *m->executor_, *m->computer_, *m->pool_);
    m->backend_description_ = m->transformer_->backend_description();
    return m;
  }
  backend::BackendLoadRequest request;
  request.config = &config;
  request.dense = &*m->dense_;
  request.experts = m->experts_.get();
  request.resident = keys;
  request.expert_devices = options.expert_devices;
  request.pool = m->pool_.get();
  request.precision = options.precision;
  request.options = options.devices;
  DMOE_ASSIGN_OR_RETURN(backend::DeviceModel device, backend::load_device_backend(request));
  m->computer_ = std::make_unique<ExpertComputer>(std::move(device.experts));
  m->executor_ = std::make_unique<LocalMoeExecutor>(*m->experts_, *m->computer_, config.n_experts);
  m->transformer_ = std::make_unique<Transformer>(config, std::move(device.forward), *m->executor_,
                                                  *m->computer_);
  m->backend_description_ = device.description;
  return m;
}

uint64_t LocalModel::resident_weight_bytes() const {
  return dense_->n_bytes() + experts_->resident_bytes();
}

}  // namespace dancemoe
