// `star-bench model --backend cuda`: DeviceLlamaModel prefill and decode on the current GPU, and
// each kernel's time against two pairs of rooflines: measured on the same GPU (the bf16 cuBLASLt
// GEMM rate at the model's MLP shape, the device-to-device copy bandwidth) and the datasheet peaks
// derived from the device attributes (memory clock × bus width, SMs × clock × tensor-core rate).
#pragma once

#include "star/backend/cuda_backend_module.h"
#include "star/model/llama_model.h"

namespace star::cuda {

// Prints the report to stdout. Exit code 0, or 1 with the reason on stderr.
int run_model_benchmark(const LlamaModel& llama, const CudaModelBenchmark& options);

}  // namespace star::cuda
