// RocketKV's observation window: the queries (after RoPE) of the last W prompt tokens in every
// layer. The query host records those of the last context tokens while Phase 1 encodes its last
// block; when the query is known, its tokens' queries (recorded in one pass over the full shards)
// take the window's last rows. Stage 1 broadcasts the window so every rank scores its own shard
// against the same queries.
#pragma once

#include <cstdint>
#include <vector>

#include "star/model/layer_attention.h"

namespace star::rocket {

struct WindowQueries {
  int64_t rows = 0;          // W: at most the window size, fewer when the recorded pass was shorter
  int64_t context_rows = 0;  // the first rows: the last context tokens (the query host's last rows);
                             // the others are query tokens, in no shard
  int64_t q_floats = 0;      // Hq × d of one row
  std::vector<float> q;      // [layers, rows, Hq, d]

  const float* layer(int64_t l) const { return q.data() + l * rows * q_floats; }
};

// The window of the last `window_size` prompt tokens: the last rows of `query` (all rows query
// tokens) after the last rows of `context` (all rows context tokens).
WindowQueries prompt_window(const WindowQueries& context, const WindowQueries& query, int64_t window_size,
                            int64_t n_layers);

// A LayerAttention that records the queries of the last `rows` new tokens of each layer into
// `out`, then lets `inner` attend as if it were called directly.
class QueryRecorder final : public LayerAttention {
 public:
  QueryRecorder(LayerAttention& inner, int64_t n_layers, int64_t q_floats, int64_t rows, WindowQueries& out);
  Status begin(int64_t n_new) override;
  Status attend(int64_t layer, const float* q, const float* k, const float* v, int64_t n, float* out) override;

 private:
  LayerAttention& inner_;
  int64_t n_layers_;
  int64_t q_floats_;
  int64_t rows_;
  WindowQueries& out_;
};

}  // namespace star::rocket
