// The LayerAttention implementations: what new tokens attend to in each situation.
//
//   LocalCausalAttention    append to one cache, attend to all of it causally (single sequence,
//                           dense Phase 1, a plan's prefix steps).
//   PrefixedBlockAttention  attend to a read-only prefix (anchor / sink + summaries) without mask
//                           and causally to the block itself; only the block's KV enters the shard.
//   RingSegmentAttention    exact ring: the segment's KV travels around the ring each layer; attend
//                           to every earlier rank's segment fully and causally to its own.
//   ShardedQueryAttention   Phase 2: attend to the local shard (the query host also to the query
//                           and generated tokens, causally), all-gather (out, lse), merge.
// Partial results over disjoint key sets always combine through merge_partials.
#pragma once

#include <cstdint>
#include <vector>

#include "star/attention/block_plan.h"
#include "star/dist/communicator.h"
#include "star/model/kv_cache.h"
#include "star/model/layer_attention.h"
#include "star/model/llama_config.h"

namespace star {

// Head geometry shared by every implementation.
struct AttentionShape {
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  static AttentionShape of(const LlamaConfig& c) { return {c.n_heads, c.n_kv_heads, c.head_dim}; }
  int64_t q_floats() const { return n_heads * head_dim; }
  int64_t kv_floats() const { return n_kv_heads * head_dim; }
};

class LocalCausalAttention final : public LayerAttention {
 public:
  LocalCausalAttention(AttentionShape shape, KvCache& cache, AttentionWindow window = {});
  Status begin(int64_t n_new) override;
  Status attend(int64_t layer, const float* q, const float* k, const float* v, int64_t n, float* out) override;

 private:
  AttentionShape shape_;
  KvCache& cache_;
  AttentionWindow window_;
  int64_t first_ = 0;
  std::vector<float> lse_;
};

class PrefixedBlockAttention final : public LayerAttention {
 public:
  // window applies to the block's own keys (StreamingLLM runs with an empty prefix).
  PrefixedBlockAttention(AttentionShape shape, const KvCache& prefix, KvCache& shard, AttentionWindow window = {});
  Status begin(int64_t n_new) override;
  Status attend(int64_t layer, const float* q, const float* k, const float* v, int64_t n, float* out) override;

 private:
  AttentionShape shape_;
  const KvCache& prefix_;
  KvCache& shard_;
  AttentionWindow window_;
  int64_t first_ = 0;
  std::vector<float> partial_out_, partial_lse_, lse_;
};

class RingSegmentAttention final : public LayerAttention {
 public:
  // segment_tokens[r]: the length of rank r's segment (this rank's must equal the tokens passed).
  RingSegmentAttention(AttentionShape shape, Communicator& comm, KvCache& shard,
                       std::vector<int64_t> segment_tokens);
  Status begin(int64_t n_new) override;
  Status attend(int64_t layer, const float* q, const float* k, const float* v, int64_t n, float* out) override;

  // CPU seconds spent passing KV around the ring (sending, receiving, waiting), not attending.
  double communication_cpu_seconds() const { return communication_cpu_seconds_; }

 private:
  AttentionShape shape_;
  Communicator& comm_;
  KvCache& shard_;
  std::vector<int64_t> segment_tokens_;
  double communication_cpu_seconds_ = 0;
  int64_t first_ = 0;
  std::vector<float> packed_, partial_out_, partial_lse_, lse_;
};

class ShardedQueryAttention final : public LayerAttention {
 public:
  // is_query_host: this rank appends the new tokens' KV to its shard and masks them causally.
  ShardedQueryAttention(AttentionShape shape, Communicator& comm, KvCache& shard, bool is_query_host,
                        AttentionWindow window = {});
  Status begin(int64_t n_new) override;
  Status attend(int64_t layer, const float* q, const float* k, const float* v, int64_t n, float* out) override;

  // Floats this rank sent in all-gathers so far (Hq·(d+1) per layer and token).
  int64_t floats_sent() const { return floats_sent_; }
  // Wall seconds spent in the all-gather and the merge so far.
  double gather_merge_seconds() const { return gather_merge_seconds_; }

 private:
  AttentionShape shape_;
  Communicator& comm_;
  KvCache& shard_;
  bool is_query_host_;
  AttentionWindow window_;
  int64_t first_ = 0;
  int64_t floats_sent_ = 0;
  double gather_merge_seconds_ = 0;
  std::vector<float> local_, gathered_, partial_out_, partial_lse_, lse_;
};

}  // namespace star
