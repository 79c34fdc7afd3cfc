// DeviceLlamaWeights: a model's weights on the GPU. Matrices are bf16, the GEMMs' input type
// (lossless for bf16 checkpoints, one rounding to nearest even for f32/f16 ones and for GGUF block
// types, which are first widened exactly to float32); the RMSNorm weights stay float32. With tied
// embeddings the output projection reads the embedding table.
#pragma once

#include <cuda_bf16.h>

#include <cstddef>
#include <vector>

#include "star/backend/cuda/device_buffer.h"
#include "star/common/status.h"
#include "star/model/llama_config.h"
#include "star/model/llama_weights.h"

namespace star::cuda {

struct DeviceLayerWeights {
  DeviceBuffer<float> attn_norm;          // [dim]
  DeviceBuffer<__nv_bfloat16> wq;         // [Hq*d, dim]
  DeviceBuffer<__nv_bfloat16> wk;         // [Hkv*d, dim]
  DeviceBuffer<__nv_bfloat16> wv;         // [Hkv*d, dim]
  DeviceBuffer<__nv_bfloat16> wo;         // [dim, Hq*d]
  DeviceBuffer<float> ffn_norm;           // [dim]
  DeviceBuffer<__nv_bfloat16> w_gate;     // [hidden, dim]
  DeviceBuffer<__nv_bfloat16> w_up;       // [hidden, dim]
  DeviceBuffer<__nv_bfloat16> w_down;     // [dim, hidden]
};

struct DeviceLlamaWeights {
  DeviceBuffer<__nv_bfloat16> embed;      // [vocab, dim]
  std::vector<DeviceLayerWeights> layers;
  DeviceBuffer<float> final_norm;         // [dim]
  DeviceBuffer<__nv_bfloat16> lm_head;    // [vocab, dim]; empty with tied embeddings

  const __nv_bfloat16* output_projection() const {
    return lm_head.size() > 0 ? lm_head.data() : embed.data();
  }
  size_t bytes() const;
};

// Copies every tensor to the current device, converting matrices to bf16 in bounded host chunks.
// Each tensor's element count is checked against `config`; a mismatch is INVALID_ARGUMENT naming
// the tensor. Tied embeddings (lm_head sharing embed's storage, or config.tie_word_embeddings) are
// uploaded once.
Result<DeviceLlamaWeights> upload_weights(const LlamaConfig& config, const LlamaWeights& weights);

}  // namespace star::cuda
