// The tensors of one Llama layer: their HF and GGUF names and the shapes a config implies.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "star/model/llama_config.h"
#include "star/model/llama_weights.h"

namespace star {

struct LayerTensorSpec {
  const char* hf_name;    // after "model.layers.N."
  const char* gguf_name;  // after "blk.N."
  WeightTensor LlamaLayerWeights::*member;
  std::vector<int64_t> (*shape)(const LlamaConfig&);
};

inline const std::array<LayerTensorSpec, 9>& llama_layer_tensors() {
  using C = const LlamaConfig&;
  static const std::array<LayerTensorSpec, 9> kTable = {{
      {"input_layernorm.weight", "attn_norm.weight", &LlamaLayerWeights::attn_norm,
       [](C c) { return std::vector<int64_t>{c.dim}; }},
      {"self_attn.q_proj.weight", "attn_q.weight", &LlamaLayerWeights::wq,
       [](C c) { return std::vector<int64_t>{c.q_dim(), c.dim}; }},
      {"self_attn.k_proj.weight", "attn_k.weight", &LlamaLayerWeights::wk,
       [](C c) { return std::vector<int64_t>{c.kv_dim(), c.dim}; }},
      {"self_attn.v_proj.weight", "attn_v.weight", &LlamaLayerWeights::wv,
       [](C c) { return std::vector<int64_t>{c.kv_dim(), c.dim}; }},
      {"self_attn.o_proj.weight", "attn_output.weight", &LlamaLayerWeights::wo,
       [](C c) { return std::vector<int64_t>{c.dim, c.q_dim()}; }},
      {"post_attention_layernorm.weight", "ffn_norm.weight", &LlamaLayerWeights::ffn_norm,
       [](C c) { return std::vector<int64_t>{c.dim}; }},
      {"mlp.gate_proj.weight", "ffn_gate.weight", &LlamaLayerWeights::w_gate,
       [](C c) { return std::vector<int64_t>{c.hidden_dim, c.dim}; }},
      {"mlp.up_proj.weight", "ffn_up.weight", &LlamaLayerWeights::w_up,
       [](C c) { return std::vector<int64_t>{c.hidden_dim, c.dim}; }},
      {"mlp.down_proj.weight", "ffn_down.weight", &LlamaLayerWeights::w_down,
       [](C c) { return std::vector<int64_t>{c.dim, c.hidden_dim}; }},
  }};
  return kTable;
}

inline std::string hf_layer_tensor_name(int64_t layer, const LayerTensorSpec& spec) {
  return "model.layers." + std::to_string(layer) + "." + spec.hf_name;
}

inline std::string gguf_layer_tensor_name(int64_t layer, const LayerTensorSpec& spec) {
  return "blk." + std::to_string(layer) + "." + spec.gguf_name;
}

}  // namespace star
