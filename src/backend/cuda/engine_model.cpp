#include "star/backend/cuda/engine_model.h"

#include <cuda_bf16.h>

#include <string>
#include <type_traits>
#include <utility>

#include "star/backend/cuda/cuda_status.h"
#include "star/backend/cuda/kv_cache.h"
#include "star/backend/cuda/layer_attentions.h"
#include "star/backend/cuda/llama_model.h"

namespace star::cuda {
namespace {

// A DeviceKvCache as the engine's shard; bytes() counts the bf16 rows in use.
class DeviceKvShard final : public KvShard {
 public:
  explicit DeviceKvShard(DeviceKvCache cache) : cache(std::move(cache)) {}
  int64_t tokens() const override { return cache.tokens(); }
  size_t bytes() const override {
    return static_cast<size_t>(cache.tokens() * cache.row_elements()) * 2 * cache.n_layers() * sizeof(__nv_bfloat16);
  }
  void truncate(int64_t tokens) override { cache.truncate(tokens); }

  DeviceKvCache cache;
};

class DeviceAttention : public EngineAttention {
 public:
  virtual DeviceLayerAttention& layer() = 0;
};

template <typename Attention>
class DeviceAttentionOf final : public DeviceAttention {
 public:
  template <typename... Args>
  explicit DeviceAttentionOf(Args&&... args) : attention_(std::forward<Args>(args)...) {}
  DeviceLayerAttention& layer() override { return attention_; }
  int64_t floats_sent() const override {
    if constexpr (std::is_same_v<Attention, DeviceShardedQueryAttention>) return attention_.floats_sent();
    return 0;
  }
  double gather_merge_seconds() const override {
    if constexpr (std::is_same_v<Attention, DeviceShardedQueryAttention>) return attention_.gather_merge_seconds();
    return 0;
  }
  void set_skip_softmax(double scale_factor) override { attention_.set_skip_softmax(scale_factor); }
  SkipSoftmaxTiles skip_softmax_tiles() const override { return attention_.skip_softmax_tiles(); }

 private:
  Attention attention_;
};

template <typename Attention, typename... Args>
Result<std::unique_ptr<EngineAttention>> make(Args&&... args) {
  return std::unique_ptr<EngineAttention>(std::make_unique<DeviceAttentionOf<Attention>>(std::forward<Args>(args)...));
}

template <typename Shard>
auto* cache_of(Shard& shard) {
  using Device = std::conditional_t<std::is_const_v<Shard>, const DeviceKvShard, DeviceKvShard>;
  auto* device = dynamic_cast<Device*>(&shard);
  return device == nullptr ? nullptr : &device->cache;
}

Status foreign(const char* what) { return invalid_argument(std::string("cuda backend: ") + what + " of another backend"); }

Status no_ring() {
  return unimplemented("the cuda backend has no ring pass (K/V would travel through host memory every layer); "
                       "run ring with --backend cpu, or choose another algorithm");
}

class CudaEngineModel final : public EngineModel {
 public:
  CudaEngineModel(std::unique_ptr<DeviceLlamaModel> model, std::unique_ptr<Communicator> device_comm, int device)
      : model_(std::move(model)), device_comm_(std::move(device_comm)), device_(device) {}

  const LlamaConfig& config() const override { return model_->config(); }
  std::string_view backend_name() const override { return "cuda"; }
  int64_t kv_bytes_per_token() const override {
    const LlamaConfig& c = model_->config();
    return 2 * c.n_layers * c.n_kv_heads * c.head_dim * int64_t{sizeof(__nv_bfloat16)};
  }
  KvDType kv_dtype() const override { return KvDType::kBF16; }
  Status supports(EncodeStep::Kind kind) const override {
    return kind == EncodeStep::Kind::kRingSegment ? no_ring() : ok_status();
  }

  Result<std::unique_ptr<KvShard>> new_shard(int64_t capacity) override {
    if (Status s = make_current(); !s.ok()) return s;
    const LlamaConfig& c = config();
    Result<DeviceKvCache> cache = DeviceKvCache::create(c.n_layers, c.n_kv_heads, c.head_dim, capacity);
    if (!cache.ok()) return cache.status();
    return std::unique_ptr<KvShard>(std::make_unique<DeviceKvShard>(std::move(*cache)));
  }

  Status append(const KvShard& from_shard, KvShard& to_shard) override {
    const DeviceKvCache* from = cache_of(from_shard);
    DeviceKvCache* to = cache_of(to_shard);
    if (from == nullptr || to == nullptr) return foreign("append: a shard");
    if (Status s = make_current(); !s.ok()) return s;
    Result<int64_t> first = to->grow(from->tokens(), model_->stream());
    if (!first.ok()) return first.status();
    const size_t bytes = static_cast<size_t>(from->tokens() * from->row_elements()) * sizeof(__nv_bfloat16);
    if (bytes == 0) return ok_status();
    for (int64_t l = 0; l < from->n_layers(); ++l) {
      const int64_t offset = *first * to->row_elements();
      for (auto [dst, src] : {std::pair{to->keys(l) + offset, from->keys(l)}, std::pair{to->values(l) + offset, from->values(l)}}) {
        if (Status s = cuda_status(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, model_->stream()),
                                   "cuda backend: appending KV rows");
            !s.ok()) {
          return s;
        }
      }
    }
    return ok_status();
  }

  Result<std::unique_ptr<EngineAttention>> local_causal(KvShard& cache) override {
    DeviceKvCache* c = cache_of(cache);
    if (c == nullptr) return foreign("local_causal: a shard");
    return make<DeviceCausalAttention>(AttentionShape::of(config()), *c);
  }

  Result<std::unique_ptr<EngineAttention>> prefixed_block(const KvShard& prefix, KvShard& shard, int64_t block_first,
                                                          AttentionWindow window) override {
    const DeviceKvCache* p = cache_of(prefix);
    DeviceKvCache* s = cache_of(shard);
    if (p == nullptr || s == nullptr) return foreign("prefixed_block: a shard");
    return make<DevicePrefixedBlockAttention>(AttentionShape::of(config()), *p, *s, block_first, window);
  }

  Result<std::unique_ptr<EngineAttention>> ring_segment(Communicator&, KvShard&, std::vector<int64_t>) override {
    return no_ring();
  }

  Result<std::unique_ptr<EngineAttention>> sharded_query(Communicator& comm, KvShard& shard, bool is_query_host,
                                                         AttentionWindow window) override {
    DeviceKvCache* s = cache_of(shard);
    if (s == nullptr) return foreign("sharded_query: a shard");
    Communicator* gather = &comm;  // one rank never gathers
    if (comm.size() > 1) {
      if (device_comm_ == nullptr) {
        return failed_precondition("cuda backend: Phase 2 over " + std::to_string(comm.size()) +
                                   " ranks needs a device communicator (NCCL)");
      }
      if (device_comm_->rank() != comm.rank() || device_comm_->size() != comm.size()) {
        return failed_precondition("cuda backend: the device communicator is rank " +
                                   std::to_string(device_comm_->rank()) + " of " + std::to_string(device_comm_->size()) +
                                   ", the engine's rank " + std::to_string(comm.rank()) + " of " +
                                   std::to_string(comm.size()));
      }
      gather = device_comm_.get();
    }
    return make<DeviceShardedQueryAttention>(AttentionShape::of(config()), *gather, *s, is_query_host, window);
  }

  Result<std::vector<float>> forward(std::span<const int32_t> tokens, std::span<const int32_t> positions,
                                     EngineAttention& attention, int64_t logit_rows) override {
    auto* device = dynamic_cast<DeviceAttention*>(&attention);
    if (device == nullptr) return foreign("forward: an attention");
    if (Status s = make_current(); !s.ok()) return s;
    return model_->forward(tokens, positions, device->layer(), logit_rows);
  }

  Status synchronize() override {
    if (Status s = make_current(); !s.ok()) return s;
    return cuda_status(cudaStreamSynchronize(model_->stream()), "cuda backend: waiting for the model's stream");
  }

 private:
  Status make_current() const { return cuda_status(cudaSetDevice(device_), "cuda backend: cudaSetDevice"); }

  std::unique_ptr<DeviceLlamaModel> model_;
  std::unique_ptr<Communicator> device_comm_;
  int device_ = 0;
};

}  // namespace

Result<std::unique_ptr<EngineModel>> make_engine_model(const LlamaModel& llama,
                                                       std::unique_ptr<Communicator> device_comm) {
  if (device_count() == 0) return failed_precondition("cuda backend: no CUDA device (cudaGetDeviceCount = 0)");
  int device = 0;
  if (Status s = cuda_status(cudaGetDevice(&device), "cuda backend: cudaGetDevice"); !s.ok()) return s;
  Result<std::unique_ptr<DeviceLlamaModel>> model = DeviceLlamaModel::create(llama.config(), llama.weights());
  if (!model.ok()) return model.status();
  return std::unique_ptr<EngineModel>(
      std::make_unique<CudaEngineModel>(std::move(*model), std::move(device_comm), device));
}

}  // namespace star::cuda
