// DeviceKvCache: the keys and values of one sequence, or of one rank's shard, on the GPU.
// Layer l holds K and V as [capacity, Hkv, d] bf16 rows (half the memory of float32: 128 KiB per
// token for Llama-3.1-8B); the first tokens() rows are in use. attention_forward reads bf16 K/V.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "star/backend/cuda/device_buffer.h"
#include "star/common/status.h"
#include "star/model/kv_cache.h"

namespace star::cuda {

class DeviceKvCache {
 public:
  DeviceKvCache() = default;
  // Room for `capacity` tokens in each of n_layers layers, none in use.
  static Result<DeviceKvCache> create(int64_t n_layers, int64_t n_kv_heads, int64_t head_dim,
                                      int64_t capacity);

  int64_t tokens() const { return tokens_; }
  int64_t capacity() const { return capacity_; }
  int64_t n_layers() const { return static_cast<int64_t>(keys_.size()); }
  int64_t row_elements() const { return row_elements_; }  // Hkv × d
  size_t bytes() const;                                    // allocated, not in use

  // Adds n rows (contents unset) to every layer and returns the index of the first new row.
  // When the capacity is exceeded it at least doubles, copying the rows in use on `stream`.
  Result<int64_t> grow(int64_t n, cudaStream_t stream);
  void truncate(int64_t tokens);

  __nv_bfloat16* keys(int64_t layer) { return keys_[static_cast<size_t>(layer)].data(); }
  __nv_bfloat16* values(int64_t layer) { return values_[static_cast<size_t>(layer)].data(); }
  const __nv_bfloat16* keys(int64_t layer) const { return keys_[static_cast<size_t>(layer)].data(); }
  const __nv_bfloat16* values(int64_t layer) const {
    return values_[static_cast<size_t>(layer)].data();
  }

  // Appends every row of a host cache (Phase 1 encoded on the CPU, Phase 2 run on the GPU),
  // rounding to bf16. The host cache must have the same layers and row size.
  Status append_from_host(const KvCache& host, cudaStream_t stream);

 private:
  std::vector<DeviceBuffer<__nv_bfloat16>> keys_;
  std::vector<DeviceBuffer<__nv_bfloat16>> values_;
  int64_t row_elements_ = 0;
  int64_t tokens_ = 0;
  int64_t capacity_ = 0;
};

}  // namespace star::cuda
