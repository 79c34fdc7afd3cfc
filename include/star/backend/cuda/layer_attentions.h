// The DeviceLayerAttention implementations, the GPU twins of star/attention/layer_attentions.h:
// the situations of star/attention/attention_situations.h bound to the CUDA primitives.
//
//   DeviceCausalAttention        append to one device cache, attend to all of it causally
//                                (single-GPU prefill and decoding, dense Phase 1, prefix steps).
//   DevicePrefixedBlockAttention attend to a read-only prefix (anchor / sink + summaries) without
//                                mask and causally to the block; only the block's KV enters the shard.
//   DeviceShardedQueryAttention  Phase 2: attend to the local shard (the query host also to the
//                                query and generated tokens, causally), all-gather the packed
//                                (out, lse) of every rank, merge on the device.
//   DeviceBatchedShardedQueryAttention  Phase 2 of many sequences at once: each slot's read-only
//                                context shard, the query host's own-token cache per slot, one
//                                all-gather and one merge for every slot's rows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "star/attention/attention_shape.h"
#include "star/attention/attention_situations.h"
#include "star/attention/block_plan.h"
#include "star/backend/cuda/attention_primitives.h"
#include "star/backend/cuda/kv_cache.h"
#include "star/backend/cuda/layer_attention.h"
#include "star/dist/communicator.h"

namespace star::cuda {

class DeviceCausalAttention final : public DeviceLayerAttention {
 public:
  DeviceCausalAttention(AttentionShape shape, DeviceKvCache& cache, AttentionWindow window = {})
      : situation_(shape, cache, window) {}
  Status begin(int64_t n_new, cudaStream_t stream) override { return situation_.begin(n_new, stream); }
  Status attend(int64_t layer, const float* q, const float* k, const float* v, int64_t n, float* out,
                cudaStream_t stream) override {
    return situation_.attend(layer, q, k, v, n, out, skip_softmax(), stream);
  }

 private:
  CausalSituation<AttentionPrimitives> situation_;
};

class DevicePrefixedBlockAttention final : public DeviceLayerAttention {
 public:
  // block_first and window as on the CPU: the shard row where the block starts, and the window of
  // the block's own keys when the prefix is empty (StreamingLLM).
  DevicePrefixedBlockAttention(AttentionShape shape, const DeviceKvCache& prefix, DeviceKvCache& shard,
                               int64_t block_first, AttentionWindow window = {})
      : situation_(shape, prefix, shard, block_first, window) {}
  Status begin(int64_t n_new, cudaStream_t stream) override { return situation_.begin(n_new, stream); }
  Status attend(int64_t layer, const float* q, const float* k, const float* v, int64_t n, float* out,
                cudaStream_t stream) override {
    return situation_.attend(layer, q, k, v, n, out, skip_softmax(), stream);
  }

 private:
  PrefixedBlockSituation<AttentionPrimitives> situation_;
};

class DeviceShardedQueryAttention final : public DeviceLayerAttention {
 public:
  // comm must take device buffers (NcclCommunicator, or a CUDA-aware transport). Over NCCL the
  // all-gather and the merge are ordered on the model's stream and the host waits for neither; a
  // transport that runs on the host gets the stream synchronized before each all-gather.
  // is_query_host: this rank appends the new tokens' KV to its shard and masks them causally;
  // the other ranks attend to their whole shard without a mask.
  DeviceShardedQueryAttention(AttentionShape shape, Communicator& comm, DeviceKvCache& shard, bool is_query_host,
                              AttentionWindow window = {})
      : situation_(shape, comm, shard, is_query_host, window) {}
  Status begin(int64_t n_new, cudaStream_t stream) override { return situation_.begin(n_new, stream); }
  Status attend(int64_t layer, const float* q, const float* k, const float* v, int64_t n, float* out,
                cudaStream_t stream) override {
    return situation_.attend(layer, q, k, v, n, out, skip_softmax(), stream);
  }

  // Floats this rank sent in all-gathers so far (Hq·(d+1) per layer and token).
  int64_t floats_sent() const { return situation_.floats_sent(); }
  // Wall seconds in the all-gather and the merge, on the host: over NCCL the time to enqueue both.
  double gather_merge_seconds() const { return situation_.gather_merge_seconds(); }

 private:
  ShardedQuerySituation<AttentionPrimitives> situation_;
};

class DeviceBatchedShardedQueryAttention final : public DeviceLayerAttention {
 public:
  using Slot = BatchedQuerySlot<AttentionPrimitives>;
  // comm as for DeviceShardedQueryAttention. Each slot carries its own S (this attention's is unused).
  DeviceBatchedShardedQueryAttention(AttentionShape shape, Communicator& comm, std::vector<Slot> slots)
      : situation_(shape, comm, std::move(slots)) {}
  Status begin(int64_t n_new, cudaStream_t stream) override { return situation_.begin(n_new, stream); }
  Status attend(int64_t layer, const float* q, const float* k, const float* v, int64_t n, float* out,
                cudaStream_t stream) override {
    return situation_.attend(layer, q, k, v, n, out, stream);
  }

  int64_t floats_sent() const { return situation_.floats_sent(); }
  double gather_merge_seconds() const { return situation_.gather_merge_seconds(); }
  SkipSoftmaxTiles slot_tiles(size_t slot) const { return situation_.slot_tiles(slot); }
  size_t slots() const { return situation_.slots(); }

 private:
  BatchedQuerySituation<AttentionPrimitives> situation_;
};

}  // namespace star::cuda
