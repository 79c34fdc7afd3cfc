#include "star/backend/cpu/rope.h"

#include <cassert>
#include <cmath>
#include <numbers>
#include <string>

namespace star::cpu {
namespace {

// HF `_compute_default_rope_parameters`: 1 / theta^(2i / d), every operation in float32.
std::vector<float> default_inv_freq(int64_t head_dim, double theta) {
  std::vector<float> inv_freq(static_cast<size_t>(head_dim / 2));
  for (int64_t i = 0; i < head_dim / 2; ++i) {
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(head_dim);
    inv_freq[static_cast<size_t>(i)] = 1.f / std::pow(static_cast<float>(theta), exponent);
  }
  return inv_freq;
}

// HF `_compute_llama3_parameters`, in float32 and in HF's operation order (torch evaluates
// `scalar / tensor` as `tensor.reciprocal() * scalar`), without fused multiply-adds (torch rounds
// every product), so the table equals HF's bit for bit. Wavelengths shorter than
// original / high_freq_factor keep their frequency, longer than original / low_freq_factor divide
// it by `factor`, and the band between interpolates smoothly.
[[gnu::optimize("fp-contract=off")]] void apply_llama3_scaling(std::vector<float>& inv_freq,
                                                              const RopeScaling& s) {
  const auto factor = static_cast<float>(s.factor);
  const auto low = static_cast<float>(s.low_freq_factor);
  const auto high_minus_low = static_cast<float>(s.high_freq_factor - s.low_freq_factor);
  const auto old_context = static_cast<float>(s.original_max_position_embeddings);
  const auto low_freq_wavelen =
      static_cast<float>(static_cast<double>(s.original_max_position_embeddings) / s.low_freq_factor);
  const auto high_freq_wavelen =
      static_cast<float>(static_cast<double>(s.original_max_position_embeddings) / s.high_freq_factor);
  const auto two_pi = static_cast<float>(2.0 * std::numbers::pi);
  for (float& f : inv_freq) {
    const float wavelen = (1.f / f) * two_pi;
    if (wavelen > low_freq_wavelen) {
      f = f / factor;
    } else if (!(wavelen < high_freq_wavelen)) {
      const float smooth = ((1.f / wavelen) * old_context - low) / high_minus_low;
      f = (1.f - smooth) * f / factor + smooth * f;
    }
  }
}

// (first[i*stride], second[i*stride]) -> (a cos_i - b sin_i, b cos_i + a sin_i) for i < n.
void rotate_pairs(float* first, float* second, int64_t stride, const float* cos_a,
                  const float* sin_a, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float a = first[i * stride];
    const float b = second[i * stride];
    first[i * stride] = a * cos_a[i] - b * sin_a[i];
    second[i * stride] = b * cos_a[i] + a * sin_a[i];
  }
}

}  // namespace

Result<RopeTable> RopeTable::create(int64_t head_dim, double theta, const RopeScaling& scaling) {
  if (head_dim <= 0 || head_dim % 2 != 0) {
    return invalid_argument("rope: head_dim must be a positive even number, got " +
                            std::to_string(head_dim));
  }
  if (!(theta > 0.0) || !std::isfinite(theta)) {
    return invalid_argument("rope: rope_theta must be a finite number > 0, got " +
                            std::to_string(theta));
  }
  std::vector<float> inv_freq = default_inv_freq(head_dim, theta);
  if (scaling.type == RopeScaling::Type::kLlama3) {
    if (!(scaling.factor > 0.0) || !std::isfinite(scaling.factor)) {
      return invalid_argument("rope_scaling.factor must be a finite number > 0, got " +
                              std::to_string(scaling.factor));
    }
    if (!(scaling.low_freq_factor > 0.0) ||
        !(scaling.high_freq_factor > scaling.low_freq_factor) ||
        !std::isfinite(scaling.high_freq_factor)) {
      return invalid_argument(
          "rope_scaling: need 0 < low_freq_factor < high_freq_factor, got low_freq_factor " +
          std::to_string(scaling.low_freq_factor) + ", high_freq_factor " +
          std::to_string(scaling.high_freq_factor));
    }
    if (scaling.original_max_position_embeddings <= 0) {
      return invalid_argument("rope_scaling.original_max_position_embeddings must be > 0, got " +
                              std::to_string(scaling.original_max_position_embeddings));
    }
    apply_llama3_scaling(inv_freq, scaling);
  }
  if (scaling.type == RopeScaling::Type::kFreqFactors) {
    if (scaling.freq_factors.size() != inv_freq.size()) {
      return invalid_argument("rope: " + std::to_string(scaling.freq_factors.size()) + " frequency factors for " +
                              std::to_string(inv_freq.size()) + " frequencies (head_dim / 2)");
    }
    for (size_t i = 0; i < inv_freq.size(); ++i) {
      const float f = scaling.freq_factors[i];
      if (!(f > 0.f) || !std::isfinite(f)) {
        return invalid_argument("rope: frequency factor " + std::to_string(i) + " must be a finite number > 0, got " +
                                std::to_string(f));
      }
      inv_freq[i] /= f;
    }
  }
  return RopeTable(head_dim, std::move(inv_freq));
}

void apply_rope(float* x, int64_t n_tokens, int64_t n_heads, int64_t head_dim,
                const int32_t* positions, const RopeTable& table, RopeLayout layout) {
  assert(head_dim == table.head_dim());
  const int64_t half = head_dim / 2;
  const float* inv_freq = table.inv_freq().data();
#pragma omp parallel if (n_tokens * n_heads * head_dim >= (1 << 15))
  {
    // cos/sin of one token, shared by all its heads.
    std::vector<float> cos_a(static_cast<size_t>(half));
    std::vector<float> sin_a(static_cast<size_t>(half));
#pragma omp for schedule(static)
    for (int64_t t = 0; t < n_tokens; ++t) {
      const auto position = static_cast<float>(positions[t]);
      for (int64_t i = 0; i < half; ++i) {
        const float angle = position * inv_freq[i];
        cos_a[static_cast<size_t>(i)] = std::cos(angle);
        sin_a[static_cast<size_t>(i)] = std::sin(angle);
      }
      for (int64_t h = 0; h < n_heads; ++h) {
        float* row = x + (t * n_heads + h) * head_dim;
        if (layout == RopeLayout::kHalf) {
          rotate_pairs(row, row + half, 1, cos_a.data(), sin_a.data(), half);
        } else {
          rotate_pairs(row, row + 1, 2, cos_a.data(), sin_a.data(), half);
        }
      }
    }
  }
}

}  // namespace star::cpu
