#include "star/backend/cuda/kv_cache.h"

#include <algorithm>
#include <string>

#include "star/model/dtype.h"

namespace star::cuda {

Result<DeviceKvCache> DeviceKvCache::create(int64_t n_layers, int64_t n_kv_heads, int64_t head_dim,
                                            int64_t capacity) {
  if (n_layers <= 0 || n_kv_heads <= 0 || head_dim <= 0 || capacity < 0) {
    return invalid_argument("DeviceKvCache: need layers, kv heads and head_dim > 0 and capacity >= 0, got " +
                            std::to_string(n_layers) + ", " + std::to_string(n_kv_heads) + ", " +
                            std::to_string(head_dim) + ", " + std::to_string(capacity));
  }
  DeviceKvCache cache;
  cache.row_elements_ = n_kv_heads * head_dim;
  cache.capacity_ = capacity;
  const auto elements = static_cast<size_t>(capacity * cache.row_elements_);
  for (int64_t l = 0; l < n_layers; ++l) {
    auto k = DeviceBuffer<__nv_bfloat16>::allocate(elements);
    if (!k.ok()) return k.status();
    auto v = DeviceBuffer<__nv_bfloat16>::allocate(elements);
    if (!v.ok()) return v.status();
    cache.keys_.push_back(std::move(*k));
    cache.values_.push_back(std::move(*v));
  }
  return cache;
}

size_t DeviceKvCache::bytes() const {
  return 2 * keys_.size() * static_cast<size_t>(capacity_ * row_elements_) * sizeof(__nv_bfloat16);
}

Result<int64_t> DeviceKvCache::grow(int64_t n, cudaStream_t stream) {
  if (n < 0) return invalid_argument("DeviceKvCache::grow: n must be >= 0, got " + std::to_string(n));
  const int64_t first = tokens_;
  if (tokens_ + n > capacity_) {
    const int64_t capacity = std::max(tokens_ + n, 2 * capacity_);
    const auto elements = static_cast<size_t>(capacity * row_elements_);
    const size_t used_bytes = static_cast<size_t>(tokens_ * row_elements_) * sizeof(__nv_bfloat16);
    for (auto* layers : {&keys_, &values_}) {
      for (DeviceBuffer<__nv_bfloat16>& layer : *layers) {
        auto bigger = DeviceBuffer<__nv_bfloat16>::allocate(elements);
        if (!bigger.ok()) return bigger.status();
        if (used_bytes > 0) {
          if (Status s = cuda_status(cudaMemcpyAsync(bigger->data(), layer.data(), used_bytes,
                                                     cudaMemcpyDeviceToDevice, stream),
                                     "DeviceKvCache::grow: copying rows");
              !s.ok()) {
            return s;
          }
          // The old buffer is freed below; its copy must be done first.
          if (Status s = cuda_status(cudaStreamSynchronize(stream), "DeviceKvCache::grow"); !s.ok()) {
            return s;
          }
        }
        layer = std::move(*bigger);
      }
    }
    capacity_ = capacity;
  }
  tokens_ += n;
  return first;
}

void DeviceKvCache::truncate(int64_t tokens) { tokens_ = std::clamp<int64_t>(tokens, 0, tokens_); }

Status DeviceKvCache::append_from_host(const KvCache& host, cudaStream_t stream) {
  if (host.n_layers() != n_layers() || host.row_elements() != row_elements_) {
    return invalid_argument("DeviceKvCache::append_from_host: host cache has " +
                            std::to_string(host.n_layers()) + " layers of " +
                            std::to_string(host.row_elements()) + " elements per row, this one " +
                            std::to_string(n_layers()) + " of " + std::to_string(row_elements_));
  }
  Result<int64_t> first = grow(host.tokens(), stream);
  if (!first.ok()) return first.status();
  const auto count = static_cast<size_t>(host.tokens() * row_elements_);
  if (count == 0) return ok_status();
  std::vector<float> host_rows(count);
  std::vector<__nv_bfloat16> staging(count);
  for (int64_t l = 0; l < n_layers(); ++l) {
    for (int side = 0; side < 2; ++side) {
      const KvRows src = side == 0 ? host.keys(l) : host.values(l);
      decode_kv(src.dtype, src.data, static_cast<int64_t>(count), host_rows.data());
      __nv_bfloat16* dst = (side == 0 ? keys(l) : values(l)) + *first * row_elements_;
      for (size_t i = 0; i < count; ++i) {
        __nv_bfloat16_raw raw;
        raw.x = f32_to_bf16(host_rows[i]);
        staging[i] = __nv_bfloat16(raw);
      }
      if (Status s = cuda_status(cudaMemcpyAsync(dst, staging.data(), count * sizeof(__nv_bfloat16),
                                                 cudaMemcpyHostToDevice, stream),
                                 "DeviceKvCache::append_from_host");
          !s.ok()) {
        return s;
      }
      // staging is refilled next round: the copy must have read it.
      if (Status s = cuda_status(cudaStreamSynchronize(stream), "DeviceKvCache::append_from_host");
          !s.ok()) {
        return s;
      }
    }
  }
  return ok_status();
}

}  // namespace star::cuda
