// RocketKV stage 1 (arXiv 2502.14051), as pure functions: which prompt tokens each KV head keeps.
//
//   A[h][w][t] = softmax over the scored keys t of (Qw[h][w] . K[h/G][t]) / sqrt(d)
//   score[kv][t] = sum over the G query heads of kv and the W window rows of A
//   keep[kv] = ascending(top (B - W) t of max_pool(score[kv], kernel_size, same padding)) ++ window
//
// The softmax runs over every scored key of the sequence; when the keys are split across ranks,
// each rank computes window_logsumexp over its own keys, the partials merge with merge_logsumexp,
// and window_scores normalizes with the merged value, so the scores equal one rank's exactly up
// to the rounding of the merged log-sum-exp.
//
// Choices the paper and TensorRT-LLM leave open: ties in the top-k go to the lower token index (max-pool makes
// plateaus of equal scores, so ties are common); dot products are float32, exponentials and sums
// float64.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace star::rocket {

struct HeadShape {
  int64_t n_heads = 0;     // Hq
  int64_t n_kv_heads = 0;  // Hkv
  int64_t head_dim = 0;    // d
  int64_t group() const { return n_heads / n_kv_heads; }
};

// lse [Hq, W]: per query head and window row, the natural-log log-sum-exp of the scaled scores of
// window queries qw [W, Hq, d] against keys [T, Hkv, d]; -inf where T == 0.
std::vector<double> window_logsumexp(const float* qw, int64_t window, const float* keys, int64_t tokens,
                                     const HeadShape& shape);

// Merges per-rank partials: parts holds `count` arrays of `size` values, rank-major.
std::vector<double> merge_logsumexp(std::span<const double> parts, int64_t count, int64_t size);

// scores [Hkv, T]: each key's softmax weight (normalized by lse [Hq, W]) summed over the G query
// heads of its KV head and the W window rows.
std::vector<double> window_scores(const float* qw, int64_t window, const float* keys, int64_t tokens,
                                  const HeadShape& shape, std::span<const double> lse);

// Max-pool with stride 1 and same padding (kernel_size odd: the window is centred; even: one more
// element on the left, as PyTorch's max_pool1d with padding kernel_size / 2 then trimmed).
std::vector<double> max_pool_same(std::span<const double> scores, int64_t kernel_size);

// The indices of the `count` largest scores, ascending; ties go to the lower index.
std::vector<int64_t> top_ascending(std::span<const double> scores, int64_t count);

// The whole of stage 1 on one sequence: keys [L, Hkv, d] of every prompt token, qw [W, Hq, d] the
// queries of the last W of them (W = min(window_size, L)). Returns keep[kv], ascending token
// indices: everything when L <= prompt_budget, else prompt_budget tokens.
std::vector<std::vector<int64_t>> select_tokens(const float* qw, const float* keys, int64_t tokens,
                                                const HeadShape& shape, int64_t prompt_budget, int64_t window_size,
                                                int64_t kernel_size);

}  // namespace star::rocket
