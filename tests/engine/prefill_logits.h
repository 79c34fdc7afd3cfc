// The logits at every position of one causal prefill from position 0: what the engine tests
// compare between two loadings of the same weights.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <vector>

#include "star/attention/layer_attentions.h"
#include "star/model/llama_model.h"

namespace star::testing {

inline std::vector<float> prefill_logits(const LlamaModel& model, const std::vector<int32_t>& ids) {
  const LlamaConfig& c = model.config();
  KvCache cache(c.n_layers, c.n_kv_heads, c.head_dim);
  LocalCausalAttention attention(AttentionShape::of(c), cache);
  std::vector<int32_t> positions(ids.size());
  std::iota(positions.begin(), positions.end(), 0);
  Result<std::vector<float>> r = model.forward(ids, positions, attention, static_cast<int64_t>(ids.size()));
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? *r : std::vector<float>{};
}

}  // namespace star::testing
