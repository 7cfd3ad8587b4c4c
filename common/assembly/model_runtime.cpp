#include "common/assembly/model_runtime.h"

#include <algorithm>
#include <thread>

#include "common/backend/backend_registry.h"
#include "common/backend/cpu/cpu_expert_engine.h"
#include "common/backend/cpu/cpu_forward.h"
#include "common/base/byte_size.h"
#include "kernels/interleave.h"
#include "kernels/kernels.h"
#include "kernels/quant_format.h"

namespace dancemoe {
namespace {

// An engine together with the thread pool it computes (or falls back) on:
// the engines of new_expert_computer() own their pools.
class PooledEngine final : public ExpertEngine {
 public:
  PooledEngine(std::unique_ptr<ThreadPool> pool, std::unique_ptr<ExpertEngine> engine)
      : pool_(std::move(pool)), engine_(std::move(engine)) {}
  ComputePrecision precision() const override { return engine_->precision(); }
  std::string describe() const override { return engine_->describe(); }
  bool asynchronous() const override { return engine_->asynchronous(); }
  void begin(std::span<const ExpertJob> jobs, const float* x, int64_t n_tokens, int64_t hidden,
             float* out) override {
    engine_->begin(jobs, x, n_tokens, hidden, out);
  }
  void finish() override { engine_->finish(); }

 private:
  std::unique_ptr<ThreadPool> pool_;  // declared first: destroyed after the engine
  std::unique_ptr<ExpertEngine> engine_;
};

}  // namespace

// The GPU backend's engines, when the device list has GPUs.
struct ModelRuntime::Gpus {
  backend::DeviceModel model;
  std::unique_ptr<ThreadPool> fallback_pool;  // CPU work of the GPU engines
};

int default_thread_count() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

ModelRuntime::~ModelRuntime() = default;

Result<std::unique_ptr<ModelRuntime>> ModelRuntime::open(const std::filesystem::path& model_dir,
                                                         const RuntimeOptions& options) {
  DMOE_ASSIGN_OR_RETURN(std::unique_ptr<Checkpoint> checkpoint, Checkpoint::open(model_dir));
  return open(std::move(checkpoint), options);
}

Result<std::unique_ptr<ModelRuntime>> ModelRuntime::open(std::unique_ptr<Checkpoint> checkpoint,
                                                         const RuntimeOptions& options) {
  if (!options.load_dense && options.devices.first_cuda() >= 0) {
    return invalid_argument(
        "an experts-only runtime (--role experts) computes on CPU devices only for now; drop the "
        "cuda devices from --devices " +
        options.devices.text());
  }
  std::unique_ptr<ModelRuntime> rt(new ModelRuntime());
  rt->checkpoint_ = std::move(checkpoint);
  rt->device_options_ = options.devices;
  rt->precision_ = options.precision;
  DMOE_ASSIGN_OR_RETURN(rt->devices_, resolve_runtime_devices(*rt->checkpoint_, options));
  DMOE_RETURN_IF_ERROR(rt->make_store(options));
  std::vector<ExpertRef> keys;
  std::vector<int32_t> devices;
  DMOE_RETURN_IF_ERROR(rt->choose_initial_experts(options, &keys, &devices));
  DMOE_RETURN_IF_ERROR(rt->load_weights(options, keys, devices));
  DMOE_RETURN_IF_ERROR(rt->build_compute(options, keys, devices));
  return rt;
}

int ModelRuntime::device_index(const std::string& name) const {
  for (size_t d = 0; d < devices_.size(); ++d) {
    if (devices_[d].name == name) return static_cast<int>(d);
  }
  return -1;
}

// The expert store (empty yet): it knows the experts' sizes in the format
// they will be held in.
Status ModelRuntime::make_store(const RuntimeOptions& options) {
  if (options.expert_type) {
    const ModelConfig& c = checkpoint_->config();
    const int64_t block = kernels::weight_block_values(*options.expert_type);
    if (c.hidden_size % block != 0 && c.moe_intermediate_size % block != 0) {
      return invalid_argument(
          "--expert-type " + std::string(kernels::weight_type_name(*options.expert_type)) +
          ": its blocks of " + std::to_string(block) + " values fit neither hidden_size (" +
          std::to_string(c.hidden_size) + ") nor moe_intermediate_size (" +
          std::to_string(c.moe_intermediate_size) + ") of this model");
    }
  }
  std::vector<int> numa_nodes;
  bool all_cpu = true;
  for (const RuntimeDevice& d : devices_) {
    numa_nodes.push_back(d.numa_node);
    all_cpu = all_cpu && d.kind == backend::DeviceKind::kCpu;
  }
  ExpertFormat format{options.expert_type, options.copy_mapped_weights};
  // Q4_K / Q5_K / Q6_K / Q8_0 matrices interleaved for the integer kernels
  // (kernels/interleave.h) where this CPU has that kernel: bench_quant_kernels
  // GEMV from DRAM 1.3-1.5x, 4-token GEMM 1.5-2x (Zen 4). Not with a GPU (its copies
  // are made from the rows) nor in f32 compute (which dequantizes rows, not the integer path).
  const bool may_interleave =
      options.interleave_k && all_cpu && options.precision == ComputePrecision::kBF16;
  format.interleave_k = may_interleave && kernels::cpu_kernels().interleaved_k;
  // bf16 experts too, for the AVX-512 BF16 kernel: 16 rows per lane vector,
  // no horizontal sums -- experts of 4-16 tokens (a batched decode step)
  // from DRAM 1.2-2.2x on the small preset's shapes (docs/node/README.md,
  // "Interleaved bf16 experts"). Dense bf16 matrices stay in rows: each of
  // their row chunks would transpose the tokens' activations again.
  format.interleave_bf16 = may_interleave && kernels::cpu_kernels().interleaved_bf16;
  // A GGUF file whose experts are interleaved (copied) is copied whole,
  // its pages dropped: the rest of its mapping would otherwise keep mapped
  // whole 2 MiB folios around what was copied (34 MB of the medium Q4_K_M
  // file, peak RSS 1.17x its size instead of 1.10x).
  if (format.interleaves(checkpoint_->expert_type()) && checkpoint_->is_gguf() &&
      kernels::can_interleave(checkpoint_->expert_type(), kernels::kInterleaveRows,
                              kernels::weight_block_values(kernels::WeightType::kQ4_K))) {
    format.copy_mapped = true;
  }
  store_ = std::make_unique<ExpertStore>(*checkpoint_, numa_nodes, format);
  return Status::ok();
}

// Step 3: which experts are loaded at open, and onto which device.
Status ModelRuntime::choose_initial_experts(const RuntimeOptions& options,
                                            std::vector<ExpertRef>* keys,
                                            std::vector<int32_t>* devices) const {
  const ModelConfig& config = checkpoint_->config();
  if (options.experts) {
    *keys = *options.experts;
  } else {
    for (int32_t l = 0; l < config.n_layers; ++l) {
      if (!config.layer_is_moe[static_cast<size_t>(l)]) continue;
      for (int32_t e = 0; e < config.n_experts; ++e) keys->push_back({l, e});
    }
  }
  const int32_t n_devices = static_cast<int32_t>(devices_.size());
  if (!options.expert_devices.empty()) {
    if (options.expert_devices.size() != keys->size()) {
      return invalid_argument("expert_devices names " +
                              std::to_string(options.expert_devices.size()) + " devices for " +
                              std::to_string(keys->size()) + " experts");
    }
    for (int32_t d : options.expert_devices) {
      if (d < 0 || d >= n_devices) {
        return invalid_argument("an initial expert is placed on device index " + std::to_string(d) +
                                " of " + std::to_string(n_devices));
      }
    }
    *devices = options.expert_devices;
    return Status::ok();
  }
  // Spread: GPUs first (they are faster), in list order, then the CPU
  // devices, each expert to the one with the most budget left.
  std::vector<uint64_t> left;
  for (const RuntimeDevice& d : devices_) left.push_back(d.expert_budget_bytes);
  uint64_t wanted = 0;
  for (ExpertRef key : *keys) {
    const uint64_t bytes = store_->expert_bytes(key);
    wanted += bytes;
    int32_t chosen = -1;
    for (int32_t d = 0; d < n_devices && chosen < 0; ++d) {
      if (devices_[static_cast<size_t>(d)].kind == backend::DeviceKind::kCuda &&
          left[static_cast<size_t>(d)] >= bytes) {
        chosen = d;
      }
    }
    for (int32_t d = 0; d < n_devices && chosen < 0; ++d) {
      if (devices_[static_cast<size_t>(d)].kind != backend::DeviceKind::kCpu) continue;
      if (left[static_cast<size_t>(d)] < bytes) continue;
      int32_t best = d;
      for (int32_t o = d + 1; o < n_devices; ++o) {
        if (devices_[static_cast<size_t>(o)].kind == backend::DeviceKind::kCpu &&
            left[static_cast<size_t>(o)] > left[static_cast<size_t>(best)]) {
          best = o;
        }
      }
      chosen = best;
    }
    if (chosen < 0) {
      uint64_t budget = 0;
      for (const RuntimeDevice& d : devices_) budget += d.expert_budget_bytes;
      uint64_t all = 0;
      for (ExpertRef k : *keys) all += store_->expert_bytes(k);
      return resource_exhausted("the experts to load need " + format_bytes(all) +
                                " but the expert budgets of --devices " + device_options_.text() +
                                " total " + format_bytes(budget) +
                                " (set --device-memory, or load fewer experts)");
    }
    left[static_cast<size_t>(chosen)] -= bytes;
    devices->push_back(chosen);
  }
  (void)wanted;
  return Status::ok();
}

// Step 4: weights into host memory.
Status ModelRuntime::load_weights(const RuntimeOptions& options, const std::vector<ExpertRef>& keys,
                                  const std::vector<int32_t>& devices) {
  // Weights computed in place stream from the mappings: in 2 MiB pages
  // where the kernel allows (MappedFile::prefer_huge_pages).
  const bool copy_mapped = store_->format().copy_mapped;
  if (!copy_mapped) checkpoint_->prefer_huge_pages();
  uint64_t expert_total = 0;
  for (ExpertRef key : keys) {
    DMOE_RETURN_IF_ERROR(store_->check_key(key));
    expert_total += store_->expert_bytes(key);
  }
  const uint64_t dense_total = options.load_dense ? checkpoint_->dense_bytes() : 0;
  const uint64_t total = dense_total + expert_total;
  LoadProgress dense_progress, expert_progress;
  if (options.progress) {
    dense_progress = [&](uint64_t done, uint64_t) { options.progress(done, total); };
    expert_progress = [&](uint64_t done, uint64_t) { options.progress(dense_total + done, total); };
  }
  if (options.load_dense) {
    DMOE_ASSIGN_OR_RETURN(DenseWeights dense,
                          DenseWeights::load(*checkpoint_, dense_progress, copy_mapped,
                                             store_->format().interleave_k));
    dense_.emplace(std::move(dense));
  }
  return store_->load_many(keys, devices, expert_progress);
}

// Step 5: pools, engines, forward, executor, transformer.
Status ModelRuntime::build_compute(const RuntimeOptions& options,
                                   const std::vector<ExpertRef>& keys,
                                   const std::vector<int32_t>& devices) {
  const ModelConfig& config = checkpoint_->config();
  // The forward's pool: the "cpu" device's, else every CPU device's cores,
  // else (GPUs only) the machine's cores for the CPU side of the GPU engines.
  std::vector<int> forward_cpus;
  int forward_threads = 0;
  int whole_cpu = -1;
  for (size_t d = 0; d < devices_.size(); ++d) {
    const RuntimeDevice& dev = devices_[d];
    if (dev.kind != backend::DeviceKind::kCpu) continue;
    if (dev.cpus.empty()) whole_cpu = static_cast<int>(d);
    forward_cpus.insert(forward_cpus.end(), dev.cpus.begin(), dev.cpus.end());
    forward_threads += dev.n_threads;
  }
  if (whole_cpu >= 0) {
    forward_cpus.clear();
    forward_threads = devices_[static_cast<size_t>(whole_cpu)].n_threads;
  }
  if (forward_threads == 0) {
    forward_threads =
        options.devices.n_threads > 0 ? options.devices.n_threads : default_thread_count();
  }
  std::sort(forward_cpus.begin(), forward_cpus.end());
  forward_pool_ = std::make_unique<ThreadPool>(forward_threads, forward_cpus);

  std::vector<std::unique_ptr<ExpertEngine>> engines(devices_.size());
  device_pools_.resize(devices_.size());
  for (size_t d = 0; d < devices_.size(); ++d) {
    const RuntimeDevice& dev = devices_[d];
    if (dev.kind != backend::DeviceKind::kCpu) continue;
    ThreadPool* pool = forward_pool_.get();
    if (!dev.cpus.empty()) {
      device_pools_[d] = std::make_unique<ThreadPool>(dev.n_threads, dev.cpus);
      pool = device_pools_[d].get();
    }
    engines[d] = std::make_unique<backend::CpuExpertEngine>(*pool, precision_);
  }

  description_.clear();
  if (!options.load_dense) {  // experts only: CPU engines, nothing else
    computer_ = std::make_unique<ExpertComputer>(std::move(engines));
    description_ = "experts only on " + device_options_.text();
    return Status::ok();
  }
  std::unique_ptr<ForwardEngine> forward;
  if (options.devices.first_cuda() >= 0) {
    gpus_ = std::make_unique<Gpus>();
    gpus_->fallback_pool = std::make_unique<ThreadPool>(forward_threads, forward_cpus);
    backend::BackendLoadRequest request;
    request.config = &config;
    request.dense = &*dense_;
    request.experts = store_.get();
    request.pool = gpus_->fallback_pool.get();
    request.precision = precision_;
    request.options = options.devices;
    for (const RuntimeDevice& dev : devices_) {
      if (dev.kind != backend::DeviceKind::kCuda) continue;
      const int ordinal =
          options.devices.devices[static_cast<size_t>(&dev - devices_.data())].index;
      // The budget the backend checks against is the whole process's use of
      // the GPU at load: experts plus their tables and engine workspace and,
      // on the first GPU, the dense part, KV cache and forward workspace.
      uint64_t budget = dev.expert_budget_bytes;
      budget += dev.gpu_index == 0 ? backend::gpu_dense_footprint(config, options.devices)
                                   : backend::gpu_expert_overhead(config, options.devices);
      request.gpus.push_back(
          {ordinal, budget, options.reserve_gpu_expert_budget ? dev.expert_budget_bytes : 0});
    }
    for (size_t i = 0; i < keys.size(); ++i) {
      const RuntimeDevice& dev = devices_[static_cast<size_t>(devices[i])];
      if (dev.kind != backend::DeviceKind::kCuda) continue;
      request.resident.push_back(keys[i]);
      request.expert_gpus.push_back(dev.gpu_index);
    }
    DMOE_ASSIGN_OR_RETURN(gpus_->model, backend::load_device_backend(request));
    for (size_t d = 0; d < devices_.size(); ++d) {
      const RuntimeDevice& dev = devices_[d];
      if (dev.kind != backend::DeviceKind::kCuda) continue;
      const size_t g = static_cast<size_t>(dev.gpu_index);
      engines[d] = std::move(gpus_->model.experts[g]);
      // Experts put on this GPU from now on (migrations) are copied into its slots.
      if (g < gpus_->model.residency.size()) {
        store_->set_residency(static_cast<int32_t>(d), gpus_->model.residency[g]);
      }
    }
    forward = std::move(gpus_->model.forward);
    description_ = gpus_->model.description;
  } else {
    forward = std::make_unique<backend::CpuForward>(config, *dense_, precision_, *forward_pool_,
                                                    options.kv_element);
    description_ = forward->describe();
  }
  computer_ = std::make_unique<ExpertComputer>(std::move(engines));
  if (store_->format().interleave_k || store_->format().interleave_bf16) {
    // Said in the node's log: why the file is copied at load (kernels/interleave.h).
    bool any = false;
    for (ExpertRef key : keys) {
      if (auto w = store_->get(key)) {
        any = w->gate.layout == kernels::WeightLayout::kInterleaved16;
        break;
      }
    }
    if (any) description_ += "; weights interleaved by 16 rows";
  }
  if (devices_.size() > 1 || !devices_.front().cpus.empty()) {
    description_ += "; experts on ";
    for (size_t d = 0; d < devices_.size(); ++d) {
      description_ += (d ? ", " : "") + devices_[d].label + " [" +
                      format_bytes(devices_[d].expert_budget_bytes) + " budget]";
    }
  }
  if (options.make_executor) {
    DMOE_ASSIGN_OR_RETURN(executor_, options.make_executor(*this));
  } else {
    executor_ = std::make_unique<LocalMoeExecutor>(*store_, *computer_, config.n_experts);
  }
  transformer_ = std::make_unique<Transformer>(config, std::move(forward), *executor_, precision_);
  return Status::ok();
}

Result<std::unique_ptr<ExpertComputer>> ModelRuntime::new_expert_computer(int cpu_threads) const {
  std::vector<std::unique_ptr<ExpertEngine>> engines;
  for (const RuntimeDevice& dev : devices_) {
    int n = dev.n_threads > 0 ? dev.n_threads : forward_pool_->size();
    if (cpu_threads > 0) n = std::min(n, cpu_threads);
    auto pool = std::make_unique<ThreadPool>(n, dev.cpus);
    std::unique_ptr<ExpertEngine> engine;
    if (dev.kind == backend::DeviceKind::kCpu) {
      engines.push_back(std::make_unique<backend::CpuExpertEngine>(std::move(pool), precision_));
      continue;
    }
    if (gpus_ && gpus_->model.new_expert_engine) {
      DMOE_ASSIGN_OR_RETURN(
          engine, gpus_->model.new_expert_engine(static_cast<size_t>(dev.gpu_index), *pool));
    } else {
      return internal_error("no GPU backend for " + dev.name);
    }
    engines.push_back(std::make_unique<PooledEngine>(std::move(pool), std::move(engine)));
  }
  return std::make_unique<ExpertComputer>(std::move(engines));
}

uint64_t ModelRuntime::resident_weight_bytes() const {
  return (dense_ ? dense_->n_bytes() : 0) + store_->resident_bytes();
}

}  // namespace dancemoe
