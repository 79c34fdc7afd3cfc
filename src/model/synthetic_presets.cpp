#include <array>

#include "star/model/synthetic_model.h"

namespace star {
namespace {

LlamaConfig make_config(int64_t dim, int64_t layers, int64_t heads, int64_t kv_heads, int64_t hidden, int64_t vocab,
                        int64_t max_positions, double rope_theta, RopeScaling scaling) {
  LlamaConfig c;
  c.dim = dim;
  c.hidden_dim = hidden;
  c.n_layers = layers;
  c.n_heads = heads;
  c.n_kv_heads = kv_heads;
  c.head_dim = dim / heads;
  c.vocab_size = vocab;
  c.max_position_embeddings = max_positions;
  c.rms_norm_eps = 1e-5;
  c.rope_theta = rope_theta;
  c.rope_scaling = scaling;
  c.rope_layout = RopeLayout::kHalf;
  c.tie_word_embeddings = true;
  return c;
}

RopeScaling llama3_scaling(double factor, int64_t original_max_positions) {
  RopeScaling s;
  s.type = RopeScaling::Type::kLlama3;
  s.factor = factor;
  s.low_freq_factor = 1.0;
  s.high_freq_factor = 4.0;
  s.original_max_position_embeddings = original_max_positions;
  return s;
}

}  // namespace

std::span<const SyntheticPreset> synthetic_presets() {
  static const std::array<SyntheticPreset, 3> kPresets = {{
      {"tiny",
       "dim 64, 2 layers, 4 heads / 2 KV heads (head_dim 16), FFN 172, vocab = tokenizer size, tied; "
       "llama3 rope scaling (factor 8, original context 512: with theta 1e4 the 16-dim head has "
       "frequencies in all three bands), 4096 positions. For unit tests.",
       make_config(64, 2, 4, 2, 172, 0, 4096, 10000.0, llama3_scaling(8.0, 512))},
      {"small",
       "~100M parameters: dim 768, 12 layers, 12 heads / 4 KV heads (head_dim 64), FFN 2048, vocab "
       "32768, tied; Llama 3.2-style rope (theta 5e5, llama3 factor 32, original 8192), 131072 "
       "positions. For benchmarks where the MLPs matter.",
       make_config(768, 12, 12, 4, 2048, 32768, 131072, 500000.0, llama3_scaling(32.0, 8192))},
      {"long",
       "attention-dominated: dim 256, 2 layers, 8 heads / 2 KV heads (head_dim 32), FFN 512, vocab = "
       "tokenizer size, tied; Llama 3.1-style rope (theta 5e5, llama3 factor 8, original 8192), 131072 "
       "positions. For long-context runs where attention, not the MLPs, dominates the cost.",
       make_config(256, 2, 8, 2, 512, 0, 131072, 500000.0, llama3_scaling(8.0, 8192))},
  }};
  return kPresets;
}

Result<LlamaConfig> synthetic_preset(std::string_view name) {
  for (const SyntheticPreset& p : synthetic_presets()) {
    if (name == p.name) return p.config;
  }
  return not_found("unknown preset '" + std::string(name) + "' (tiny, small, long)");
}

}  // namespace star
