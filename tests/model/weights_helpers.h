// Walking every tensor of a LlamaWeights, for tests that compare two loads.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "star/model/llama_weights.h"
#include "star/quant/dequantize.h"

namespace star::testing {

inline std::vector<std::pair<std::string, const WeightTensor*>> all_tensors(const LlamaWeights& w) {
  std::vector<std::pair<std::string, const WeightTensor*>> out = {{"embed", &w.embed}};
  for (size_t i = 0; i < w.layers.size(); ++i) {
    const LlamaLayerWeights& l = w.layers[i];
    const std::string p = "layer" + std::to_string(i) + ".";
    for (auto [name, t] : {std::pair{"attn_norm", &l.attn_norm}, {"wq", &l.wq}, {"wk", &l.wk}, {"wv", &l.wv},
                           {"wo", &l.wo}, {"ffn_norm", &l.ffn_norm}, {"w_gate", &l.w_gate}, {"w_up", &l.w_up},
                           {"w_down", &l.w_down}}) {
      out.emplace_back(p + name, t);
    }
  }
  out.emplace_back("final_norm", &w.final_norm);
  out.emplace_back("lm_head", &w.lm_head);
  return out;
}

// The tensor's elements as float32, whatever its stored type.
inline std::vector<float> values_of(const WeightTensor& t) {
  std::vector<float> values(static_cast<size_t>(t.numel()));
  quant::dequantize_rows(t.dtype, t.data, t.rows(), t.cols(), values.data());
  return values;
}

}  // namespace star::testing
