// RocketQueryAttention: Phase 2 over a rank's CompactedKvCache. In each layer every KV head attends
// exactly to its selected rows, then the ranks all-gather (out, lse) and merge, as
// ShardedQueryAttention does over a whole shard.
//
// Selection per KV head:
//   - a pass of several tokens (the query) attends to every row: stage 1 already compacted them;
//   - a decode step runs stage 2: the rows of the top min(topk, P) KT pages, plus, on the query
//     host, always the step's own token and the `window_size` rows before it (a choice: the
//     paper and TensorRT-LLM leave open whether the newest tokens are always in).
// The query host appends the new tokens to every head and masks them causally.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "star/attention/layer_attentions.h"
#include "star/attention/rocket/compacted_kv_cache.h"
#include "star/attention/sparse_attention_config.h"
#include "star/dist/communicator.h"
#include "star/model/layer_attention.h"

namespace star::rocket {

class RocketQueryAttention final : public LayerAttention {
 public:
  RocketQueryAttention(AttentionShape shape, Communicator& comm, CompactedKvCache& cache, bool is_query_host,
                       const RocketConfig& config);
  Status begin(int64_t n_new) override;
  Status attend(int64_t layer, const float* q, const float* k, const float* v, int64_t n, float* out) override;

  int64_t floats_sent() const { return floats_sent_; }
  double gather_merge_seconds() const { return gather_merge_seconds_; }
  // Rows attended and rows held, summed over layers, KV heads and passes: stage 2's saving.
  int64_t rows_attended() const { return rows_attended_; }
  int64_t rows_held() const { return rows_held_; }

 private:
  // Rows of (layer, kv) that a decode step with query group q [G, d] attends to, ascending;
  // empty when that is every row.
  const std::vector<int64_t>& decode_rows(int64_t layer, int64_t kv, const float* q);
  Status gather_and_merge(int64_t n, float* out);

  AttentionShape shape_;
  Communicator& comm_;
  CompactedKvCache& cache_;
  bool is_query_host_;
  RocketConfig config_;
  int64_t floats_sent_ = 0;
  double gather_merge_seconds_ = 0;
  int64_t rows_attended_ = 0;
  int64_t rows_held_ = 0;
  std::vector<int64_t> selected_;
  std::vector<std::byte> k_selected_, v_selected_;
  std::vector<float> q_group_, out_group_, lse_group_;
  std::vector<float> local_, gathered_, partial_out_, partial_lse_, lse_;
};

}  // namespace star::rocket
