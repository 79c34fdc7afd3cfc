// EngineModel: what the Phase 1 executor and the Phase 2 generator need from a backend, and
// nothing more: a KV shard, the four LayerAttention kinds they drive, and a forward pass that
// returns host logits (the sampler stays on the host, so every backend samples identically).
//
//   CpuEngineModel   (cpu_engine_model.h)            LlamaModel and KvCache, KV as --kv-dtype
//   CudaEngineModel  (backend/cuda/engine_model.h)   DeviceLlamaModel and DeviceKvCache, bf16 KV;
//                                                    Phase 2 all-gathers on a device communicator
//
// Attentions and shards are opaque to the engine and belong to the model that made them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "star/attention/block_plan.h"
#include "star/attention/rocket/window_queries.h"
#include "star/attention/skip_softmax.h"
#include "star/attention/sparse_attention_config.h"
#include "star/common/status.h"
#include "star/dist/communicator.h"
#include "star/model/kv_dtype.h"
#include "star/model/llama_config.h"
#include "star/model/row_sharing.h"
#include "star/model/vocab_slice.h"

namespace star {

// One sequence's keys and values (or one rank's shard of them), wherever the backend keeps them.
class KvShard {
 public:
  virtual ~KvShard() = default;
  virtual int64_t tokens() const = 0;
  virtual size_t bytes() const = 0;  // exact bytes of the tokens held
  virtual void truncate(int64_t tokens) = 0;
  // Whether Phase 2 attends it by a rule of its own (RocketKV's compacted shard) instead of every key.
  virtual bool selects_keys() const { return false; }
};

// A LayerAttention of some backend, with what the engine reports about it.
class EngineAttention {
 public:
  virtual ~EngineAttention() = default;
  // Ring: CPU seconds spent passing KV around the ring.
  virtual double communication_cpu_seconds() const { return 0; }
  // Phase 2: floats sent in all-gathers, and wall seconds in the all-gather and merge.
  virtual int64_t floats_sent() const { return 0; }
  virtual double gather_merge_seconds() const { return 0; }
  // Skip Softmax: S for the forward passes that follow, and the tiles counted so far (a backend
  // without it runs dense and counts nothing).
  virtual void set_skip_softmax(double scale_factor) { static_cast<void>(scale_factor); }
  virtual SkipSoftmaxTiles skip_softmax_tiles() const { return {}; }
};

// One sequence's rows in a batched Phase 2 forward (EngineModel::batched_query).
struct QuerySlot {
  const KvShard* context = nullptr;  // this rank's shard of the sequence's context (read-only)
  KvShard* own = nullptr;            // own tokens' rank: the sequence's own tokens (query + generated); else null
  AttentionWindow window;
  double skip_softmax_scale_factor = 0;  // the S for this sequence's rows in this step
  int64_t rows = 0;                      // rows of this sequence in the forward, in slot order
  // Own tokens kept on another rank than the query host (BatchedQuerySlot): that rank, and the
  // query host whose context partial they merge with. -1: on the query host.
  int own_host = -1;
  int query_host = -1;
};

// Phase 2 of many sequences in one forward: per layer one all-gather carries every slot's
// (out, lse). Its slots fix the rows, so a step makes a new one. Tiles are counted for the slots
// whose S > 0; skip_softmax_tiles() is the sum over slots; set_skip_softmax does nothing (each
// slot carries its own S).
class BatchedQueryAttention : public EngineAttention {
 public:
  // The Skip Softmax tiles counted for slot `slot`'s rows so far.
  virtual SkipSoftmaxTiles slot_tiles(size_t slot) const = 0;
};

// A run of consecutive rows of a fused forward and the attention that attends them.
struct RowPart {
  EngineAttention* attention = nullptr;
  int64_t rows = 0;
};

class EngineModel {
 public:
  virtual ~EngineModel() = default;

  virtual const LlamaConfig& config() const = 0;
  virtual std::string_view backend_name() const = 0;  // "cpu", "cuda"
  // The shard bytes one token's K and V take over every layer, exactly, in kv_dtype().
  virtual int64_t kv_bytes_per_token() const = 0;
  // The type the shards store K and V in (the CPU's is --kv-dtype; a GPU's is bf16).
  virtual KvDType kv_dtype() const = 0;

  // Ok when this backend can run steps of `kind`; otherwise UNIMPLEMENTED naming the backend.
  virtual Status supports(EncodeStep::Kind kind) const = 0;

  // An empty shard with room for `capacity` tokens.
  virtual Result<std::unique_ptr<KvShard>> new_shard(int64_t capacity) = 0;
  // Appends every row of `from` to `to`.
  virtual Status append(const KvShard& from, KvShard& to) = 0;
  // A shard's rows moving to another rank (a sequence's own tokens, StepMessage::moved): whether
  // this backend can, the rows as stored (kv_bytes_per_token() a token), and a new shard with
  // room for `capacity` tokens that holds `tokens` such rows. UNIMPLEMENTED where it cannot.
  virtual bool moves_shards() const { return false; }
  virtual Result<std::vector<std::byte>> shard_rows(const KvShard& shard);
  virtual Result<std::unique_ptr<KvShard>> shard_from_rows(std::span<const std::byte> rows, int64_t tokens,
                                                           int64_t capacity);

  // The LayerAttention kinds of star/attention/layer_attentions.h over this backend's shards.
  virtual Result<std::unique_ptr<EngineAttention>> local_causal(KvShard& cache) = 0;
  // prefixed_block: block_first is the shard row where the block starts; a chunk of the block sees
  // the rows from there causally (Phase1Job runs a block as several chunks).
  virtual Result<std::unique_ptr<EngineAttention>> prefixed_block(const KvShard& prefix, KvShard& shard,
                                                                  int64_t block_first, AttentionWindow window) = 0;
  virtual Result<std::unique_ptr<EngineAttention>> ring_segment(Communicator& comm, KvShard& shard,
                                                                std::vector<int64_t> segment_tokens) = 0;
  // comm: the engine's (host) communicator; a backend may run the all-gather on its own transport
  // with the same ranks.
  virtual Result<std::unique_ptr<EngineAttention>> sharded_query(Communicator& comm, KvShard& shard,
                                                                 bool is_query_host, AttentionWindow window) = 0;

  // Phase 2 for every slot at once; the forward's rows are the slots' rows in slot order. Per slot,
  // every rank attends to its context shard (no mask; the query host applies a bounded window);
  // the query host also stores the rows' K/V in the slot's own cache and attends to it causally.
  // A RocketKV compacted context runs stage 2 (page selection per KV head) on one-row slots.
  virtual Result<std::unique_ptr<BatchedQueryAttention>> batched_query(Communicator& comm,
                                                                       std::vector<QuerySlot> slots) = 0;
  // The forward's rows split in consecutive parts, each attended by its own attention (made by this
  // model, used by no other forward at the same time); begin() and attend() pass each part its rows.
  virtual Result<std::unique_ptr<EngineAttention>> row_split(std::vector<RowPart> parts) = 0;

  // RocketKV (rocket_compaction.h). A backend without it answers UNIMPLEMENTED naming itself, from
  // supports_rocket() before any work and from each call below.
  virtual Status supports_rocket() const;
  // `inner`, recording the queries of the last `rows` new tokens of each layer into `out`.
  virtual Result<std::unique_ptr<EngineAttention>> recording_queries(std::unique_ptr<EngineAttention> inner,
                                                                     int64_t rows, rocket::WindowQueries& out);
  // The keys of one layer of `shard`, [tokens, Hkv, d] in float32 as attention reads them.
  virtual Result<std::vector<float>> shard_keys(const KvShard& shard, int64_t layer);
  // A new shard holding rows keep[layer][kv] (ascending) of `shard` for each layer and KV head;
  // sharded_query over it runs RocketKV's stage 2 with `config`.
  virtual Result<std::unique_ptr<KvShard>> compacted_shard(const KvShard& shard,
                                                           const std::vector<std::vector<std::vector<int64_t>>>& keep,
                                                           const RocketConfig& config);

  // LlamaModel::forward with an attention made by this model: the last `logit_rows` rows of
  // logits, [logit_rows, vocab], on the host.
  virtual Result<std::vector<float>> forward(std::span<const int32_t> tokens, std::span<const int32_t> positions,
                                             EngineAttention& attention, int64_t logit_rows) = 0;
  // The same forward with the logits of rows `logit_rows` (ascending, each in [0, tokens)) only, and
  // of the vocabulary entries `vocab` only: [logit_rows.size(), vocab.count], on the host. With
  // `sharing` (only where shares_rows()), the ranks split the shared rows' layers between them.
  // `phase1_rows` (>= 0): the leading rows that are a Phase 1 chunk's, the rest decode rows, which
  // the CPU multiplies apart from them (LlamaModel::forward_rows); -1: no such split.
  // `largest_only`: only each row's largest logit matters (greedy decoding), so the others may come
  // out −inf; every row's first largest logit is the same as without.
  virtual Result<std::vector<float>> forward_rows(std::span<const int32_t> tokens, std::span<const int32_t> positions,
                                                  EngineAttention& attention, std::span<const int64_t> logit_rows,
                                                  VocabSlice vocab = {}, const RowSharing* sharing = nullptr,
                                                  int64_t phase1_rows = -1, bool largest_only = false) = 0;
  // Whether forward_rows takes a RowSharing split by rows; by columns too.
  virtual bool shares_rows() const { return false; }
  virtual bool shares_columns() const { return false; }

  // Waits for the work enqueued so far (a no-op where forward is synchronous), so timings hold.
  virtual Status synchronize() { return ok_status(); }
};

}  // namespace star
