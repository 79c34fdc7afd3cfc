// Rotary position embeddings on the GPU; same definition as cpu::apply_rope.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "star/common/status.h"
#include "star/model/llama_config.h"

namespace star::cuda {

// Rotates x[n_tokens, n_heads, head_dim] in place; token t is at positions[t].
// inv_freq [head_dim / 2] is cpu::RopeTable::inv_freq() copied to the device, so both backends
// rotate by the same float32 frequencies (llama3 scaling included). Frequency i
// (angle = position * inv_freq[i] in float32) rotates the pair
//   kHalf: (i, i + head_dim/2);  kAdjacent: (2i, 2i + 1)
// as (a, b) -> (a cos - b sin, b cos + a sin). Device pointers; head_dim must be even.
Status apply_rope(float* x, int64_t n_tokens, int64_t n_heads, int64_t head_dim,
                  const int32_t* positions, const float* inv_freq, RopeLayout layout,
                  cudaStream_t stream);

}  // namespace star::cuda
