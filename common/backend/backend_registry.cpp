#include "common/backend/backend_registry.h"

#if DMOE_HAVE_CUDA
#include "common/backend/cuda/cuda_backend.h"
#endif

namespace dancemoe::backend {

std::vector<std::string> compiled_backends() {
#if DMOE_HAVE_CUDA
  return {"cpu", "cuda"};
#else
  return {"cpu"};
#endif
}

namespace {

[[maybe_unused]] Status no_cuda(const std::string& what) {
  return unavailable(what +
                     ": this build has no CUDA backend (configure with -DDMOE_CUDA=ON on a "
                     "machine with the CUDA toolkit installed)");
}

}  // namespace

Result<GpuMemory> probe_gpu(int ordinal) {
#if DMOE_HAVE_CUDA
  return cuda::probe_cuda_device(ordinal);
#else
  return no_cuda("cuda:" + std::to_string(ordinal));
#endif
}

uint64_t gpu_dense_footprint([[maybe_unused]] const ModelConfig& config,
                             [[maybe_unused]] const DeviceOptions& options) {
#if DMOE_HAVE_CUDA
  return cuda::dense_footprint(config, options);
#else
  return 0;
#endif
}

uint64_t gpu_expert_overhead([[maybe_unused]] const ModelConfig& config,
                             [[maybe_unused]] const DeviceOptions& options) {
#if DMOE_HAVE_CUDA
  return cuda::expert_overhead(config, options);
#else
  return 0;
#endif
}

Result<DeviceModel> load_device_backend(const BackendLoadRequest& request) {
  if (request.gpus.empty()) {
    return invalid_argument("--devices " + request.options.text() +
                            " has no GPU: CPU devices need no device backend");
  }
#if DMOE_HAVE_CUDA
  return cuda::load_cuda_backend(request);
#else
  return no_cuda("--devices " + request.options.text());
#endif
}

}  // namespace dancemoe::backend
