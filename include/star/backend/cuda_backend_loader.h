// Loads the CUDA backend module (cuda_backend_module.h) on first use: what --backend cuda runs on.
// Processes that never ask for it never map the CUDA libraries.
#pragma once

#include <string>

#include "star/backend/cuda_backend_module.h"
#include "star/common/status.h"

namespace star {

// Where the module is looked for: libstar_cuda_backend.so in the folder of the running binary
// (/proc/self/exe), where the build and the container image put it.
Result<std::string> cuda_backend_path();

// The module's backend, loaded once per process (thread-safe) and never unloaded. Otherwise
// UNIMPLEMENTED in a build without the CUDA backend, or FAILED_PRECONDITION naming the file and
// dlerror() when it cannot be loaded, or the mismatch when it comes from another build.
Result<const CudaBackend*> load_cuda_backend();

}  // namespace star
