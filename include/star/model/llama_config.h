// LlamaConfig: the hyper-parameters of a Llama 2 / 3 / 3.1 / 3.2 model, whatever file they came from.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace star {

// How Q/K rows pair the dimensions that RoPE rotates together.
//   kHalf:     (i, i + d/2), HF checkpoints (GPT-NeoX style).
//   kAdjacent: (2i, 2i + 1), GGUF and llama2.c checkpoints (GPT-J style).
enum class RopeLayout { kHalf, kAdjacent };

// rope_scaling of Llama 3.1 (rope_type "llama3"); factor 1 with type kNone means plain RoPE.
// kFreqFactors is the same scaling as llama.cpp stores it in a GGUF (tensor rope_freqs.weight):
// one factor per frequency, inverse frequency i divided by freq_factors[i].
struct RopeScaling {
  enum class Type { kNone, kLlama3, kFreqFactors };
  Type type = Type::kNone;
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_max_position_embeddings = 8192;
  std::vector<float> freq_factors;  // kFreqFactors: head_dim / 2 of them
};

struct LlamaConfig {
  int64_t dim = 0;            // hidden_size
  int64_t hidden_dim = 0;     // intermediate_size (SwiGLU width)
  int64_t n_layers = 0;
  int64_t n_heads = 0;        // query heads Hq
  int64_t n_kv_heads = 0;     // key/value heads Hkv (GQA: Hq % Hkv == 0)
  int64_t head_dim = 0;       // d; dim / n_heads unless config.json says otherwise
  int64_t vocab_size = 0;
  int64_t max_position_embeddings = 0;
  double rms_norm_eps = 1e-5;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  RopeLayout rope_layout = RopeLayout::kHalf;
  bool tie_word_embeddings = false;

  int32_t bos_token_id = -1;             // -1: none
  std::vector<int32_t> eos_token_ids;    // generation stops at any of these

  int64_t q_dim() const { return n_heads * head_dim; }
  int64_t kv_dim() const { return n_kv_heads * head_dim; }
  int64_t parameter_count() const;
};

}  // namespace star
