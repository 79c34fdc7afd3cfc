// LlamaWeights: every tensor of a Llama model, matrices as stored (star/model/weight_tensor.h), norm
// vectors as float32.
#pragma once

#include <vector>

#include "star/model/llama_config.h"
#include "star/model/weight_tensor.h"

namespace star {

struct LlamaLayerWeights {
  WeightTensor attn_norm;  // [dim], F32
  WeightTensor wq;         // [Hq*d, dim]
  WeightTensor wk;         // [Hkv*d, dim]
  WeightTensor wv;         // [Hkv*d, dim]
  WeightTensor wo;         // [dim, Hq*d]
  WeightTensor ffn_norm;   // [dim], F32
  WeightTensor w_gate;     // [hidden, dim]
  WeightTensor w_up;       // [hidden, dim]
  WeightTensor w_down;     // [dim, hidden]
};

struct LlamaWeights {
  WeightTensor embed;       // [vocab, dim]
  std::vector<LlamaLayerWeights> layers;
  WeightTensor final_norm;  // [dim], F32
  WeightTensor lm_head;     // [vocab, dim]; with tied embeddings it borrows embed's data
};

}  // namespace star
