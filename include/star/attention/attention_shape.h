// Head geometry shared by every LayerAttention implementation, on every backend.
#pragma once

#include <cstdint>

#include "star/model/llama_config.h"

namespace star {

struct AttentionShape {
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  static AttentionShape of(const LlamaConfig& c) { return {c.n_heads, c.n_kv_heads, c.head_dim}; }
  int64_t q_floats() const { return n_heads * head_dim; }
  int64_t kv_floats() const { return n_kv_heads * head_dim; }
};

}  // namespace star
