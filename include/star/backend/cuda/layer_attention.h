// DeviceLayerAttention: LayerAttention (star/model/layer_attention.h) for DeviceLlamaModel, on
// device pointers, with the work enqueued on the model's stream.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "star/attention/skip_softmax.h"
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

  // Skip Softmax, as LayerAttention has it: S for the attend calls that follow (0: dense) and the
  // tiles counted so far (counting waits for the stream after each kernel call).
  void set_skip_softmax(double scale_factor) { skip_softmax_scale_factor_ = scale_factor; }
  SkipSoftmaxTiles skip_softmax_tiles() const { return skip_softmax_tiles_; }

 protected:
  SkipSoftmax skip_softmax() {
    return {skip_softmax_scale_factor_, skip_softmax_scale_factor_ > 0.0 ? &skip_softmax_tiles_ : nullptr};
  }

 private:
  double skip_softmax_scale_factor_ = 0.0;
  SkipSoftmaxTiles skip_softmax_tiles_;
};

}  // namespace star::cuda
