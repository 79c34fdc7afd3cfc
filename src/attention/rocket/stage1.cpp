#include "star/attention/rocket/stage1.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace star::rocket {
namespace {

// Eight independent float32 partial sums, so the compiler can vectorize the loop without
// reassociating (the result does not depend on -ffast-math).
float dot(const float* a, const float* b, int64_t n) {
  float acc[8] = {};
  int64_t c = 0;
  for (; c + 8 <= n; c += 8) {
    for (int j = 0; j < 8; ++j) acc[j] += a[c + j] * b[c + j];
  }
  float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  for (; c < n; ++c) s += a[c] * b[c];
  return s;
}

// Scaled scores of the window rows of query head h against key t: out[w].
void head_scores(const float* qw, int64_t window, const float* key, int64_t h, const HeadShape& s, double* out) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(s.head_dim));
  for (int64_t w = 0; w < window; ++w) {
    out[w] = dot(qw + (w * s.n_heads + h) * s.head_dim, key, s.head_dim) * scale;
  }
}

}  // namespace

std::vector<double> window_logsumexp(const float* qw, int64_t window, const float* keys, int64_t tokens,
                                     const HeadShape& shape) {
  const int64_t H = shape.n_heads, G = shape.group(), kvf = shape.n_kv_heads * shape.head_dim;
  std::vector<double> max(H * window, -std::numeric_limits<double>::infinity());
  std::vector<double> sum(H * window, 0.0);
  std::vector<double> s(window);
  // Two passes over the keys (max, then the shifted sum) keep every exponent <= 0.
  for (int pass = 0; pass < 2; ++pass) {
    for (int64_t t = 0; t < tokens; ++t) {
      for (int64_t h = 0; h < H; ++h) {
        head_scores(qw, window, keys + t * kvf + h / G * shape.head_dim, h, shape, s.data());
        for (int64_t w = 0; w < window; ++w) {
          const int64_t i = h * window + w;
          if (pass == 0) max[i] = std::max(max[i], s[w]);
          else sum[i] += std::exp(s[w] - max[i]);
        }
      }
    }
  }
  for (int64_t i = 0; i < H * window; ++i) {
    if (tokens > 0) max[i] += std::log(sum[i]);
  }
  return max;
}

std::vector<double> merge_logsumexp(std::span<const double> parts, int64_t count, int64_t size) {
  std::vector<double> out(size);
  for (int64_t i = 0; i < size; ++i) {
    double m = -std::numeric_limits<double>::infinity();
    for (int64_t p = 0; p < count; ++p) m = std::max(m, parts[p * size + i]);
    if (std::isinf(m)) {
      out[i] = m;
      continue;
    }
    double sum = 0;
    for (int64_t p = 0; p < count; ++p) sum += std::exp(parts[p * size + i] - m);
    out[i] = m + std::log(sum);
  }
  return out;
}

std::vector<double> window_scores(const float* qw, int64_t window, const float* keys, int64_t tokens,
                                  const HeadShape& shape, std::span<const double> lse) {
  const int64_t G = shape.group(), kvf = shape.n_kv_heads * shape.head_dim;
  std::vector<double> scores(shape.n_kv_heads * tokens, 0.0);
  std::vector<double> s(window);
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t kv = 0; kv < shape.n_kv_heads; ++kv) {
      double total = 0;
      for (int64_t h = kv * G; h < (kv + 1) * G; ++h) {
        head_scores(qw, window, keys + t * kvf + kv * shape.head_dim, h, shape, s.data());
        for (int64_t w = 0; w < window; ++w) total += std::exp(s[w] - lse[h * window + w]);
      }
      scores[kv * tokens + t] = total;
    }
  }
  return scores;
}

std::vector<double> max_pool_same(std::span<const double> scores, int64_t kernel_size) {
  const auto n = static_cast<int64_t>(scores.size());
  const int64_t left = kernel_size / 2, right = kernel_size - 1 - left;
  std::vector<double> out(n);
  for (int64_t t = 0; t < n; ++t) {
    const int64_t lo = std::max<int64_t>(0, t - left), hi = std::min(n - 1, t + right);
    out[t] = *std::max_element(scores.begin() + lo, scores.begin() + hi + 1);
  }
  return out;
}

std::vector<int64_t> top_ascending(std::span<const double> scores, int64_t count) {
  std::vector<int64_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  count = std::clamp<int64_t>(count, 0, static_cast<int64_t>(order.size()));
  std::partial_sort(order.begin(), order.begin() + count, order.end(), [&](int64_t a, int64_t b) {
    return scores[a] != scores[b] ? scores[a] > scores[b] : a < b;
  });
  order.resize(count);
  std::sort(order.begin(), order.end());
  return order;
}

std::vector<std::vector<int64_t>> select_tokens(const float* qw, const float* keys, int64_t tokens,
                                                const HeadShape& shape, int64_t prompt_budget, int64_t window_size,
                                                int64_t kernel_size) {
  std::vector<std::vector<int64_t>> keep(shape.n_kv_heads);
  if (tokens <= prompt_budget) {
    for (auto& k : keep) {
      k.resize(tokens);
      std::iota(k.begin(), k.end(), 0);
    }
    return keep;
  }
  const int64_t window = std::min(window_size, tokens), scored = tokens - window;
  const std::vector<double> lse = window_logsumexp(qw, window, keys, scored, shape);
  const std::vector<double> scores = window_scores(qw, window, keys, scored, shape, lse);
  for (int64_t kv = 0; kv < shape.n_kv_heads; ++kv) {
    const std::vector<double> pooled =
        max_pool_same(std::span(scores).subspan(kv * scored, scored), kernel_size);
    keep[kv] = top_ascending(pooled, prompt_budget - window);
    for (int64_t t = scored; t < tokens; ++t) keep[kv].push_back(t);
  }
  return keep;
}

}  // namespace star::rocket
