// Rotary position embeddings (RoPE), including Llama 3.1's "llama3" frequency scaling.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "star/common/status.h"
#include "star/model/llama_config.h"

namespace star::cpu {

// The head_dim / 2 inverse frequencies of one model, computed in float32 exactly as HF transformers
// does (`_compute_default_rope_parameters`, then `_compute_llama3_parameters` for rope_type llama3),
// so rotations match HF's float32 results. cos/sin are not tabulated per position: positions reach
// 1M and more, so apply_rope evaluates them for the positions it is given.
class RopeTable {
 public:
  // Errors name the bad field: head_dim must be even and > 0, theta > 0, and for llama3 scaling
  // factor > 0, 0 < low_freq_factor < high_freq_factor, original_max_position_embeddings > 0.
  static Result<RopeTable> create(int64_t head_dim, double theta, const RopeScaling& scaling);

  int64_t head_dim() const { return head_dim_; }
  std::span<const float> inv_freq() const { return inv_freq_; }  // [head_dim / 2]

 private:
  RopeTable(int64_t head_dim, std::vector<float> inv_freq)
      : head_dim_(head_dim), inv_freq_(std::move(inv_freq)) {}

  int64_t head_dim_ = 0;
  std::vector<float> inv_freq_;
};

// Rotates x[n_tokens, n_heads, head_dim] in place; token t is at positions[t].
// Frequency i (angle = position * inv_freq[i], a float32 product as in HF) rotates the pair
//   kHalf:     (i, i + head_dim/2)  (HF checkpoints)
//   kAdjacent: (2i, 2i + 1)         (GGUF / llama2.c checkpoints)
// as (a, b) -> (a cos - b sin, b cos + a sin). head_dim must equal table.head_dim().
void apply_rope(float* x, int64_t n_tokens, int64_t n_heads, int64_t head_dim,
                const int32_t* positions, const RopeTable& table, RopeLayout layout);

}  // namespace star::cpu
