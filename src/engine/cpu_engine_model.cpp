#include "star/engine/cpu_engine_model.h"

#include <algorithm>
#include <string>
#include <type_traits>
#include <utility>

#include "star/attention/layer_attentions.h"
#include "star/attention/rocket/rocket_context_partial.h"
#include "star/attention/rocket/rocket_query_attention.h"
#include "star/engine/row_split.h"

namespace star {
namespace {

// What forward() needs of an EngineAttention this backend made: its CPU LayerAttention. A side
// interface, so that a BatchedQueryAttention can be one too.
class CpuAttention {
 public:
  virtual ~CpuAttention() = default;
  virtual LayerAttention& layer() = 0;
};

CpuAttention* cpu_attention(EngineAttention& attention) { return dynamic_cast<CpuAttention*>(&attention); }

template <typename Attention>
class CpuAttentionOf final : public EngineAttention, public CpuAttention {
  static constexpr bool kGathers =
      std::is_same_v<Attention, ShardedQueryAttention> || std::is_same_v<Attention, rocket::RocketQueryAttention>;

 public:
  template <typename... Args>
  explicit CpuAttentionOf(Args&&... args) : attention_(std::forward<Args>(args)...) {}
  LayerAttention& layer() override { return attention_; }

  double communication_cpu_seconds() const override {
    if constexpr (std::is_same_v<Attention, RingSegmentAttention>) return attention_.communication_cpu_seconds();
    return 0;
  }
  int64_t floats_sent() const override {
    if constexpr (kGathers) return attention_.floats_sent();
    return 0;
  }
  double gather_merge_seconds() const override {
    if constexpr (kGathers) return attention_.gather_merge_seconds();
    return 0;
  }
  void set_skip_softmax(double scale_factor) override { attention_.set_skip_softmax(scale_factor); }
  SkipSoftmaxTiles skip_softmax_tiles() const override { return attention_.skip_softmax_tiles(); }

 private:
  Attention attention_;
};

// Another CPU attention whose queries a QueryRecorder copies on the way in.
class CpuRecordingAttention final : public EngineAttention, public CpuAttention {
 public:
  CpuRecordingAttention(std::unique_ptr<EngineAttention> inner, CpuAttention& inner_cpu, int64_t n_layers,
                        int64_t q_floats, int64_t rows, rocket::WindowQueries& out)
      : inner_(std::move(inner)), recorder_(inner_cpu.layer(), n_layers, q_floats, rows, out) {}
  LayerAttention& layer() override { return recorder_; }
  double communication_cpu_seconds() const override { return inner_->communication_cpu_seconds(); }
  int64_t floats_sent() const override { return inner_->floats_sent(); }
  double gather_merge_seconds() const override { return inner_->gather_merge_seconds(); }

 private:
  std::unique_ptr<EngineAttention> inner_;
  rocket::QueryRecorder recorder_;
};

// Every slot of a batched Phase 2 forward; owns the RocketKV context partials it made.
class CpuBatchedQuery final : public BatchedQueryAttention, public CpuAttention {
 public:
  CpuBatchedQuery(AttentionShape shape, Communicator& comm, std::vector<BatchedShardedQueryAttention::Slot> slots,
                  std::vector<std::unique_ptr<rocket::RocketContextPartial>> rocket_contexts)
      : rocket_contexts_(std::move(rocket_contexts)), attention_(shape, comm, std::move(slots)) {}
  LayerAttention& layer() override { return attention_; }
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
  std::vector<std::unique_ptr<rocket::RocketContextPartial>> rocket_contexts_;
  BatchedShardedQueryAttention attention_;
};

class CpuRowSplit final : public RowSplitStats, public CpuAttention {
 public:
  CpuRowSplit(AttentionShape shape, std::vector<RowPart> parts,
              std::vector<RowSplitLayer<LayerAttention>::Part> layers)
      : RowSplitStats(std::move(parts)), layer_(shape, std::move(layers)) {}
  LayerAttention& layer() override { return layer_; }

 private:
  RowSplitLayer<LayerAttention> layer_;
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

Status foreign(const std::string& what) { return invalid_argument("cpu backend: " + what + " of another backend"); }

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

Result<std::vector<std::byte>> CpuEngineModel::shard_rows(const KvShard& shard) {
  const KvCache* cache = cache_of(shard);
  if (cache == nullptr) return foreign("shard_rows: a shard");
  return cache->stored_rows();
}

Result<std::unique_ptr<KvShard>> CpuEngineModel::shard_from_rows(std::span<const std::byte> rows, int64_t tokens,
                                                                 int64_t capacity) {
  const int64_t per_token = kv_bytes_per_token();
  if (tokens < 0 || static_cast<int64_t>(rows.size()) != tokens * per_token) {
    return invalid_argument("shard_from_rows: " + std::to_string(rows.size()) + " bytes are not " +
                            std::to_string(tokens) + " rows of " + std::to_string(per_token) + " bytes");
  }
  Result<std::unique_ptr<KvShard>> shard = new_shard(std::max(capacity, tokens));
  if (!shard.ok()) return shard.status();
  cache_of(**shard)->append_stored(rows, tokens);
  return shard;
}

Result<std::unique_ptr<EngineAttention>> CpuEngineModel::local_causal(KvShard& cache) {
  KvCache* c = cache_of(cache);
  if (c == nullptr) return foreign("local_causal: a shard");
  return make<LocalCausalAttention>(AttentionShape::of(config()), *c);
}

Result<std::unique_ptr<EngineAttention>> CpuEngineModel::prefixed_block(const KvShard& prefix, KvShard& shard,
                                                                        int64_t block_first, AttentionWindow window) {
  const KvCache* p = cache_of(prefix);
  KvCache* s = cache_of(shard);
  if (p == nullptr || s == nullptr) return foreign("prefixed_block: a shard");
  return make<PrefixedBlockAttention>(AttentionShape::of(config()), *p, *s, block_first, window);
}

Result<std::unique_ptr<EngineAttention>> CpuEngineModel::ring_segment(Communicator& comm, KvShard& shard,
                                                                      std::vector<int64_t> segment_tokens) {
  KvCache* s = cache_of(shard);
  if (s == nullptr) return foreign("ring_segment: a shard");
  return make<RingSegmentAttention>(AttentionShape::of(config()), comm, *s, std::move(segment_tokens));
}

Result<std::unique_ptr<EngineAttention>> CpuEngineModel::sharded_query(Communicator& comm, KvShard& shard,
                                                                       bool is_query_host, AttentionWindow window) {
  if (auto* compacted = dynamic_cast<CpuCompactedShard*>(&shard)) {
    return make<rocket::RocketQueryAttention>(AttentionShape::of(config()), comm, compacted->cache, is_query_host,
                                              compacted->config);
  }
  KvCache* s = cache_of(shard);
  if (s == nullptr) return foreign("sharded_query: a shard");
  return make<ShardedQueryAttention>(AttentionShape::of(config()), comm, *s, is_query_host, window);
}

Result<std::unique_ptr<EngineAttention>> CpuEngineModel::recording_queries(std::unique_ptr<EngineAttention> inner,
                                                                           int64_t rows, rocket::WindowQueries& out) {
  CpuAttention* cpu = cpu_attention(*inner);
  if (cpu == nullptr) return foreign("recording_queries: an attention");
  const LlamaConfig& c = config();
  return std::unique_ptr<EngineAttention>(std::make_unique<CpuRecordingAttention>(
      std::move(inner), *cpu, c.n_layers, c.n_heads * c.head_dim, rows, out));
}

Result<std::vector<float>> CpuEngineModel::shard_keys(const KvShard& shard, int64_t layer) {
  const KvCache* cache = cache_of(shard);
  if (cache == nullptr) return foreign("shard_keys: a shard");
  std::vector<float> keys(cache->tokens() * cache->row_elements());
  decode_kv(cache->dtype(), cache->keys(layer).data, static_cast<int64_t>(keys.size()), keys.data());
  return keys;
}

Result<std::unique_ptr<KvShard>> CpuEngineModel::compacted_shard(
    const KvShard& shard, const std::vector<std::vector<std::vector<int64_t>>>& keep, const RocketConfig& config) {
  const KvCache* cache = cache_of(shard);
  if (cache == nullptr) return foreign("compacted_shard: a shard");
  const LlamaConfig& c = model_.config();
  rocket::CompactedKvCache compacted(c.n_layers, c.n_kv_heads, c.head_dim, kv_dtype_, config.page_size);
  for (int64_t l = 0; l < c.n_layers; ++l) compacted.keep_rows(l, *cache, keep[l]);
  return std::unique_ptr<KvShard>(std::make_unique<CpuCompactedShard>(std::move(compacted), config));
}

Result<std::vector<float>> CpuEngineModel::forward(std::span<const int32_t> tokens, std::span<const int32_t> positions,
                                                   EngineAttention& attention, int64_t logit_rows) {
  CpuAttention* cpu = cpu_attention(attention);
  if (cpu == nullptr) return foreign("forward: an attention");
  return model_.forward(tokens, positions, cpu->layer(), logit_rows);
}

Result<std::vector<float>> CpuEngineModel::forward_rows(std::span<const int32_t> tokens,
                                                        std::span<const int32_t> positions, EngineAttention& attention,
                                                        std::span<const int64_t> logit_rows, VocabSlice vocab,
                                                        const RowSharing* sharing, int64_t phase1_rows,
                                                        bool largest_only) {
  CpuAttention* cpu = cpu_attention(attention);
  if (cpu == nullptr) return foreign("forward_rows: an attention");
  return model_.forward_rows(tokens, positions, cpu->layer(), logit_rows, vocab, sharing, phase1_rows, largest_only);
}

Result<std::unique_ptr<BatchedQueryAttention>> CpuEngineModel::batched_query(Communicator& comm,
                                                                             std::vector<QuerySlot> slots) {
  const AttentionShape shape = AttentionShape::of(config());
  std::vector<BatchedShardedQueryAttention::Slot> bound(slots.size());
  std::vector<std::unique_ptr<rocket::RocketContextPartial>> rocket_contexts;
  for (size_t i = 0; i < slots.size(); ++i) {
    const QuerySlot& slot = slots[i];
    const std::string which = "batched_query: slot " + std::to_string(i);
    if (slot.rows < 0) return invalid_argument(which + " has " + std::to_string(slot.rows) + " rows");
    if (slot.context == nullptr) return invalid_argument(which + " has no context shard");
    if (const auto* compacted = dynamic_cast<const CpuCompactedShard*>(slot.context)) {
      rocket_contexts.push_back(
          std::make_unique<rocket::RocketContextPartial>(shape, compacted->cache, compacted->config));
      bound[i].custom = rocket_contexts.back().get();
    } else {
      bound[i].context = cache_of(*slot.context);
      if (bound[i].context == nullptr) return foreign(which + ": a context shard");
    }
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
  return std::unique_ptr<BatchedQueryAttention>(
      std::make_unique<CpuBatchedQuery>(shape, comm, std::move(bound), std::move(rocket_contexts)));
}

Result<std::unique_ptr<EngineAttention>> CpuEngineModel::row_split(std::vector<RowPart> parts) {
  if (Status s = check_row_parts(parts); !s.ok()) return s;
  std::vector<RowSplitLayer<LayerAttention>::Part> layers;
  for (const RowPart& part : parts) {
    CpuAttention* cpu = cpu_attention(*part.attention);
    if (cpu == nullptr) return foreign("row_split: an attention");
    layers.push_back({&cpu->layer(), part.rows});
  }
  return std::unique_ptr<EngineAttention>(
      std::make_unique<CpuRowSplit>(AttentionShape::of(config()), std::move(parts), std::move(layers)));
}

}  // namespace star
