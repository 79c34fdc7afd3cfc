#include "star/backend/cuda_backend_loader.h"

#include <dlfcn.h>

#include <filesystem>
#include <system_error>

namespace star {
namespace {

#if STAR_HAS_CUDA_BACKEND

Status refused(const std::string& path, const std::string& why) {
  return failed_precondition("--backend cuda: cannot use the CUDA backend " + path + ": " + why);
}

Result<const CudaBackend*> load_from(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return refused(path, dlerror());
  using EntryFunction = const CudaBackendEntry* (*)();
  auto entry_function = reinterpret_cast<EntryFunction>(dlsym(handle, kCudaBackendEntrySymbol));
  if (entry_function == nullptr) {
    dlclose(handle);
    return refused(path, std::string("not a starserve CUDA backend (no ") + kCudaBackendEntrySymbol + ")");
  }
  const CudaBackendEntry* entry = entry_function();
  if (entry->interface_version != kCudaBackendInterfaceVersion) {
    const uint32_t found = entry->interface_version;
    dlclose(handle);
    return refused(path, "it has interface version " + std::to_string(found) + ", this binary needs " +
                             std::to_string(kCudaBackendInterfaceVersion) +
                             " (use the binaries and the library of one build)");
  }
  if (entry->layout_fingerprint != cuda_backend_layout_fingerprint()) {
    dlclose(handle);
    return refused(path, "it was built from other sources than this binary (type layouts differ; use the "
                         "binaries and the library of one build)");
  }
  return entry->backend;
}

Result<const CudaBackend*> load() {
  Result<std::string> path = cuda_backend_path();
  if (!path.ok()) return path.status();
  return load_from(*path);
}

#endif

}  // namespace

Result<std::string> cuda_backend_path() {
  std::error_code error;
  const std::filesystem::path binary = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) return failed_precondition("--backend cuda: cannot find this binary's folder (/proc/self/exe: " +
                                        error.message() + ")");
  return (binary.parent_path() / kCudaBackendLibrary).string();
}

Result<const CudaBackend*> load_cuda_backend() {
#if STAR_HAS_CUDA_BACKEND
  static const Result<const CudaBackend*> loaded = load();
  return loaded;
#else
  return unimplemented("--backend cuda: this build has no CUDA backend (configure with -DSTAR_WITH_CUDA=ON "
                       "where nvcc, cuBLAS and NCCL are installed)");
#endif
}

}  // namespace star
