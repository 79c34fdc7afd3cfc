#include "star/model/config_validation.h"

#include <cmath>
#include <string>

namespace star {

Status validate_llama_config(const LlamaConfig& c, std::string_view source) {
  const std::string where(source);
  struct Size {
    const char* name;
    int64_t value;
  };
  const Size sizes[] = {{"hidden_size", c.dim},           {"intermediate_size", c.hidden_dim},
                        {"num_hidden_layers", c.n_layers}, {"num_attention_heads", c.n_heads},
                        {"num_key_value_heads", c.n_kv_heads}, {"head_dim", c.head_dim},
                        {"vocab_size", c.vocab_size},      {"max_position_embeddings", c.max_position_embeddings}};
  for (const Size& s : sizes) {
    if (s.value <= 0) return invalid_argument(where + ": " + s.name + " = " + std::to_string(s.value) + " must be > 0");
  }
  if (c.n_heads % c.n_kv_heads != 0) {
    return invalid_argument(where + ": num_attention_heads " + std::to_string(c.n_heads) +
                            " is not a multiple of num_key_value_heads " + std::to_string(c.n_kv_heads));
  }
  if (c.head_dim % 2 != 0) {
    return invalid_argument(where + ": head_dim " + std::to_string(c.head_dim) + " must be even for RoPE");
  }
  if (!(c.rms_norm_eps > 0)) return invalid_argument(where + ": rms_norm_eps must be > 0");
  if (!(c.rope_theta > 0)) return invalid_argument(where + ": rope_theta must be > 0");
  if (c.rope_scaling.type == RopeScaling::Type::kLlama3) {
    const RopeScaling& r = c.rope_scaling;
    if (!(r.factor >= 1.0)) return invalid_argument(where + ": rope_scaling.factor must be >= 1");
    if (!(r.low_freq_factor > 0) || !(r.high_freq_factor > r.low_freq_factor)) {
      return invalid_argument(where + ": rope_scaling needs 0 < low_freq_factor < high_freq_factor");
    }
    if (r.original_max_position_embeddings <= 0) {
      return invalid_argument(where + ": rope_scaling.original_max_position_embeddings must be > 0");
    }
  }
  if (c.rope_scaling.type == RopeScaling::Type::kFreqFactors) {
    const std::vector<float>& f = c.rope_scaling.freq_factors;
    if (f.size() != static_cast<size_t>(c.head_dim / 2)) {
      return invalid_argument(where + ": " + std::to_string(f.size()) + " rope frequency factors for head_dim " +
                              std::to_string(c.head_dim) + " (need head_dim / 2)");
    }
    for (size_t i = 0; i < f.size(); ++i) {
      if (!(f[i] > 0.f) || !std::isfinite(f[i])) {
        return invalid_argument(where + ": rope frequency factor " + std::to_string(i) + " is " + std::to_string(f[i]) +
                                " (must be finite and > 0)");
      }
    }
  }
  for (int32_t id : c.eos_token_ids) {
    if (id < 0 || id >= c.vocab_size) {
      return invalid_argument(where + ": eos_token_id " + std::to_string(id) + " is outside the vocabulary");
    }
  }
  if (c.bos_token_id >= c.vocab_size) {
    return invalid_argument(where + ": bos_token_id " + std::to_string(c.bos_token_id) + " is outside the vocabulary");
  }
  return ok_status();
}

}  // namespace star
