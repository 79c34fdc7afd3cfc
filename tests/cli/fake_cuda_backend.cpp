// A library posing as the CUDA backend module of another build, for cuda_backend_on_demand.sh:
// FAKE_OTHER_VERSION gives the next interface version, otherwise the interface version is right
// and the layout fingerprint is not. The loader must refuse both from the entry record alone
// (the backend pointer is null: using it would crash).
#include "star/backend/cuda_backend_module.h"

extern "C" __attribute__((visibility("default"))) const star::CudaBackendEntry* star_cuda_backend_entry() {
#if FAKE_OTHER_VERSION
  static const star::CudaBackendEntry entry{star::kCudaBackendInterfaceVersion + 1,
                                            star::cuda_backend_layout_fingerprint(), nullptr};
#else
  static const star::CudaBackendEntry entry{star::kCudaBackendInterfaceVersion,
                                            star::cuda_backend_layout_fingerprint() + 1, nullptr};
#endif
  return &entry;
}
