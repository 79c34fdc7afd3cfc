// RocketContextPartial: a compacted context shard (RocketKV after stage 1) as one slot's context in
// a batched Phase 2 forward. The shard stays read-only; the slot's own tokens live in its own
// cache. Selection per KV head, as RocketQueryAttention makes it:
//   - a slot with several rows (its query) attends to every kept row;
//   - a one-row slot (a decode step) runs stage 2: the rows of the top min(topk, P) KT pages, plus,
//     on the query host, the context's rows inside the `window_size` tokens before the step's
//     (those of them that are own tokens are in the own cache, attended in full).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "star/attention/attention_shape.h"
#include "star/attention/attention_situations.h"
#include "star/attention/rocket/compacted_kv_cache.h"
#include "star/attention/sparse_attention_config.h"
#include "star/backend/cpu/attention_primitives.h"

namespace star::rocket {

class RocketContextPartial final : public ContextPartial<cpu::AttentionPrimitives::Context> {
 public:
  RocketContextPartial(AttentionShape shape, const CompactedKvCache& cache, const RocketConfig& config)
      : shape_(shape), cache_(cache), config_(config) {}

  int64_t tokens() const override { return cache_.tokens(); }
  Status attend(int64_t layer, const float* q, int64_t n, int64_t own_first, float* out, float* lse,
                const SkipSoftmax& skip, cpu::AttentionPrimitives::Context) override;

 private:
  // Rows of (layer, kv) a decode step with query group q [G, d] attends to, ascending; empty when
  // that is every row.
  const std::vector<int64_t>& decode_rows(int64_t layer, int64_t kv, const float* q, int64_t own_first);

  AttentionShape shape_;
  const CompactedKvCache& cache_;
  RocketConfig config_;
  std::vector<int64_t> selected_;
  std::vector<std::byte> k_selected_, v_selected_;
  std::vector<float> q_group_, out_group_, lse_group_;
};

}  // namespace star::rocket
