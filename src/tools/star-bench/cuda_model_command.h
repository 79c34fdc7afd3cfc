// `star-bench model --backend cuda`: the CUDA backend module's GPU benchmark
// (backend/cuda/model_benchmark.h), loaded on first use.
#pragma once

#include "model_command.h"
#include "star/model/llama_model.h"

namespace star {

// Exit code 0, or 1 with the reason on stderr (also when the CUDA backend cannot be loaded).
int run_cuda_model_command(const ModelCommandOptions& options, const LlamaModel& llama);

}  // namespace star
