// CpuEngineModel: EngineModel over the CPU backend. Each call hands the engine's buffers straight
// to LlamaModel and the LayerAttention classes: no copies, the same arithmetic as calling them
// directly.
#pragma once

#include <memory>

#include "star/attention/rocket/compacted_kv_cache.h"
#include "star/engine/engine_model.h"
#include "star/model/kv_cache.h"
#include "star/model/llama_model.h"

namespace star {

// A KvCache as the engine's shard.
class CpuKvShard final : public KvShard {
 public:
  explicit CpuKvShard(KvCache cache) : cache(std::move(cache)) {}
  int64_t tokens() const override { return cache.tokens(); }
  size_t bytes() const override { return cache.bytes(); }
  void truncate(int64_t tokens) override { cache.truncate(tokens); }

  KvCache cache;
};

// A shard after RocketKV's stage 1: per-head compacted rows, and the stage-2 parameters.
class CpuCompactedShard final : public KvShard {
 public:
  CpuCompactedShard(rocket::CompactedKvCache cache, const RocketConfig& config)
      : cache(std::move(cache)), config(config) {}
  int64_t tokens() const override { return cache.tokens(); }
  size_t bytes() const override { return cache.bytes(); }
  void truncate(int64_t tokens) override { cache.truncate(tokens); }
  bool selects_keys() const override { return true; }

  rocket::CompactedKvCache cache;
  RocketConfig config;
};

class CpuEngineModel final : public EngineModel {
 public:
  // `model` must outlive this; its shards store K and V as `kv_dtype`, which
  // check_kv_dtype(kv_dtype, head_dim) must accept.
  explicit CpuEngineModel(const LlamaModel& model, KvDType kv_dtype = KvDType::kF32)
      : model_(model), kv_dtype_(kv_dtype) {}

  const LlamaConfig& config() const override { return model_.config(); }
  std::string_view backend_name() const override { return "cpu"; }
  int64_t kv_bytes_per_token() const override;
  KvDType kv_dtype() const override { return kv_dtype_; }
  Status supports(EncodeStep::Kind) const override { return ok_status(); }

  Result<std::unique_ptr<KvShard>> new_shard(int64_t capacity) override;
  Status append(const KvShard& from, KvShard& to) override;
  bool moves_shards() const override { return true; }
  Result<std::vector<std::byte>> shard_rows(const KvShard& shard) override;
  Result<std::unique_ptr<KvShard>> shard_from_rows(std::span<const std::byte> rows, int64_t tokens,
                                                   int64_t capacity) override;

  Result<std::unique_ptr<EngineAttention>> local_causal(KvShard& cache) override;
  Result<std::unique_ptr<EngineAttention>> prefixed_block(const KvShard& prefix, KvShard& shard, int64_t block_first,
                                                          AttentionWindow window) override;
  Result<std::unique_ptr<EngineAttention>> ring_segment(Communicator& comm, KvShard& shard,
                                                        std::vector<int64_t> segment_tokens) override;
  Result<std::unique_ptr<EngineAttention>> sharded_query(Communicator& comm, KvShard& shard, bool is_query_host,
                                                         AttentionWindow window) override;
  Result<std::unique_ptr<BatchedQueryAttention>> batched_query(Communicator& comm,
                                                               std::vector<QuerySlot> slots) override;
  Result<std::unique_ptr<EngineAttention>> row_split(std::vector<RowPart> parts) override;

  Status supports_rocket() const override { return ok_status(); }
  Result<std::unique_ptr<EngineAttention>> recording_queries(std::unique_ptr<EngineAttention> inner, int64_t rows,
                                                             rocket::WindowQueries& out) override;
  Result<std::vector<float>> shard_keys(const KvShard& shard, int64_t layer) override;
  Result<std::unique_ptr<KvShard>> compacted_shard(const KvShard& shard,
                                                   const std::vector<std::vector<std::vector<int64_t>>>& keep,
                                                   const RocketConfig& config) override;

  Result<std::vector<float>> forward(std::span<const int32_t> tokens, std::span<const int32_t> positions,
                                     EngineAttention& attention, int64_t logit_rows) override;
  Result<std::vector<float>> forward_rows(std::span<const int32_t> tokens, std::span<const int32_t> positions,
                                          EngineAttention& attention, std::span<const int64_t> logit_rows,
                                          VocabSlice vocab = {}, const RowSharing* sharing = nullptr,
                                          int64_t phase1_rows = -1, bool largest_only = false) override;
  bool shares_rows() const override { return true; }
  bool shares_columns() const override { return model_.shares_columns_alike(); }

 private:
  const LlamaModel& model_;
  KvDType kv_dtype_;
};

}  // namespace star
