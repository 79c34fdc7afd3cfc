// `star-bench model --backend cuda`: DeviceLlamaModel prefill and decode on the current GPU, and
// each kernel's time against the two rooflines measured on the same GPU: the bf16 tensor-core GEMM
// rate (cuBLASLt, the model's MLP shape) and the device-to-device copy bandwidth.
#pragma once

#include "model_command.h"
#include "star/model/llama_model.h"

namespace star {

// Exit code 0, or 1 with the reason on stderr (also when star-bench was built without CUDA).
int run_cuda_model_command(const ModelCommandOptions& options, const LlamaModel& llama);

}  // namespace star
