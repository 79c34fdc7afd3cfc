#include "star/backend/backend_selection.h"

#include <string>

#if STAR_HAS_CUDA_BACKEND
#include "star/backend/cuda/cuda_status.h"
#include "star/backend/cuda/engine_model.h"
#include "star/dist/nccl_communicator.h"
#endif

namespace star {

std::vector<std::string> backend_names() { return {"cpu", "cuda"}; }

Status check_backend(std::string_view backend) {
  if (backend == "cpu") return ok_status();
  if (backend != "cuda") return invalid_argument("--backend: '" + std::string(backend) + "' (cpu or cuda)");
#if STAR_HAS_CUDA_BACKEND
  if (cuda::device_count() == 0) {
    return failed_precondition("--backend cuda: no CUDA device visible to this process (cudaGetDeviceCount = 0)");
  }
  return ok_status();
#else
  return unimplemented("--backend cuda: this build has no CUDA backend (configure with -DSTAR_WITH_CUDA=ON "
                       "where nvcc, cuBLAS and NCCL are installed)");
#endif
}

Status select_backend(RuntimeModel& model, std::string_view backend) {
  if (Status s = check_backend(backend); !s.ok()) return s;
  if (backend == "cpu") return ok_status();
#if STAR_HAS_CUDA_BACKEND
  Result<std::unique_ptr<NcclCommunicator>> nccl = NcclCommunicator::create_world();
  if (!nccl.ok()) return nccl.status();
  Result<std::unique_ptr<EngineModel>> engine = cuda::make_engine_model(*model.llama, std::move(*nccl));
  if (!engine.ok()) return engine.status();
  model.engine = std::move(*engine);
  return ok_status();
#else
  return internal_error("unreachable: check_backend accepted cuda without a CUDA backend");
#endif
}

}  // namespace star
