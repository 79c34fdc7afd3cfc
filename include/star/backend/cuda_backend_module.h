// The CUDA backend as a module of its own, libstar_cuda_backend.so next to the binaries, which
// star-run, star-server and star-bench dlopen only when --backend cuda asks for it
// (cuda_backend_loader.h). The binaries link neither libcudart, cuBLAS nor NCCL, so a CPU run
// does not map them (150–220 MiB of peak RSS, measured).
//
// The seam is one extern "C" function returning a CudaBackendEntry. The loader reads the entry's
// interface version and layout fingerprint before it touches anything else, so a library from
// another build is refused with a message instead of crashing on a changed class layout. The
// module resolves the star_core functions it calls against the binary that loads it (the binaries
// export star:: symbols), so there is one copy of the engine's code and state in the process.
#pragma once

#include <cstdint>
#include <memory>

#include "star/common/status.h"
#include "star/dist/communicator.h"
#include "star/engine/engine_model.h"
#include "star/model/llama_model.h"

namespace star {

// Bump whenever CudaBackend, CudaModelBenchmark or CudaBackendEntry change, or the virtual functions
// of a type that crosses the seam (2: Communicator's stream-ordered all-gather; 3: device_status).
inline constexpr uint32_t kCudaBackendInterfaceVersion = 3;

inline constexpr const char* kCudaBackendLibrary = "libstar_cuda_backend.so";
inline constexpr const char* kCudaBackendEntrySymbol = "star_cuda_backend_entry";

// The sizes of the types that cross the seam by reference, folded into one number: a library
// built from other sources than the binary almost always differs in one of them.
constexpr uint64_t cuda_backend_layout_fingerprint() {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the sizes
  for (uint64_t size : {sizeof(LlamaModel), sizeof(LlamaConfig), sizeof(LlamaWeights), sizeof(Status),
                        sizeof(EngineModel), sizeof(Communicator)}) {
    h = (h ^ size) * 1099511628211ull;
  }
  return h;
}

// `star-bench model --backend cuda`: what to run.
struct CudaModelBenchmark {
  int64_t prompt_tokens = 512;
  int64_t decode_tokens = 32;
  int repeats = 3;
};

// What the module offers. One instance lives in the module for the life of the process (the
// module is never unloaded).
class CudaBackend {
 public:
  virtual ~CudaBackend() = default;

  // ok when this process sees a CUDA device; otherwise why not (no driver, a forward-compatibility
  // libcuda on the library path, CUDA_VISIBLE_DEVICES, ...).
  virtual Status device_status() const = 0;

  // select_backend's "cuda": collective over MPI_COMM_WORLD (MPI initialized). Picks this rank's
  // GPU by its index among the ranks on its host, bootstraps NCCL over MPI and uploads the weights.
  virtual Result<std::unique_ptr<EngineModel>> make_engine_model(const LlamaModel& llama) const = 0;

  // Prefill, decode and per-kernel rooflines on the current GPU, printed to stdout; the exit code
  // (0, or 1 with the reason on stderr).
  virtual int run_model_benchmark(const LlamaModel& llama, const CudaModelBenchmark& options) const = 0;
};

// The plain-C record the entry point returns. interface_version stays the first field in every
// version, so any loader can read it.
struct CudaBackendEntry {
  uint32_t interface_version;
  uint64_t layout_fingerprint;
  const CudaBackend* backend;
};

}  // namespace star

extern "C" {
// Defined by libstar_cuda_backend.so; named by kCudaBackendEntrySymbol.
const star::CudaBackendEntry* star_cuda_backend_entry();
}
