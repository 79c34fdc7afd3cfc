// Synthetic Llama models with random weights, written as HF directories (what star-mkmodel does):
// config.json, generation_config.json, model.safetensors, tokenizer.json, tokenizer_config.json.
//
// Weights are deterministic for a seed: each tensor draws from its own std::mt19937_64, seeded from
// (seed, tensor name) by splitmix64, through a hand-written Box–Muller transform, so the bytes do
// not depend on the standard library's distributions. Scales keep activations near unit size
// through the layers: input-side projections N(0, 1/fan_in) (q·k scores then have unit variance,
// attention is neither flat nor one-hot); wo and w_down additionally / sqrt(2·layers) so the
// residual stream grows slowly; the embedding N(0, 1/dim), so tied logits have unit variance;
// RMSNorm weights 1 + N(0, 0.02²).
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string_view>

#include "star/common/status.h"
#include "star/model/dtype.h"
#include "star/model/llama_config.h"

namespace star {

struct SyntheticPreset {
  const char* name;
  const char* description;  // for --help
  LlamaConfig config;       // vocab_size 0: the tokenizer's size
};

// tiny, small, long.
std::span<const SyntheticPreset> synthetic_presets();
Result<LlamaConfig> synthetic_preset(std::string_view name);  // kNotFound for an unknown name

struct SyntheticModelSpec {
  // vocab_size is raised to the tokenizer's size when smaller; bos/eos come from the tokenizer
  // (<|begin_of_text|>; <|end_of_text|> and <|eot_id|>); rope_layout must be kHalf.
  LlamaConfig config;
  DType dtype = DType::kF32;
  uint64_t seed = 0;
};

// The config that write_synthetic_model writes for `spec` (vocabulary and special ids filled in).
Result<LlamaConfig> synthetic_model_config(const SyntheticModelSpec& spec);

// Creates `out_dir` if needed and writes the five files into it.
Status write_synthetic_model(const SyntheticModelSpec& spec, const std::filesystem::path& out_dir);

}  // namespace star
