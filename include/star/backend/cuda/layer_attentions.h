// The DeviceLayerAttention implementations, the GPU twins of star/attention/layer_attentions.h:
//
//   DeviceCausalAttention        append to one device cache, attend to all of it causally
//                                (single-GPU prefill and decoding, dense Phase 1, prefix steps).
//   DevicePrefixedBlockAttention attend to a read-only prefix (anchor / sink + summaries) without
//                                mask and causally to the block; only the block's KV enters the shard.
//   DeviceShardedQueryAttention  Phase 2: attend to the local shard (the query host also to the
//                                query and generated tokens, causally), all-gather the packed
//                                (out, lse) of every rank, merge on the device.
#pragma once

#include <cstdint>

#include "star/attention/block_plan.h"
#include "star/attention/layer_attentions.h"
#include "star/backend/cuda/device_buffer.h"
#include "star/backend/cuda/kv_cache.h"
#include "star/backend/cuda/layer_attention.h"
#include "star/dist/communicator.h"

namespace star::cuda {

class DeviceCausalAttention final : public DeviceLayerAttention {
 public:
  DeviceCausalAttention(AttentionShape shape, DeviceKvCache& cache, AttentionWindow window = {});
  Status begin(int64_t n_new, cudaStream_t stream) override;
  Status attend(int64_t layer, const float* q, const float* k, const float* v, int64_t n,
                float* out, cudaStream_t stream) override;

 private:
  AttentionShape shape_;
  DeviceKvCache& cache_;
  AttentionWindow window_;
  int64_t first_ = 0;
  DeviceBuffer<float> lse_;
};

class DevicePrefixedBlockAttention final : public DeviceLayerAttention {
 public:
  // window applies to the block's own keys when the prefix is empty (StreamingLLM), as on the CPU.
  DevicePrefixedBlockAttention(AttentionShape shape, const DeviceKvCache& prefix, DeviceKvCache& shard,
                               AttentionWindow window = {});
  Status begin(int64_t n_new, cudaStream_t stream) override;
  Status attend(int64_t layer, const float* q, const float* k, const float* v, int64_t n,
                float* out, cudaStream_t stream) override;

 private:
  AttentionShape shape_;
  const DeviceKvCache& prefix_;
  DeviceKvCache& shard_;
  AttentionWindow window_;
  int64_t first_ = 0;
  DeviceBuffer<float> partial_out_;  // [2, n, Hq, d]: prefix, block
  DeviceBuffer<float> partial_lse_;  // [2, n, Hq]
  DeviceBuffer<float> lse_;          // [n, Hq]
};

class DeviceShardedQueryAttention final : public DeviceLayerAttention {
 public:
  // comm must take device buffers (NcclCommunicator, or a CUDA-aware transport); the stream is
  // synchronized before each all-gather, so comm may run on a stream of its own.
  // is_query_host: this rank appends the new tokens' KV to its shard and masks them causally;
  // the other ranks attend to their whole shard without a mask.
  DeviceShardedQueryAttention(AttentionShape shape, Communicator& comm, DeviceKvCache& shard,
                              bool is_query_host, AttentionWindow window = {});
  Status begin(int64_t n_new, cudaStream_t stream) override;
  Status attend(int64_t layer, const float* q, const float* k, const float* v, int64_t n,
                float* out, cudaStream_t stream) override;

  // Floats this rank sent in all-gathers so far (Hq·(d+1) per layer and token).
  int64_t floats_sent() const { return floats_sent_; }
  // Wall seconds in the all-gather and launching the merge (which then runs asynchronously).
  double gather_merge_seconds() const { return gather_merge_seconds_; }

 private:
  AttentionShape shape_;
  Communicator& comm_;
  DeviceKvCache& shard_;
  bool is_query_host_;
  AttentionWindow window_;
  int64_t first_ = 0;
  int64_t floats_sent_ = 0;
  double gather_merge_seconds_ = 0;
  DeviceBuffer<float> local_;     // [out n·Hq·d | lse n·Hq]
  DeviceBuffer<float> gathered_;  // P × local
  DeviceBuffer<float> lse_;       // [n, Hq] of the merge
};

}  // namespace star::cuda
