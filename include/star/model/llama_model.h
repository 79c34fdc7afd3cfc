// LlamaModel: the Llama forward pass on the CPU backend, for any attention algorithm.
//
//   x = embed[tokens]                                   [n, dim]
//   per layer:  h = rms_norm(x) ; q,k,v = h·Wq/Wk/Wv      [n, Hq·d], [n, Hkv·d]
//               rope(q, k, positions) ; a = attention(q, k, v)   (LayerAttention)
//               x += a·Wo
//               h = rms_norm(x) ; x += (silu(h·Wg) ⊙ h·Wu)·Wd
//   logits = rms_norm(x)·lm_headᵀ for the last rows asked for   [rows, vocab]
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "star/backend/cpu/rope.h"
#include "star/common/status.h"
#include "star/model/layer_attention.h"
#include "star/model/llama_config.h"
#include "star/model/llama_weights.h"

namespace star {

// The checks every backend's forward pass makes before any work: one position per token,
// 0 <= logit_rows <= tokens, every id inside the vocabulary.
Status validate_forward_inputs(const LlamaConfig& config, std::span<const int32_t> tokens,
                               std::span<const int32_t> positions, int64_t logit_rows);

class LlamaModel {
 public:
  // Fails when the configuration cannot drive RoPE (odd head_dim, bad scaling factors).
  static Result<LlamaModel> create(LlamaConfig config, LlamaWeights weights);

  const LlamaConfig& config() const { return config_; }
  const LlamaWeights& weights() const { return weights_; }

  // Runs n = tokens.size() new tokens at explicit RoPE positions through every layer and returns
  // the logits of the last `logit_rows` tokens, [logit_rows, vocab] (empty when logit_rows == 0).
  // Activation memory is O(n · max(dim, hidden)), independent of what the tokens attend to.
  Result<std::vector<float>> forward(std::span<const int32_t> tokens, std::span<const int32_t> positions,
                                     LayerAttention& attention, int64_t logit_rows = 1) const;

 private:
  LlamaModel(LlamaConfig config, LlamaWeights weights, cpu::RopeTable rope);

  LlamaConfig config_;
  LlamaWeights weights_;
  cpu::RopeTable rope_;
};

}  // namespace star
