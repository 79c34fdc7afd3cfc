// DeviceLayerAttention: LayerAttention (star/model/layer_attention.h) for DeviceLlamaModel, on
// device pointers, with the work enqueued on the model's stream.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "star/common/status.h"

namespace star::cuda {

class DeviceLayerAttention {
 public:
  virtual ~DeviceLayerAttention() = default;

  // Called once per forward pass, before layer 0, with the number of new tokens.
  virtual Status begin(int64_t n_new, cudaStream_t stream) = 0;

  // q [n, Hq, d], k and v [n, Hkv, d] float32 on the device (RoPE applied) for the n new tokens of
  // `layer`; writes out [n, Hq, d] on the device, the attention output before the output projection.
  virtual Status attend(int64_t layer, const float* q, const float* k, const float* v, int64_t n,
                        float* out, cudaStream_t stream) = 0;
};

}  // namespace star::cuda
