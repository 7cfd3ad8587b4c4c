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

Result<DeviceModel> load_device_backend(const BackendLoadRequest& request) {
  DMOE_ASSIGN_OR_RETURN(DeviceSelection selection, parse_device(request.options.device));
  if (selection.cpu) {
    return invalid_argument("--device cpu needs no device backend (the CPU path is the default)");
  }
#if DMOE_HAVE_CUDA
  return cuda::load_cuda_backend(request, selection.cuda_ordinals);
#else
  return unavailable("--device " + request.options.device +
                     ": this build has no CUDA backend (configure with -DDMOE_CUDA=ON on a machine "
                     "with the CUDA toolkit installed)");
#endif
}

}  // namespace dancemoe::backend
