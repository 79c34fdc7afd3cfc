// libstar_cuda_backend.so's entry point (cuda_backend_module.h): the CudaBackend over this
// folder's engine, the NCCL communicator and the GPU benchmark.
#include "star/backend/cuda_backend_module.h"

#include "star/backend/cuda/cuda_status.h"
#include "star/backend/cuda/engine_model.h"
#include "star/backend/cuda/model_benchmark.h"
#include "star/dist/nccl_communicator.h"

namespace star::cuda {
namespace {

class ModuleBackend final : public CudaBackend {
 public:
  Status device_status() const override { return cuda::device_status(); }

  Result<std::unique_ptr<EngineModel>> make_engine_model(const LlamaModel& llama) const override {
    Result<std::unique_ptr<NcclCommunicator>> nccl = NcclCommunicator::create_world();
    if (!nccl.ok()) return nccl.status();
    return cuda::make_engine_model(llama, std::move(*nccl));
  }

  int run_model_benchmark(const LlamaModel& llama, const CudaModelBenchmark& options) const override {
    return cuda::run_model_benchmark(llama, options);
  }
};

}  // namespace
}  // namespace star::cuda

extern "C" __attribute__((visibility("default"))) const star::CudaBackendEntry* star_cuda_backend_entry() {
  static const star::cuda::ModuleBackend backend;
  static const star::CudaBackendEntry entry{star::kCudaBackendInterfaceVersion,
                                            star::cuda_backend_layout_fingerprint(), &backend};
  return &entry;
}
