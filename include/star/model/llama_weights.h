// LlamaWeights: every tensor of a Llama model as float32, row-major, in HF's Linear layout
// ([out_features, in_features]), whatever dtype and file they were stored in.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "star/model/llama_config.h"

namespace star {

// A float32 matrix or vector. Storage is either owned (converted from F16/BF16, or permuted) or
// borrowed from a memory-mapped file that `keep_alive` holds open.
struct WeightTensor {
  const float* data = nullptr;
  std::vector<int64_t> shape;              // e.g. {out, in}
  std::vector<float> owned;                // non-empty when this tensor owns its storage
  std::shared_ptr<const void> keep_alive;  // the mapping a borrowed tensor points into

  int64_t numel() const;
  size_t bytes() const { return static_cast<size_t>(numel()) * sizeof(float); }
};

struct LlamaLayerWeights {
  WeightTensor attn_norm;  // [dim]
  WeightTensor wq;         // [Hq*d, dim]
  WeightTensor wk;         // [Hkv*d, dim]
  WeightTensor wv;         // [Hkv*d, dim]
  WeightTensor wo;         // [dim, Hq*d]
  WeightTensor ffn_norm;   // [dim]
  WeightTensor w_gate;     // [hidden, dim]
  WeightTensor w_up;       // [hidden, dim]
  WeightTensor w_down;     // [dim, hidden]
};

struct LlamaWeights {
  WeightTensor embed;       // [vocab, dim]
  std::vector<LlamaLayerWeights> layers;
  WeightTensor final_norm;  // [dim]
  WeightTensor lm_head;     // [vocab, dim]; with tied embeddings it borrows embed's data
};

}  // namespace star
