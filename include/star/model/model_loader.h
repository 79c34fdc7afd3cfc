// load_model: a Llama checkpoint (HF directory or .gguf file) -> LlamaConfig + LlamaWeights as stored.
//
// HF directory: config.json (+ generation_config.json), model.safetensors or a sharded
//   model.safetensors.index.json, tokenizer.json and tokenizer_config.json when present.
//   Tensors model.embed_tokens.weight, model.layers.N.{self_attn.{q,k,v,o}_proj,
//   mlp.{gate,up,down}_proj, input_layernorm, post_attention_layernorm}.weight, model.norm.weight,
//   lm_head.weight (with tie_word_embeddings, lm_head borrows the embedding). rope_layout kHalf.
// GGUF file (general.architecture "llama"): llama.* hyper-parameters, tokenizer.ggml.* vocabulary,
//   tensors token_embd, blk.N.{attn_q,attn_k,attn_v,attn_output,attn_norm,ffn_gate,ffn_up,ffn_down,
//   ffn_norm}, output_norm, output. Q/K rows stay as stored, in adjacent-pair order: rope_layout
//   kAdjacent. An absent `output`, or one byte-identical to token_embd, means tied embeddings.
//
// Matrices keep their stored type (F32, F16, BF16, GGUF blocks) and borrow the mapping (zero copy;
// keep_alive holds it); norm vectors that are not F32 become owned float32.
// Every tensor's shape is checked against the config. Errors name the file, the tensor or key,
// and the problem: kNotFound (missing file or tensor), kInvalidArgument (shape mismatch, missing or
// bad config key, not Llama), kDataLoss (malformed file), kUnimplemented (unsupported dtype,
// GGUF version, rope scaling).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "star/common/status.h"
#include "star/model/gguf_vocabulary.h"
#include "star/model/llama_config.h"
#include "star/model/llama_weights.h"

namespace star {

// Move-only: tensors point into storage the model owns (an owned embedding that lm_head borrows).
struct LoadedModel {
  std::filesystem::path source;
  LlamaConfig config;
  LlamaWeights weights;
  std::optional<GgufVocabulary> gguf_vocabulary;   // set for .gguf files
  std::filesystem::path tokenizer_json;            // set for HF directories (may not exist -> empty)
  nlohmann::json tokenizer_config;                 // tokenizer_config.json contents, or null

  LoadedModel() = default;
  LoadedModel(LoadedModel&&) = default;
  LoadedModel& operator=(LoadedModel&&) = default;
  LoadedModel(const LoadedModel&) = delete;
  LoadedModel& operator=(const LoadedModel&) = delete;
};

Result<LoadedModel> load_model(const std::filesystem::path& path);  // HF directory or .gguf file

}  // namespace star
