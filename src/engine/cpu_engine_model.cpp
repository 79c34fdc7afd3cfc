#include "star/engine/cpu_engine_model.h"

#include <string>
#include <type_traits>
#include <utility>

#include "star/attention/layer_attentions.h"

namespace star {
namespace {

// An EngineAttention owning one CPU LayerAttention.
class CpuAttention : public EngineAttention {
 public:
  virtual LayerAttention& layer() = 0;
};

template <typename Attention>
class CpuAttentionOf final : public CpuAttention {
 public:
  template <typename... Args>
  explicit CpuAttentionOf(Args&&... args) : attention_(std::forward<Args>(args)...) {}
  LayerAttention& layer() override { return attention_; }

  double communication_cpu_seconds() const override {
    if constexpr (std::is_same_v<Attention, RingSegmentAttention>) return attention_.communication_cpu_seconds();
    return 0;
  }
  int64_t floats_sent() const override {
    if constexpr (std::is_same_v<Attention, ShardedQueryAttention>) return attention_.floats_sent();
    return 0;
  }
  double gather_merge_seconds() const override {
    if constexpr (std::is_same_v<Attention, ShardedQueryAttention>) return attention_.gather_merge_seconds();
    return 0;
  }
  void set_skip_softmax(double scale_factor) override { attention_.set_skip_softmax(scale_factor); }
  SkipSoftmaxTiles skip_softmax_tiles() const override { return attention_.skip_softmax_tiles(); }

 private:
  Attention attention_;
};

template <typename Attention, typename... Args>
Result<std::unique_ptr<EngineAttention>> make(Args&&... args) {
  return std::unique_ptr<EngineAttention>(std::make_unique<CpuAttentionOf<Attention>>(std::forward<Args>(args)...));
}

// The KvCache behind a shard this backend made.
template <typename Shard>
auto* cache_of(Shard& shard) {
  using Cpu = std::conditional_t<std::is_const_v<Shard>, const CpuKvShard, CpuKvShard>;
  auto* cpu = dynamic_cast<Cpu*>(&shard);
  return cpu == nullptr ? nullptr : &cpu->cache;
}

Status foreign(const char* what) { return invalid_argument(std::string("cpu backend: ") + what + " of another backend"); }

}  // namespace

int64_t CpuEngineModel::kv_bytes_per_token() const {
  const LlamaConfig& c = model_.config();
  return static_cast<int64_t>(KvCache(c.n_layers, c.n_kv_heads, c.head_dim, kv_dtype_).bytes_per_token());
}

Result<std::unique_ptr<KvShard>> CpuEngineModel::new_shard(int64_t capacity) {
  const LlamaConfig& c = model_.config();
  KvCache cache(c.n_layers, c.n_kv_heads, c.head_dim, kv_dtype_);
  cache.reserve(capacity);
  return std::unique_ptr<KvShard>(std::make_unique<CpuKvShard>(std::move(cache)));
}

Status CpuEngineModel::append(const KvShard& from_shard, KvShard& to_shard) {
  const KvCache* from = cache_of(from_shard);
  KvCache* to = cache_of(to_shard);
  if (from == nullptr || to == nullptr) return foreign("append: a shard");
  to->append(*from);
  return ok_status();
}

Result<std::unique_ptr<EngineAttention>> CpuEngineModel::local_causal(KvShard& cache) {
  KvCache* c = cache_of(cache);
  if (c == nullptr) return foreign("local_causal: a shard");
  return make<LocalCausalAttention>(AttentionShape::of(config()), *c);
}

Result<std::unique_ptr<EngineAttention>> CpuEngineModel::prefixed_block(const KvShard& prefix, KvShard& shard,
                                                                        AttentionWindow window) {
  const KvCache* p = cache_of(prefix);
  KvCache* s = cache_of(shard);
  if (p == nullptr || s == nullptr) return foreign("prefixed_block: a shard");
  return make<PrefixedBlockAttention>(AttentionShape::of(config()), *p, *s, window);
}

Result<std::unique_ptr<EngineAttention>> CpuEngineModel::ring_segment(Communicator& comm, KvShard& shard,
                                                                      std::vector<int64_t> segment_tokens) {
  KvCache* s = cache_of(shard);
  if (s == nullptr) return foreign("ring_segment: a shard");
  return make<RingSegmentAttention>(AttentionShape::of(config()), comm, *s, std::move(segment_tokens));
}

Result<std::unique_ptr<EngineAttention>> CpuEngineModel::sharded_query(Communicator& comm, KvShard& shard,
                                                                       bool is_query_host, AttentionWindow window) {
  KvCache* s = cache_of(shard);
  if (s == nullptr) return foreign("sharded_query: a shard");
  return make<ShardedQueryAttention>(AttentionShape::of(config()), comm, *s, is_query_host, window);
}

Result<std::vector<float>> CpuEngineModel::forward(std::span<const int32_t> tokens, std::span<const int32_t> positions,
                                                   EngineAttention& attention, int64_t logit_rows) {
  auto* cpu = dynamic_cast<CpuAttention*>(&attention);
  if (cpu == nullptr) return foreign("forward: an attention");
  return model_.forward(tokens, positions, cpu->layer(), logit_rows);
}

}  // namespace star
