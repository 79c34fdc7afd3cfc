// LayerAttention: the one place where the Llama forward pass meets an attention algorithm.
// The model projects Q/K/V and applies RoPE; what the new tokens attend to (a local cache, a
// prefix plus a block, a ring of remote segments, every rank's shard) is the implementation's job.
#pragma once

#include <cstdint>

#include "star/attention/skip_softmax.h"
#include "star/common/status.h"

namespace star {

class LayerAttention {
 public:
  virtual ~LayerAttention() = default;

  // Called once per forward pass, before layer 0, with the number of new tokens.
  virtual Status begin(int64_t n_new) = 0;

  // q [n, Hq, d], k and v [n, Hkv, d] (RoPE applied) for the n new tokens of `layer`;
  // writes out [n, Hq, d], the attention output before the output projection.
  virtual Status attend(int64_t layer, const float* q, const float* k, const float* v, int64_t n,
                        float* out) = 0;

  // Skip Softmax's threshold_scale_factor S for the attend calls that follow (0: dense); the engine
  // sets the prefill S before a prompt or query and the decode S before generated tokens. Kernels
  // that implement it count their tiles in skip_softmax_tiles().
  void set_skip_softmax(double scale_factor) { skip_softmax_scale_factor_ = scale_factor; }
  SkipSoftmaxTiles skip_softmax_tiles() const { return skip_softmax_tiles_; }

 protected:
  // What an attend call passes to the kernel.
  SkipSoftmax skip_softmax() { return {skip_softmax_scale_factor_, &skip_softmax_tiles_}; }

 private:
  double skip_softmax_scale_factor_ = 0.0;
  SkipSoftmaxTiles skip_softmax_tiles_;
};

}  // namespace star
