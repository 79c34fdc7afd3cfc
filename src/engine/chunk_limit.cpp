#include "star/engine/chunk_limit.h"

#include <algorithm>

namespace star {

int64_t attention_keys_per_token(const LlamaConfig& c) {
  const int64_t layer_weights = c.dim * c.q_dim() + 2 * c.dim * c.kv_dim() + c.q_dim() * c.dim + 3 * c.dim * c.hidden_dim;
  const int64_t per_key = 4 * c.q_dim();
  return per_key > 0 ? std::max<int64_t>(1, 2 * layer_weights / per_key) : 1;
}

double chunk_cost(int64_t rows, int64_t keys_before, int64_t keys_per_token, int64_t key_cap) {
  // Row i attends keys_before + i + 1 keys (itself included), capped by the window.
  double keys = 0;
  const int64_t first = keys_before + 1;
  const int64_t last = keys_before + rows;
  if (key_cap > 0 && first >= key_cap) {
    keys = static_cast<double>(rows) * static_cast<double>(key_cap);
  } else {
    const int64_t uncapped_last = key_cap > 0 ? std::min(last, key_cap) : last;
    const int64_t uncapped_rows = uncapped_last - first + 1;
    keys = static_cast<double>(uncapped_rows) * static_cast<double>(first + uncapped_last) / 2.0 +
           static_cast<double>(rows - uncapped_rows) * static_cast<double>(key_cap);
  }
  return static_cast<double>(rows) + keys / static_cast<double>(keys_per_token);
}

int64_t chunk_rows(const ChunkLimit& limit, int64_t left, int64_t keys_before, int64_t key_cap) {
  int64_t rows = limit.max_tokens > 0 ? std::min(left, limit.max_tokens) : left;
  if (limit.max_cost <= 0 || limit.keys_per_token <= 0 || rows <= 1) return rows;
  const auto budget = static_cast<double>(limit.max_cost);
  if (chunk_cost(rows, keys_before, limit.keys_per_token, key_cap) <= budget) return rows;
  // The cost grows with the rows: the largest row count within the budget, at least one.
  int64_t fits = 1;
  int64_t over = rows;
  while (over - fits > 1) {
    const int64_t mid = fits + (over - fits) / 2;
    (chunk_cost(mid, keys_before, limit.keys_per_token, key_cap) <= budget ? fits : over) = mid;
  }
  return fits;
}

}  // namespace star
