#include "star/backend/backend_selection.h"

#include <string>

#include "star/backend/cuda_backend_loader.h"

namespace star {

std::vector<std::string> backend_names() { return {"cpu", "cuda"}; }

Status check_backend(std::string_view backend) {
  if (backend == "cpu") return ok_status();
  if (backend != "cuda") return invalid_argument("--backend: '" + std::string(backend) + "' (cpu or cuda)");
  Result<const CudaBackend*> cuda = load_cuda_backend();
  if (!cuda.ok()) return cuda.status();
  if (Status devices = (*cuda)->device_status(); !devices.ok()) {
    return failed_precondition("--backend cuda: " + devices.message());
  }
  return ok_status();
}

Status select_backend(RuntimeModel& model, std::string_view backend) {
  if (Status s = check_backend(backend); !s.ok()) return s;
  if (backend == "cpu") return ok_status();
  Result<std::unique_ptr<EngineModel>> engine = (*load_cuda_backend())->make_engine_model(*model.llama);
  if (!engine.ok()) return engine.status();
  model.engine = std::move(*engine);
  model.llama->release_cpu_panels();
  return ok_status();
}

}  // namespace star
