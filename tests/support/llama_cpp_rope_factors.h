// The per-frequency RoPE factors llama.cpp's converter (convert_hf_to_gguf.py, LlamaModel) writes
// as rope_freqs.weight for an HF rope_scaling of type llama3, written from its definition: the
// factor of frequency i follows from the unscaled frequency and is stored as float32. (The
// converter computes in float32 where this uses double: the factors differ in rounding only.)
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>
#include <vector>

#include "star/model/llama_config.h"

namespace star::testing {

inline std::vector<float> llama_cpp_rope_factors(int64_t head_dim, double theta, const RopeScaling& s) {
  std::vector<float> factors;
  const double old_len = static_cast<double>(s.original_max_position_embeddings);
  for (int64_t i = 0; i < head_dim / 2; ++i) {
    const double freq = 1.0 / std::pow(theta, static_cast<double>(2 * i) / static_cast<double>(head_dim));
    const double wavelen = 2 * std::numbers::pi / freq;
    if (wavelen < old_len / s.high_freq_factor) {
      factors.push_back(1.0f);
    } else if (wavelen > old_len / s.low_freq_factor) {
      factors.push_back(static_cast<float>(s.factor));
    } else {
      const double smooth = (old_len / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
      factors.push_back(static_cast<float>(1.0 / ((1 - smooth) / s.factor + smooth)));
    }
  }
  return factors;
}

// The same scaling as a GGUF's rope_freqs.weight carries it.
inline RopeScaling as_gguf_freq_factors(int64_t head_dim, double theta, const RopeScaling& llama3) {
  RopeScaling s;
  s.type = RopeScaling::Type::kFreqFactors;
  s.freq_factors = llama_cpp_rope_factors(head_dim, theta, llama3);
  return s;
}

}  // namespace star::testing
