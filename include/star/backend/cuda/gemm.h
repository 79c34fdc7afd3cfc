// Dense matrix products on the GPU: cuBLASLt, bf16 inputs, float32 accumulation and output.
#pragma once

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>

#include "star/backend/cuda/device_buffer.h"
#include "star/common/status.h"

namespace star::cuda {

class Gemm {
 public:
  // A cuBLASLt handle and its workspace on the current device.
  static Result<std::unique_ptr<Gemm>> create();
  ~Gemm();
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;

  // y[n, m] (float32) = x[n, k] · w[m, k]^T, or y += ... when `accumulate`.
  // x and w bf16, w in HF Linear layout [out_features = m, in_features = k]; all row-major, dense,
  // device pointers, y not overlapping x or w. The algorithm is chosen once per shape and pointer
  // alignment (cuBLASLt heuristics) and reused.
  Status matmul_nt(const __nv_bfloat16* x, int64_t n, int64_t k, const __nv_bfloat16* w, int64_t m,
                   float* y, bool accumulate, cudaStream_t stream);

 private:
  Gemm(cublasLtHandle_t handle, DeviceBuffer<unsigned char> workspace);

  // (n, k, m, alignment of x, w, y in bytes); accumulating only changes beta, not the plan.
  using ShapeKey = std::tuple<int64_t, int64_t, int64_t, int, int, int>;
  struct Plan;

  Result<const Plan*> plan_for(const ShapeKey& key);

  cublasLtHandle_t handle_ = nullptr;
  DeviceBuffer<unsigned char> workspace_;
  std::map<ShapeKey, std::unique_ptr<Plan>> plans_;
};

}  // namespace star::cuda
