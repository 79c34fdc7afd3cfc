// Test-only references: random tensors and a naive double-precision attention with a full softmax,
// written from the AttentionMask definition, independent of the tiled kernel.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "star/backend/cpu/attention.h"
#include "star/model/dtype.h"

namespace star::testing {

inline std::vector<float> random_tensor(size_t count, std::mt19937& rng, float lo = -1.f,
                                        float hi = 1.f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> t(count);
  for (float& x : t) x = dist(rng);
  return t;
}

struct AttentionResult {
  std::vector<float> out;  // [nq, Hq, d]
  std::vector<float> lse;  // [nq, Hq]
};

inline bool reference_sees(const AttentionMask& mask, int64_t i, int64_t j) {
  const int64_t pos = mask.causal_offset + i;
  if (mask.causal && j > pos) return false;
  if (mask.window.bounded() && !(j < mask.window.sink || j > pos - mask.window.window)) return false;
  return true;
}

inline AttentionResult reference_attention(const std::vector<float>& q, int64_t nq,
                                           const std::vector<float>& k,
                                           const std::vector<float>& v, int64_t nk,
                                           int64_t n_heads, int64_t n_kv_heads, int64_t d,
                                           float scale, const AttentionMask& mask) {
  AttentionResult r{std::vector<float>(static_cast<size_t>(nq * n_heads * d)),
                    std::vector<float>(static_cast<size_t>(nq * n_heads))};
  std::vector<double> scores(static_cast<size_t>(nk));
  for (int64_t i = 0; i < nq; ++i) {
    for (int64_t h = 0; h < n_heads; ++h) {
      const int64_t kvh = h / (n_heads / n_kv_heads);
      const float* qi = &q[static_cast<size_t>((i * n_heads + h) * d)];
      double max_score = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < nk; ++j) {
        if (!reference_sees(mask, i, j)) continue;
        const float* kj = &k[static_cast<size_t>((j * n_kv_heads + kvh) * d)];
        double dot = 0;
        for (int64_t c = 0; c < d; ++c) dot += static_cast<double>(qi[c]) * kj[c];
        scores[static_cast<size_t>(j)] = dot * scale;
        max_score = std::max(max_score, dot * scale);
      }
      float* o = &r.out[static_cast<size_t>((i * n_heads + h) * d)];
      float& lse = r.lse[static_cast<size_t>(i * n_heads + h)];
      if (max_score == -std::numeric_limits<double>::infinity()) {
        lse = -std::numeric_limits<float>::infinity();
        continue;  // out stays 0
      }
      double sum = 0;
      std::vector<double> acc(static_cast<size_t>(d), 0.0);
      for (int64_t j = 0; j < nk; ++j) {
        if (!reference_sees(mask, i, j)) continue;
        const double p = std::exp(scores[static_cast<size_t>(j)] - max_score);
        sum += p;
        const float* vj = &v[static_cast<size_t>((j * n_kv_heads + kvh) * d)];
        for (int64_t c = 0; c < d; ++c) acc[static_cast<size_t>(c)] += p * vj[c];
      }
      for (int64_t c = 0; c < d; ++c) o[c] = static_cast<float>(acc[static_cast<size_t>(c)] / sum);
      lse = static_cast<float>(max_score + std::log(sum));
    }
  }
  return r;
}

// The queries a call that attention_rounds_to_bf16 multiplies: q times scale * log2 e in float32,
// rounded to bf16, to be used with kBf16PairsScale (ln 2), which takes the kernel's base-2 scores
// back to natural ones.
inline constexpr float kBf16PairsScale = 0.693147180559945309f;
inline std::vector<float> bf16_pair_queries(const std::vector<float>& q, float scale) {
  const float log2_scale = scale * 1.44269504088896341f;
  std::vector<float> rounded(q.size());
  for (size_t i = 0; i < q.size(); ++i) rounded[i] = bf16_to_f32(f32_to_bf16(q[i] * log2_scale));
  return rounded;
}

// The reference for a call that attention_rounds_to_bf16: its rounded queries, as above. The
// kernel's probabilities are rounded to bf16 as well (each within 2^-9 of itself), so an output may
// differ from this one by up to 2^-9 of the largest |v| its row sees (bf16_pairs_slack).
inline AttentionResult reference_attention_bf16_pairs(const std::vector<float>& q, int64_t nq,
                                                      const std::vector<float>& k, const std::vector<float>& v,
                                                      int64_t nk, int64_t n_heads, int64_t n_kv_heads, int64_t d,
                                                      float scale, const AttentionMask& mask) {
  return reference_attention(bf16_pair_queries(q, scale), nq, k, v, nk, n_heads, n_kv_heads, d, kBf16PairsScale,
                             mask);
}

// Twice the bound above for the largest |v| anywhere; float32 rounding comes on top.
inline float bf16_pairs_slack(const std::vector<float>& v) {
  float largest = 0.f;
  for (float x : v) largest = std::max(largest, std::abs(x));
  return std::ldexp(largest, -8);
}

}  // namespace star::testing
