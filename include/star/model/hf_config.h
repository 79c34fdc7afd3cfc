// HF config.json (and generation_config.json) -> LlamaConfig.
//
// Accepted: model_type "llama", or "architectures" containing "LlamaForCausalLM". Required keys:
// hidden_size, intermediate_size, num_hidden_layers, num_attention_heads, vocab_size. The others
// take transformers' LlamaConfig defaults when absent: num_key_value_heads = num_attention_heads,
// head_dim = hidden_size / num_attention_heads, rms_norm_eps 1e-6, rope_theta 10000,
// max_position_embeddings 2048, tie_word_embeddings false, bos_token_id 1, eos_token_id 2
// (null: none). rope_scaling: null, rope_type "default", or rope_type (or legacy "type") "llama3"
// with factor, low_freq_factor, high_freq_factor and original_max_position_embeddings.
//
// Errors name the file and the key: kInvalidArgument (missing key, wrong type, bad value, not a
// Llama architecture), kUnimplemented (another rope_scaling type), kNotFound (no config.json).
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "star/common/status.h"
#include "star/model/dtype.h"
#include "star/model/llama_config.h"

namespace star {

// The contents of config.json; `source` names it in errors. rope_layout is kHalf (HF checkpoints).
Result<LlamaConfig> parse_hf_config(const nlohmann::json& config, const std::string& source);

// generation_config.json: its bos_token_id is used where config.json had none, and its
// eos_token_id (int or list) is added to config.eos_token_ids (generation stops on any of them).
Status apply_generation_config(const nlohmann::json& generation_config, const std::string& source,
                               LlamaConfig& config);

// config.json for transformers' LlamaForCausalLM: the inverse of parse_hf_config, with
// torch_dtype naming `dtype`. rope_layout is not written (HF checkpoints are always kHalf).
nlohmann::json hf_config_json(const LlamaConfig& config, DType dtype);

// model_dir/config.json, then model_dir/generation_config.json when present; validated.
Result<LlamaConfig> load_hf_config(const std::filesystem::path& model_dir);

}  // namespace star
