// Test-only reference of Skip Softmax, written from the rule (per split-KV piece, per vote group of
// rows, per key tile) in double precision with a plain online softmax. It takes only the tiling the
// kernel reports (cpu::attention_tiling), none of its code.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "cpu_kernels/attention_reference.h"
#include "star/backend/cpu/attention.h"

namespace star::testing {

struct SkipSoftmaxReference {
  AttentionResult result;
  SkipSoftmaxTiles tiles;
  // The smallest distance of a vote's deciding quantity, max over rows of (m_tile - m_run), from
  // ln(lambda): below float rounding the kernel could vote the other way, and the test says so.
  double closest_vote = std::numeric_limits<double>::infinity();
};

inline SkipSoftmaxReference skip_softmax_reference(const std::vector<float>& q, int64_t nq, const std::vector<float>& k,
                                                   const std::vector<float>& v, int64_t nk, int64_t n_heads,
                                                   int64_t n_kv_heads, int64_t d, float scale, const AttentionMask& mask,
                                                   double scale_factor, const cpu::AttentionTiling& tiling) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const int64_t group = n_heads / n_kv_heads;
  const double lambda = nk > 0 ? scale_factor / static_cast<double>(nk) : 0.0;
  const bool on = lambda > 0.0 && lambda < 1.0;
  const double ln_lambda = on ? std::log(lambda) : 0.0;

  SkipSoftmaxReference ref;
  const int64_t n_splits = std::max<int64_t>(1, (nk + tiling.split_keys - 1) / tiling.split_keys);
  // Per split: the unnormalised result of every (token, head) row.
  std::vector<std::vector<double>> split_lse(static_cast<size_t>(n_splits),
                                             std::vector<double>(static_cast<size_t>(nq * n_heads), -kInf));
  std::vector<std::vector<double>> split_out(static_cast<size_t>(n_splits),
                                             std::vector<double>(static_cast<size_t>(nq * n_heads * d), 0.0));
  for (int64_t split = 0; split < n_splits; ++split) {
    const int64_t key_begin = std::min(nk, split * tiling.split_keys);
    const int64_t key_end = std::min(nk, key_begin + tiling.split_keys);
    for (int64_t kvh = 0; kvh < n_kv_heads; ++kvh) {
      for (int64_t t0 = 0; t0 < nq; t0 += tiling.tile_tokens) {
        const int64_t rows = (std::min(nq, t0 + tiling.tile_tokens) - t0) * group;
        for (int64_t r0 = 0; r0 < rows; r0 += tiling.vote_rows) {
          const int64_t n = std::min(tiling.vote_rows, rows - r0);
          std::vector<double> m_run(static_cast<size_t>(n), -kInf), sum(static_cast<size_t>(n), 0.0);
          std::vector<double> acc(static_cast<size_t>(n * d), 0.0);
          std::vector<double> s(static_cast<size_t>(n * tiling.key_tile));
          std::vector<double> m_tile(static_cast<size_t>(n));
          auto token = [&](int64_t r) { return t0 + (r0 + r) / group; };
          auto head = [&](int64_t r) { return kvh * group + (r0 + r) % group; };
          for (int64_t j0 = key_begin; j0 < key_end; j0 += tiling.key_tile) {
            const int64_t bc = std::min(tiling.key_tile, key_end - j0);
            bool seen = false;
            for (int64_t r = 0; r < n; ++r) {
              m_tile[r] = -kInf;
              const float* qr = &q[static_cast<size_t>((token(r) * n_heads + head(r)) * d)];
              for (int64_t c = 0; c < bc; ++c) {
                double& score = s[static_cast<size_t>(r * tiling.key_tile + c)];
                score = -kInf;
                if (!reference_sees(mask, token(r), j0 + c)) continue;
                const float* kc = &k[static_cast<size_t>(((j0 + c) * n_kv_heads + kvh) * d)];
                double dot = 0;
                for (int64_t i = 0; i < d; ++i) dot += static_cast<double>(qr[i]) * kc[i];
                score = dot * scale;
                m_tile[r] = std::max(m_tile[r], score);
                seen = true;
              }
            }
            if (!seen) continue;
            if (on) {
              ++ref.tiles.visited;
              // A row that sees nothing votes skip; one whose running max is -inf never does.
              double deciding = -kInf;
              for (int64_t r = 0; r < n; ++r) {
                if (m_tile[r] != -kInf) deciding = std::max(deciding, m_tile[r] - m_run[r]);
              }
              if (std::isfinite(deciding)) {
                ref.closest_vote = std::min(ref.closest_vote, std::abs(deciding - ln_lambda));
              }
              if (deciding < ln_lambda) {
                ++ref.tiles.skipped;
                continue;
              }
            }
            for (int64_t r = 0; r < n; ++r) {
              const double m_new = std::max(m_run[r], m_tile[r]);
              if (m_new == -kInf) continue;
              const double rescale = std::exp(m_run[r] - m_new);
              sum[r] *= rescale;
              for (int64_t i = 0; i < d; ++i) acc[static_cast<size_t>(r * d + i)] *= rescale;
              for (int64_t c = 0; c < bc; ++c) {
                const double score = s[static_cast<size_t>(r * tiling.key_tile + c)];
                if (score == -kInf) continue;
                const double p = std::exp(score - m_new);
                sum[r] += p;
                const float* vc = &v[static_cast<size_t>(((j0 + c) * n_kv_heads + kvh) * d)];
                for (int64_t i = 0; i < d; ++i) acc[static_cast<size_t>(r * d + i)] += p * vc[i];
              }
              m_run[r] = m_new;
            }
          }
          for (int64_t r = 0; r < n; ++r) {
            if (sum[r] == 0.0) continue;
            const int64_t row = token(r) * n_heads + head(r);
            split_lse[split][static_cast<size_t>(row)] = m_run[r] + std::log(sum[r]);
            for (int64_t i = 0; i < d; ++i) {
              split_out[split][static_cast<size_t>(row * d + i)] = acc[static_cast<size_t>(r * d + i)] / sum[r];
            }
          }
        }
      }
    }
  }
  // Exact merge of the splits by their log-sum-exp.
  ref.result.out.assign(static_cast<size_t>(nq * n_heads * d), 0.f);
  ref.result.lse.assign(static_cast<size_t>(nq * n_heads), -std::numeric_limits<float>::infinity());
  for (int64_t row = 0; row < nq * n_heads; ++row) {
    double top = -kInf;
    for (int64_t split = 0; split < n_splits; ++split) top = std::max(top, split_lse[split][static_cast<size_t>(row)]);
    if (top == -kInf) continue;
    double total = 0;
    for (int64_t split = 0; split < n_splits; ++split) total += std::exp(split_lse[split][static_cast<size_t>(row)] - top);
    const double lse = top + std::log(total);
    ref.result.lse[static_cast<size_t>(row)] = static_cast<float>(lse);
    for (int64_t i = 0; i < d; ++i) {
      double o = 0;
      for (int64_t split = 0; split < n_splits; ++split) {
        o += std::exp(split_lse[split][static_cast<size_t>(row)] - lse) * split_out[split][static_cast<size_t>(row * d + i)];
      }
      ref.result.out[static_cast<size_t>(row * d + i)] = static_cast<float>(o);
    }
  }
  return ref;
}

}  // namespace star::testing
