// `star-bench model --backend cuda`: DeviceLlamaModel prefill and decode on the current GPU, and
// each kernel's time against two pairs of rooflines: measured on the same GPU (the bf16 cuBLASLt
// GEMM rate at the model's MLP shape, the device-to-device copy bandwidth) and the datasheet peaks
// derived from the device attributes (memory clock × bus width, SMs × clock × tensor-core rate).
#pragma once

#include "model_command.h"
#include "star/model/llama_model.h"

namespace star {

// Exit code 0, or 1 with the reason on stderr (also when star-bench was built without CUDA).
int run_cuda_model_command(const ModelCommandOptions& options, const LlamaModel& llama);

}  // namespace star
