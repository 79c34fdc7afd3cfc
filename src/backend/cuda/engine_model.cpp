#include "star/backend/cuda/engine_model.h"

#include <cuda_bf16.h>

#include <string>
#include <type_traits>
#include <utility>

#include "star/backend/cuda/cuda_status.h"
#include "star/backend/cuda/kv_cache.h"
#include "star/backend/cuda/layer_attentions.h"
#include "star/backend/cuda/llama_model.h"
#include "star/engine/row_split.h"

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

// What forward() needs of an EngineAttention this backend made: its DeviceLayerAttention. A side
// interface, so that a BatchedQueryAttention can be one too.
class DeviceAttention {
 public:
  virtual ~DeviceAttention() = default;
  virtual DeviceLayerAttention& layer() = 0;
};

DeviceAttention* device_attention(EngineAttention& attention) { return dynamic_cast<DeviceAttention*>(&attention); }

template <typename Attention>
class DeviceAttentionOf final : public EngineAttention, public DeviceAttention {
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

class DeviceBatchedQuery final : public BatchedQueryAttention, public DeviceAttention {
 public:
  DeviceBatchedQuery(AttentionShape shape, Communicator& comm, std::vector<DeviceBatchedShardedQueryAttention::Slot> slots)
      : attention_(shape, comm, std::move(slots)) {}
  DeviceLayerAttention& layer() override { return attention_; }
  int64_t floats_sent() const override { return attention_.floats_sent(); }
  double gather_merge_seconds() const override { return attention_.gather_merge_seconds(); }
  void set_skip_softmax(double) override {}
  SkipSoftmaxTiles skip_softmax_tiles() const override {
    SkipSoftmaxTiles total;
    for (size_t i = 0; i < attention_.slots(); ++i) total += attention_.slot_tiles(i);
    return total;
  }
  SkipSoftmaxTiles slot_tiles(size_t slot) const override { return attention_.slot_tiles(slot); }

 private:
  DeviceBatchedShardedQueryAttention attention_;
};

using DeviceRowSplitLayer = RowSplitLayer<DeviceLayerAttention, cudaStream_t>;

class DeviceRowSplit final : public RowSplitStats, public DeviceAttention {
 public:
  DeviceRowSplit(AttentionShape shape, std::vector<RowPart> parts, std::vector<DeviceRowSplitLayer::Part> layers)
      : RowSplitStats(std::move(parts)), layer_(shape, std::move(layers)) {}
  DeviceLayerAttention& layer() override { return layer_; }

 private:
  DeviceRowSplitLayer layer_;
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

Status foreign(const std::string& what) { return invalid_argument("cuda backend: " + what + " of another backend"); }

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
    Result<Communicator*> gather = gather_communicator(comm);
    if (!gather.ok()) return gather.status();
    return make<DeviceShardedQueryAttention>(AttentionShape::of(config()), **gather, *s, is_query_host, window);
  }

  Result<std::unique_ptr<BatchedQueryAttention>> batched_query(Communicator& comm,
                                                               std::vector<QuerySlot> slots) override {
    std::vector<DeviceBatchedShardedQueryAttention::Slot> bound(slots.size());
    for (size_t i = 0; i < slots.size(); ++i) {
      const QuerySlot& slot = slots[i];
      const std::string which = "batched_query: slot " + std::to_string(i);
      if (slot.rows < 0) return invalid_argument(which + " has " + std::to_string(slot.rows) + " rows");
      if (slot.context == nullptr) return invalid_argument(which + " has no context shard");
      bound[i].context = cache_of(*slot.context);
      if (bound[i].context == nullptr) return foreign(which + ": a context shard");
      if (slot.own != nullptr) {
        bound[i].own = cache_of(*slot.own);
        if (bound[i].own == nullptr) return foreign(which + ": an own-token shard");
      }
      bound[i].window = slot.window;
      bound[i].skip_softmax_scale_factor = slot.skip_softmax_scale_factor;
      bound[i].rows = slot.rows;
      bound[i].own_host = slot.own_host;
      bound[i].query_host = slot.query_host;
    }
    Result<Communicator*> gather = gather_communicator(comm);
    if (!gather.ok()) return gather.status();
    return std::unique_ptr<BatchedQueryAttention>(
        std::make_unique<DeviceBatchedQuery>(AttentionShape::of(config()), **gather, std::move(bound)));
  }

  Result<std::unique_ptr<EngineAttention>> row_split(std::vector<RowPart> parts) override {
    if (Status s = check_row_parts(parts); !s.ok()) return s;
    std::vector<DeviceRowSplitLayer::Part> layers;
    for (const RowPart& part : parts) {
      DeviceAttention* device = device_attention(*part.attention);
      if (device == nullptr) return foreign("row_split: an attention");
      layers.push_back({&device->layer(), part.rows});
    }
    return std::unique_ptr<EngineAttention>(
        std::make_unique<DeviceRowSplit>(AttentionShape::of(config()), std::move(parts), std::move(layers)));
  }

  Result<std::vector<float>> forward(std::span<const int32_t> tokens, std::span<const int32_t> positions,
                                     EngineAttention& attention, int64_t logit_rows) override {
    DeviceAttention* device = device_attention(attention);
    if (device == nullptr) return foreign("forward: an attention");
    if (Status s = make_current(); !s.ok()) return s;
    return model_->forward(tokens, positions, device->layer(), logit_rows);
  }

  Result<std::vector<float>> forward_rows(std::span<const int32_t> tokens, std::span<const int32_t> positions,
                                          EngineAttention& attention, std::span<const int64_t> logit_rows,
                                          VocabSlice vocab, const RowSharing* sharing,
                                          int64_t /*phase1_rows: cuBLAS takes every row in one product*/,
                                          bool /*largest_only: every logit is computed*/) override {
    if (sharing != nullptr) return unimplemented("cuda backend: forward_rows with shared rows");
    DeviceAttention* device = device_attention(attention);
    if (device == nullptr) return foreign("forward_rows: an attention");
    if (Status s = make_current(); !s.ok()) return s;
    return model_->forward_rows(tokens, positions, device->layer(), logit_rows, vocab);
  }

  Status synchronize() override {
    if (Status s = make_current(); !s.ok()) return s;
    return cuda_status(cudaStreamSynchronize(model_->stream()), "cuda backend: waiting for the model's stream");
  }

 private:
  // The communicator Phase 2 all-gathers on: the engine's on one rank (it never gathers), else
  // the device communicator with the same rank and size.
  Result<Communicator*> gather_communicator(Communicator& comm) {
    if (comm.size() == 1) return &comm;
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
    return device_comm_.get();
  }

  Status make_current() const { return cuda_status(cudaSetDevice(device_), "cuda backend: cudaSetDevice"); }

  std::unique_ptr<DeviceLlamaModel> model_;
  std::unique_ptr<Communicator> device_comm_;
  int device_ = 0;
};

}  // namespace

Result<std::unique_ptr<EngineModel>> make_engine_model(const LlamaModel& llama,
                                                       std::unique_ptr<Communicator> device_comm) {
  if (Status devices = device_status(); !devices.ok()) return failed_precondition("cuda backend: " + devices.message());
  int device = 0;
  if (Status s = cuda_status(cudaGetDevice(&device), "cuda backend: cudaGetDevice"); !s.ok()) return s;
  Result<std::unique_ptr<DeviceLlamaModel>> model = DeviceLlamaModel::create(llama.config(), llama.weights());
  if (!model.ok()) return model.status();
  return std::unique_ptr<EngineModel>(
      std::make_unique<CudaEngineModel>(std::move(*model), std::move(device_comm), device));
}

}  // namespace star::cuda
