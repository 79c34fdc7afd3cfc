#include "cuda_model_command.h"

#include <cstdio>

#include "star/backend/cuda_backend_loader.h"

namespace star {

int run_cuda_model_command(const ModelCommandOptions& o, const LlamaModel& llama) {
  Result<const CudaBackend*> cuda = load_cuda_backend();
  if (!cuda.ok()) {
    std::fprintf(stderr, "%s\n", cuda.status().to_string().c_str());
    return 1;
  }
  return (*cuda)->run_model_benchmark(llama, {o.prompt_tokens, o.decode_tokens, o.repeats});
}

}  // namespace star
