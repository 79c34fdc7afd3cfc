// The LayerAttention implementations of the CPU backend: what new tokens attend to in each situation.
//
//   LocalCausalAttention    append to one cache, attend to all of it causally (single sequence,
//                           dense Phase 1, a plan's prefix steps).
//   PrefixedBlockAttention  attend to a read-only prefix (anchor / sink + summaries) without mask
//                           and causally to the block itself; only the block's KV enters the shard.
//   RingSegmentAttention    exact ring: the segment's KV travels around the ring each layer; attend
//                           to every earlier rank's segment fully and causally to its own.
//   ShardedQueryAttention   Phase 2: attend to the local shard (the query host also to the query
//                           and generated tokens, causally), all-gather (out, lse), merge.
//   BatchedShardedQueryAttention  Phase 2 of many sequences at once: each slot's read-only context
//                           shard, the query host's own-token cache per slot, one all-gather.
// Partial results over disjoint key sets always combine through merge_partials. The causal,
// prefixed-block and sharded-query situations are written once, in attention_situations.h, for
// every backend; these classes bind them to the CPU's primitives. The ring exists on the CPU only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "star/attention/attention_shape.h"
#include "star/attention/attention_situations.h"
#include "star/attention/block_plan.h"
#include "star/backend/cpu/attention_primitives.h"
#include "star/dist/communicator.h"
#include "star/model/kv_cache.h"
#include "star/model/layer_attention.h"

namespace star {

class LocalCausalAttention final : public LayerAttention {
 public:
  LocalCausalAttention(AttentionShape shape, KvCache& cache, AttentionWindow window = {})
      : situation_(shape, cache, window) {}
  Status begin(int64_t n_new) override { return situation_.begin(n_new, {}); }
  Status attend(int64_t layer, const float* q, const float* k, const float* v, int64_t n, float* out) override {
    return situation_.attend(layer, q, k, v, n, out, skip_softmax(), {});
  }

 private:
  CausalSituation<cpu::AttentionPrimitives> situation_;
};

class PrefixedBlockAttention final : public LayerAttention {
 public:
  // block_first: the shard row where the block starts (its earlier chunks lie between it and the
  // new rows). window applies to the block's own keys (StreamingLLM runs with an empty prefix).
  PrefixedBlockAttention(AttentionShape shape, const KvCache& prefix, KvCache& shard, int64_t block_first,
                         AttentionWindow window = {})
      : situation_(shape, prefix, shard, block_first, window) {}
  Status begin(int64_t n_new) override { return situation_.begin(n_new, {}); }
  Status attend(int64_t layer, const float* q, const float* k, const float* v, int64_t n, float* out) override {
    return situation_.attend(layer, q, k, v, n, out, skip_softmax(), {});
  }

 private:
  PrefixedBlockSituation<cpu::AttentionPrimitives> situation_;
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
  std::vector<std::byte> segment_bf16_;  // a passed segment of a bf16 shard, as the cache stores it
};

class ShardedQueryAttention final : public LayerAttention {
 public:
  // is_query_host: this rank appends the new tokens' KV to its shard and masks them causally.
  ShardedQueryAttention(AttentionShape shape, Communicator& comm, KvCache& shard, bool is_query_host,
                        AttentionWindow window = {})
      : situation_(shape, comm, shard, is_query_host, window) {}
  Status begin(int64_t n_new) override { return situation_.begin(n_new, {}); }
  Status attend(int64_t layer, const float* q, const float* k, const float* v, int64_t n, float* out) override {
    return situation_.attend(layer, q, k, v, n, out, skip_softmax(), {});
  }

  // Floats this rank sent in all-gathers so far (Hq·(d+1) per layer and token).
  int64_t floats_sent() const { return situation_.floats_sent(); }
  // Wall seconds spent in the all-gather and the merge so far.
  double gather_merge_seconds() const { return situation_.gather_merge_seconds(); }

 private:
  ShardedQuerySituation<cpu::AttentionPrimitives> situation_;
};

class BatchedShardedQueryAttention final : public LayerAttention {
 public:
  using Slot = BatchedQuerySlot<cpu::AttentionPrimitives>;
  // The forward's rows are the slots' rows in slot order; each slot carries its own S (the
  // LayerAttention's is unused).
  BatchedShardedQueryAttention(AttentionShape shape, Communicator& comm, std::vector<Slot> slots)
      : situation_(shape, comm, std::move(slots)) {}
  Status begin(int64_t n_new) override { return situation_.begin(n_new, {}); }
  Status attend(int64_t layer, const float* q, const float* k, const float* v, int64_t n, float* out) override {
    return situation_.attend(layer, q, k, v, n, out, {});
  }

  int64_t floats_sent() const { return situation_.floats_sent(); }
  double gather_merge_seconds() const { return situation_.gather_merge_seconds(); }
  SkipSoftmaxTiles slot_tiles(size_t slot) const { return situation_.slot_tiles(slot); }
  size_t slots() const { return situation_.slots(); }

 private:
  BatchedQuerySituation<cpu::AttentionPrimitives> situation_;
};

}  // namespace star
