// The situations of LayerAttention, each written once over a backend's attention primitives; the
// CPU (star/attention/layer_attentions.h) and CUDA (star/backend/cuda/layer_attentions.h) classes
// are these templates bound to their backend.
//
//   CausalSituation         append to one cache, attend to all of it causally.
//   PrefixedBlockSituation  attend to a read-only prefix without mask and causally to the block
//                           (its earlier chunks and the new rows); only the block's KV enters
//                           the shard.
//   ShardedQuerySituation   Phase 2: attend to the local shard (the query host also to the new
//                           tokens, causally), all-gather the packed (out, lse) of every rank, merge.
//   BatchedQuerySituation   Phase 2 of many sequences in one forward: each slot attends to its
//                           read-only context shard (the query host, or the rank given the slot's
//                           own cache, also to that cache, causally); one all-gather and one merge
//                           carry every slot's rows.
//
// A backend B provides (Context is what every call carries: nothing on the CPU, the stream on CUDA):
//   using Cache, Floats, Context;
//   Result<int64_t> grow(Cache&, int64_t n, Context)              n rows more, the first new one's index
//   Status store(Cache&, layer, first, k, v, n, Context)          rows [first, first + n) of a layer
//   Status attend(AttentionShape, q, n, const Cache&, layer, first, rows, AttentionMask, out, lse,
//                 SkipSoftmax, Context)
//                                                                 q against rows [first, first + rows)
//   static constexpr bool kSharesKeyReads                         whether attend_shared exists:
//   Status attend_shared(AttentionShape, q, queries, n, const Cache&, layer, first, rows, out, lse, Context)
//                                                                 `queries` queries of n rows each, no
//                                                                 mask, each as attend would give it,
//                                                                 the rows read once for all of them
//   Status merge(outs, lses, partials, n, AttentionShape, out, lse, Context)           merge_partials
//   Status merge_packed(packed, partials, n, AttentionShape, out, lse, Context)  merge_packed_partials
//   Status reserve(Floats&, int64_t count); float* data(Floats&)  scratch of at least count floats
//   Status copy(float* dst, const float* src, int64_t count, Context)
//   Status all_gather(Communicator&, send, count, recv, Context)   every rank's count floats, rank-major,
//                                                                 ordered after the work on Context
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "star/attention/attention_shape.h"
#include "star/attention/block_plan.h"
#include "star/attention/skip_softmax.h"
#include "star/backend/cpu/attention.h"
#include "star/common/status.h"
#include "star/dist/communicator.h"

namespace star {

inline AttentionMask causal_mask_from(int64_t offset, AttentionWindow window = {}) {
  AttentionMask mask;
  mask.causal = true;
  mask.causal_offset = offset;
  mask.window = window;
  return mask;
}

template <class B>
class CausalSituation {
 public:
  using Cache = typename B::Cache;
  using Context = typename B::Context;

  CausalSituation(AttentionShape shape, Cache& cache, AttentionWindow window)
      : shape_(shape), cache_(cache), window_(window) {}

  Status begin(int64_t n_new, Context ctx) {
    Result<int64_t> first = B::grow(cache_, n_new, ctx);
    if (!first.ok()) return first.status();
    first_ = *first;
    return B::reserve(lse_, n_new * shape_.n_heads);
  }

  Status attend(int64_t layer, const float* q, const float* k, const float* v, int64_t n, float* out,
                const SkipSoftmax& skip, Context ctx) {
    if (Status s = B::store(cache_, layer, first_, k, v, n, ctx); !s.ok()) return s;
    return B::attend(shape_, q, n, cache_, layer, 0, first_ + n, causal_mask_from(first_, window_), out,
                     B::data(lse_), skip, ctx);
  }

 private:
  AttentionShape shape_;
  Cache& cache_;
  AttentionWindow window_;
  int64_t first_ = 0;
  typename B::Floats lse_;
};

template <class B>
class PrefixedBlockSituation {
 public:
  using Cache = typename B::Cache;
  using Context = typename B::Context;

  // block_first: the shard row where the block starts; the rows from there to the new ones are
  // the block's earlier chunks (Phase 1 in chunks), which the new rows see causally.
  // window applies to the block's own keys when the prefix is empty (StreamingLLM).
  PrefixedBlockSituation(AttentionShape shape, const Cache& prefix, Cache& shard, int64_t block_first,
                         AttentionWindow window)
      : shape_(shape), prefix_(prefix), shard_(shard), block_first_(block_first), window_(window) {}

  Status begin(int64_t n_new, Context ctx) {
    Result<int64_t> first = B::grow(shard_, n_new, ctx);
    if (!first.ok()) return first.status();
    first_ = *first;
    if (first_ < block_first_) {
      return invalid_argument("prefixed block: the block starts at shard row " + std::to_string(block_first_) +
                              " but the shard holds only " + std::to_string(first_) + " rows before it");
    }
    if (Status s = B::reserve(partial_out_, 2 * n_new * shape_.q_floats()); !s.ok()) return s;
    if (Status s = B::reserve(partial_lse_, 2 * n_new * shape_.n_heads); !s.ok()) return s;
    return B::reserve(lse_, n_new * shape_.n_heads);
  }

  Status attend(int64_t layer, const float* q, const float* k, const float* v, int64_t n, float* out,
                const SkipSoftmax& skip, Context ctx) {
    if (Status s = B::store(shard_, layer, first_, k, v, n, ctx); !s.ok()) return s;
    const int64_t np = prefix_.tokens();
    const int64_t earlier = first_ - block_first_;  // the block's rows before these
    if (np == 0) {
      return B::attend(shape_, q, n, shard_, layer, block_first_, earlier + n, causal_mask_from(earlier, window_),
                       out, B::data(lse_), skip, ctx);
    }
    // The prefix precedes every block token (no mask); the block is causal; merge the two.
    float* out_prefix = B::data(partial_out_);
    float* out_block = out_prefix + n * shape_.q_floats();
    float* lse_prefix = B::data(partial_lse_);
    float* lse_block = lse_prefix + n * shape_.n_heads;
    if (Status s = B::attend(shape_, q, n, prefix_, layer, 0, np, AttentionMask{}, out_prefix, lse_prefix, skip, ctx);
        !s.ok()) {
      return s;
    }
    if (Status s = B::attend(shape_, q, n, shard_, layer, block_first_, earlier + n, causal_mask_from(earlier),
                             out_block, lse_block, skip, ctx);
        !s.ok()) {
      return s;
    }
    return B::merge(out_prefix, lse_prefix, 2, n, shape_, out, B::data(lse_), ctx);
  }

 private:
  AttentionShape shape_;
  const Cache& prefix_;
  Cache& shard_;
  int64_t block_first_;
  AttentionWindow window_;
  int64_t first_ = 0;
  typename B::Floats partial_out_;  // [2, n, Hq, d]: prefix, block
  typename B::Floats partial_lse_;  // [2, n, Hq]
  typename B::Floats lse_;          // [n, Hq]
};

template <class B>
class ShardedQuerySituation {
 public:
  using Cache = typename B::Cache;
  using Context = typename B::Context;

  // is_query_host: this rank appends the new tokens' KV to its shard and masks them causally.
  ShardedQuerySituation(AttentionShape shape, Communicator& comm, Cache& shard, bool is_query_host,
                        AttentionWindow window)
      : shape_(shape), comm_(comm), shard_(shard), is_query_host_(is_query_host), window_(window) {}

  Status begin(int64_t n_new, Context ctx) {
    if (is_query_host_) {
      Result<int64_t> first = B::grow(shard_, n_new, ctx);
      if (!first.ok()) return first.status();
      first_ = *first;
    } else {
      first_ = shard_.tokens();
    }
    const int64_t per_rank = n_new * shape_.n_heads * (shape_.head_dim + 1);
    if (Status s = B::reserve(local_, per_rank); !s.ok()) return s;
    if (Status s = B::reserve(gathered_, per_rank * comm_.size()); !s.ok()) return s;
    return B::reserve(lse_, n_new * shape_.n_heads);
  }

  Status attend(int64_t layer, const float* q, const float* k, const float* v, int64_t n, float* out,
                const SkipSoftmax& skip, Context ctx) {
    const int64_t qf = shape_.q_floats();
    // Local partial, packed as [out n·Hq·d | lse n·Hq] so one all-gather carries both.
    float* local_out = B::data(local_);
    float* local_lse = local_out + n * qf;
    if (is_query_host_) {
      if (Status s = B::store(shard_, layer, first_, k, v, n, ctx); !s.ok()) return s;
      if (Status s = B::attend(shape_, q, n, shard_, layer, 0, first_ + n, causal_mask_from(first_, window_),
                               local_out, local_lse, skip, ctx);
          !s.ok()) {
        return s;
      }
    } else {
      // A remote shard lies wholly before every query token: no mask (the reference code's
      // bottom-right causal mask here would hide the shard's last tokens from early query tokens).
      if (Status s = B::attend(shape_, q, n, shard_, layer, 0, shard_.tokens(), AttentionMask{}, local_out,
                               local_lse, skip, ctx);
          !s.ok()) {
        return s;
      }
    }
    if (comm_.size() == 1) return B::copy(out, local_out, n * qf, ctx);
    const int64_t per_rank = n * shape_.n_heads * (shape_.head_dim + 1);
    const auto start = std::chrono::steady_clock::now();
    if (Status s = B::all_gather(comm_, local_out, per_rank, B::data(gathered_), ctx); !s.ok()) return s;
    floats_sent_ += per_rank;
    Status merged = B::merge_packed(B::data(gathered_), comm_.size(), n, shape_, out, B::data(lse_), ctx);
    gather_merge_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return merged;
  }

  // Floats this rank sent in all-gathers so far (Hq·(d+1) per layer and token).
  int64_t floats_sent() const { return floats_sent_; }
  // Wall seconds in the all-gather and the merge so far (on CUDA over NCCL: enqueueing both).
  double gather_merge_seconds() const { return gather_merge_seconds_; }

 private:
  AttentionShape shape_;
  Communicator& comm_;
  Cache& shard_;
  bool is_query_host_;
  AttentionWindow window_;
  int64_t first_ = 0;
  int64_t floats_sent_ = 0;
  double gather_merge_seconds_ = 0;
  typename B::Floats local_;     // [out n·Hq·d | lse n·Hq]
  typename B::Floats gathered_;  // P × local
  typename B::Floats lse_;       // [n, Hq] of the merge
};

// A context whose partial is not a plain attend over a Cache (RocketKV's compacted shard selects
// rows per KV head first). Read-only: the slot's new tokens go to its own cache.
template <class Context>
class ContextPartial {
 public:
  virtual ~ContextPartial() = default;
  virtual int64_t tokens() const = 0;
  // q [n, Hq, d] of one slot's rows; writes out [n, Hq, d] and lse [n, Hq]. own_first: the slot's
  // own tokens before these rows on the query host, -1 on the other ranks.
  virtual Status attend(int64_t layer, const float* q, int64_t n, int64_t own_first, float* out, float* lse,
                        const SkipSoftmax& skip, Context ctx) = 0;
};

// One sequence's rows in a BatchedQuerySituation.
template <class B>
struct BatchedQuerySlot {
  const typename B::Cache* context = nullptr;                // the context shard, read-only ...
  ContextPartial<typename B::Context>* custom = nullptr;     // ... or a context that attends itself
  typename B::Cache* own = nullptr;                          // the own tokens' rank: them; else null
  AttentionWindow window;
  double skip_softmax_scale_factor = 0;
  int64_t rows = 0;
  // Own tokens kept off the query host (own_host >= 0, a plain context: no custom, no bounded
  // window, no Skip Softmax): own_host attends them into extra rows of the all-gather, and every
  // rank merges that partial with query_host's context partial after it, as the query host merges
  // its own before it, so the rows come out bit for bit as with the own tokens on the query host.
  // Ranks then share the own tokens' reads. -1: `own` is on the query host.
  int own_host = -1;
  int query_host = -1;
};

template <class B>
class BatchedQuerySituation {
 public:
  using Cache = typename B::Cache;
  using Context = typename B::Context;
  using Slot = BatchedQuerySlot<B>;

  BatchedQuerySituation(AttentionShape shape, Communicator& comm, std::vector<Slot> slots)
      : shape_(shape), comm_(comm), slots_(std::move(slots)), own_first_(slots_.size()), tiles_(slots_.size()) {}

  Status begin(int64_t n_new, Context ctx) {
    int64_t rows = 0, widest = 0;
    for (const Slot& slot : slots_) {
      rows += slot.rows;
      widest = std::max(widest, slot.rows);
    }
    if (rows != n_new) {
      return invalid_argument("batched query: the slots hold " + std::to_string(rows) + " rows but the forward has " +
                              std::to_string(n_new));
    }
    if (Status s = place_remote_own(); !s.ok()) return s;
    for (size_t i = 0; i < slots_.size(); ++i) {
      own_first_[i] = -1;
      if (slots_[i].own == nullptr) continue;
      Result<int64_t> first = B::grow(*slots_[i].own, slots_[i].rows, ctx);
      if (!first.ok()) return first.status();
      own_first_[i] = *first;
    }
    const int64_t sent_rows = n_new + extra_rows_;
    const int64_t per_rank = sent_rows * shape_.n_heads * (shape_.head_dim + 1);
    if (Status s = B::reserve(local_, per_rank); !s.ok()) return s;
    if (Status s = B::reserve(gathered_, per_rank * comm_.size()); !s.ok()) return s;
    if (Status s = B::reserve(partial_out_, 2 * widest * shape_.q_floats()); !s.ok()) return s;
    if (Status s = B::reserve(partial_lse_, 2 * widest * shape_.n_heads); !s.ok()) return s;
    if (Status s = B::reserve(shared_out_, n_new * shape_.q_floats()); !s.ok()) return s;
    if (Status s = B::reserve(shared_lse_, n_new * shape_.n_heads); !s.ok()) return s;
    if (extra_rows_ > 0) {
      if (Status s = B::reserve(merged_, sent_rows * shape_.q_floats()); !s.ok()) return s;
    }
    return B::reserve(lse_, sent_rows * shape_.n_heads);
  }

  Status attend(int64_t layer, const float* q, const float* k, const float* v, int64_t n, float* out, Context ctx) {
    const int64_t qf = shape_.q_floats(), kvf = shape_.kv_floats(), H = shape_.n_heads;
    // Every slot's local partial at its rows of one packed [out m·Hq·d | lse m·Hq], m = n plus the
    // extra rows of own partials computed off their query host.
    const int64_t sent_rows = n + extra_rows_;
    float* local_out = B::data(local_);
    float* local_lse = local_out + sent_rows * qf;
    int64_t row = 0;
    for (size_t i = 0; i < slots_.size();) {
      const size_t end = shared_context_end(i);
      const float* context_out = nullptr;
      const float* context_lse = nullptr;
      if constexpr (B::kSharesKeyReads) {
        if (end - i > 1) {
          // Consecutive slots on one context: their context partials in one call that reads the shard once.
          if (Status s = B::attend_shared(shape_, q + row * qf, static_cast<int64_t>(end - i), slots_[i].rows,
                                          *slots_[i].context, layer, 0, slots_[i].context->tokens(),
                                          B::data(shared_out_), B::data(shared_lse_), ctx);
              !s.ok()) {
            return s;
          }
          context_out = B::data(shared_out_);
          context_lse = B::data(shared_lse_);
        }
      }
      for (; i < end; ++i) {
        const int64_t rows = slots_[i].rows;
        if (rows > 0) {
          const int64_t extra = n + extra_row_[i];
          if (Status s = attend_slot(i, layer, q + row * qf, k + row * kvf, v + row * kvf, local_out + row * qf,
                                     local_lse + row * H, local_out + extra * qf, local_lse + extra * H, context_out,
                                     context_lse, ctx);
              !s.ok()) {
            return s;
          }
        }
        row += rows;
        if (context_out != nullptr) {
          context_out += rows * qf;
          context_lse += rows * H;
        }
      }
    }
    if (comm_.size() == 1) return B::copy(out, local_out, n * qf, ctx);
    const int64_t per_rank = sent_rows * H * (shape_.head_dim + 1);
    const auto start = std::chrono::steady_clock::now();
    float* gathered = B::data(gathered_);
    if (Status s = B::all_gather(comm_, local_out, per_rank, gathered, ctx); !s.ok()) return s;
    floats_sent_ += per_rank;
    Status merged = ok_status();
    if (extra_rows_ == 0) {
      // The merge is per row, so one call serves every slot.
      merged = B::merge_packed(gathered, comm_.size(), n, shape_, out, B::data(lse_), ctx);
    } else {
      merged = merge_remote_own(n, per_rank, ctx);
      // The extra rows merge too (one call for every row); only the first n are kept.
      if (merged.ok()) {
        merged = B::merge_packed(gathered, comm_.size(), sent_rows, shape_, B::data(merged_), B::data(lse_), ctx);
      }
      if (merged.ok()) merged = B::copy(out, B::data(merged_), n * qf, ctx);
    }
    gather_merge_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return merged;
  }

  // Floats this rank sent in all-gathers so far (N·Hq·(d+1) per layer for the N rows of every slot
  // and the extra rows of own tokens off their query host).
  int64_t floats_sent() const { return floats_sent_; }
  double gather_merge_seconds() const { return gather_merge_seconds_; }
  // Skip Softmax tiles of slot i's rows so far (counted only where its S > 0).
  SkipSoftmaxTiles slot_tiles(size_t i) const { return tiles_[i]; }
  size_t slots() const { return slots_.size(); }

 private:
  // The end of the run of slots from i that attend_shared serves together: the same plain context
  // shard, attended with no mask (no bounded window on the query host), no Skip Softmax, the same
  // rows. A run of one is a slot alone.
  size_t shared_context_end(size_t i) const {
    if constexpr (!B::kSharesKeyReads) return i + 1;
    const auto plain = [](const Slot& s) {
      return s.custom == nullptr && s.context->tokens() > 0 && s.skip_softmax_scale_factor == 0 && s.rows > 0 &&
             !(s.own != nullptr && s.window.bounded());
    };
    if (!plain(slots_[i])) return i + 1;
    size_t end = i + 1;
    while (end < slots_.size() && plain(slots_[end]) && slots_[end].context == slots_[i].context &&
           slots_[end].rows == slots_[i].rows) {
      ++end;
    }
    return end;
  }

  // context_out, context_lse: the slot's context partial when attend_shared made it, else null.
  // extra_out, extra_lse: where the own rank of a slot whose query host is another puts its own
  // tokens' partial.
  Status attend_slot(size_t i, int64_t layer, const float* q, const float* k, const float* v, float* out, float* lse,
                     float* extra_out, float* extra_lse, const float* context_out, const float* context_lse,
                     Context ctx) {
    const Slot& slot = slots_[i];
    const int64_t n = slot.rows;
    const SkipSoftmax skip{slot.skip_softmax_scale_factor,
                           slot.skip_softmax_scale_factor > 0 ? &tiles_[i] : nullptr};
    const int64_t context_tokens = slot.custom != nullptr ? slot.custom->tokens() : slot.context->tokens();
    if (slot.own == nullptr || slot.own_host >= 0) {
      if (context_out == nullptr) {
        if (Status s = attend_context(slot, layer, q, n, -1, out, lse, skip, ctx); !s.ok()) return s;
      } else {
        if (Status s = B::copy(out, context_out, n * shape_.q_floats(), ctx); !s.ok()) return s;
        if (Status s = B::copy(lse, context_lse, n * shape_.n_heads, ctx); !s.ok()) return s;
      }
      if (slot.own == nullptr) return ok_status();
      const int64_t own_first = own_first_[i];
      if (Status s = B::store(*slot.own, layer, own_first, k, v, n, ctx); !s.ok()) return s;
      const AttentionMask own_mask = causal_mask_from(own_first, {0, slot.window.window});
      return B::attend(shape_, q, n, *slot.own, layer, 0, own_first + n, own_mask, extra_out, extra_lse, skip, ctx);
    }

    const int64_t own_first = own_first_[i];
    if (Status s = B::store(*slot.own, layer, own_first, k, v, n, ctx); !s.ok()) return s;
    // The own tokens follow the whole context: causal among themselves, the window counted in
    // positions after the context (its sinks lie in the context).
    const AttentionMask own_mask = causal_mask_from(own_first, {0, slot.window.window});
    if (context_tokens == 0) {
      return B::attend(shape_, q, n, *slot.own, layer, 0, own_first + n, own_mask, out, lse, skip, ctx);
    }
    float* out_context = B::data(partial_out_);
    float* out_own = out_context + n * shape_.q_floats();
    float* lse_context = B::data(partial_lse_);
    float* lse_own = lse_context + n * shape_.n_heads;
    if (context_out != nullptr) {
      if (Status s = B::copy(out_context, context_out, n * shape_.q_floats(), ctx); !s.ok()) return s;
      if (Status s = B::copy(lse_context, context_lse, n * shape_.n_heads, ctx); !s.ok()) return s;
    } else if (Status s = attend_context(slot, layer, q, n, own_first, out_context, lse_context, skip, ctx);
               !s.ok()) {
      return s;
    }
    if (Status s = B::attend(shape_, q, n, *slot.own, layer, 0, own_first + n, own_mask, out_own, lse_own, skip, ctx);
        !s.ok()) {
      return s;
    }
    return B::merge(out_context, lse_context, 2, n, shape_, out, lse, ctx);
  }

  // Each slot's first row, and for the slots with own_host >= 0 their rows among the extra rows
  // of their own host (extra_rows_: the most any rank has); checks those slots are plain.
  Status place_remote_own() {
    std::vector<int64_t> extra_of_rank(static_cast<size_t>(comm_.size()), 0);
    slot_row_.assign(slots_.size(), 0);
    extra_row_.assign(slots_.size(), 0);
    int64_t row = 0;
    for (size_t i = 0; i < slots_.size(); ++i) {
      const Slot& slot = slots_[i];
      slot_row_[i] = row;
      row += slot.rows;
      if (slot.own_host < 0) continue;
      const std::string which = "batched query: slot " + std::to_string(i);
      if (slot.own_host >= comm_.size() || slot.query_host < 0 || slot.query_host >= comm_.size() ||
          slot.own_host == slot.query_host) {
        return invalid_argument(which + ": own_host " + std::to_string(slot.own_host) + " and query_host " +
                                std::to_string(slot.query_host) + " must be two ranks of " +
                                std::to_string(comm_.size()));
      }
      if (slot.custom != nullptr || slot.window.bounded() || slot.skip_softmax_scale_factor > 0) {
        return invalid_argument(which + ": own tokens off the query host need a plain context (no RocketKV, "
                                        "no bounded window, no Skip Softmax)");
      }
      if ((slot.own != nullptr) != (slot.own_host == comm_.rank())) {
        return invalid_argument(which + ": the own tokens' cache must be on own_host " +
                                std::to_string(slot.own_host) + " alone");
      }
      int64_t& extra = extra_of_rank[static_cast<size_t>(slot.own_host)];
      extra_row_[i] = extra;
      extra += slot.rows;
    }
    extra_rows_ = *std::max_element(extra_of_rank.begin(), extra_of_rank.end());
    return ok_status();
  }

  // In the gathered partials (per_rank floats a rank, n + extra_rows_ rows each), each slot whose
  // own tokens are off its query host: its query host's context partial merged with its own
  // host's own partial, in the query host's rows, as attend_slot merges them on the query host.
  Status merge_remote_own(int64_t n, int64_t per_rank, Context ctx) {
    const int64_t qf = shape_.q_floats(), H = shape_.n_heads;
    const int64_t lse_at = (n + extra_rows_) * qf;  // a rank's lse after its out rows
    float* gathered = B::data(gathered_);
    for (size_t i = 0; i < slots_.size(); ++i) {
      const Slot& slot = slots_[i];
      if (slot.own_host < 0 || slot.rows == 0) continue;
      const int64_t rows = slot.rows;
      float* host = gathered + slot.query_host * per_rank;
      const float* own = gathered + slot.own_host * per_rank;
      const int64_t row = slot_row_[i], extra = n + extra_row_[i];
      float* outs = B::data(partial_out_);
      float* lses = B::data(partial_lse_);
      if (Status s = B::copy(outs, host + row * qf, rows * qf, ctx); !s.ok()) return s;
      if (Status s = B::copy(outs + rows * qf, own + extra * qf, rows * qf, ctx); !s.ok()) return s;
      if (Status s = B::copy(lses, host + lse_at + row * H, rows * H, ctx); !s.ok()) return s;
      if (Status s = B::copy(lses + rows * H, own + lse_at + extra * H, rows * H, ctx); !s.ok()) return s;
      if (Status s = B::merge(outs, lses, 2, rows, shape_, host + row * qf, host + lse_at + row * H, ctx); !s.ok()) {
        return s;
      }
    }
    return ok_status();
  }

  // The context lies wholly before every row: no mask, but for a bounded window on the query host.
  Status attend_context(const Slot& slot, int64_t layer, const float* q, int64_t n, int64_t own_first, float* out,
                        float* lse, const SkipSoftmax& skip, Context ctx) {
    if (slot.custom != nullptr) return slot.custom->attend(layer, q, n, own_first, out, lse, skip, ctx);
    const int64_t tokens = slot.context->tokens();
    const AttentionMask mask = own_first >= 0 && slot.window.bounded()
                                   ? causal_mask_from(tokens + own_first, slot.window)
                                   : AttentionMask{};
    return B::attend(shape_, q, n, *slot.context, layer, 0, tokens, mask, out, lse, skip, ctx);
  }

  AttentionShape shape_;
  Communicator& comm_;
  std::vector<Slot> slots_;
  std::vector<int64_t> own_first_;  // per slot: own rows before this forward's, -1 where `own` is not
  std::vector<int64_t> slot_row_;   // per slot: its first row
  std::vector<int64_t> extra_row_;  // per slot with own_host >= 0: its first row among its host's extra rows
  int64_t extra_rows_ = 0;          // extra rows every rank sends: the most any rank hosts off their query host
  std::vector<SkipSoftmaxTiles> tiles_;
  int64_t floats_sent_ = 0;
  double gather_merge_seconds_ = 0;
  typename B::Floats local_;        // [out m·Hq·d | lse m·Hq], m = n + extra_rows_: every slot's rows
  typename B::Floats gathered_;     // P × local
  typename B::Floats partial_out_;  // [2, rows, Hq, d]: context, own (one slot at a time)
  typename B::Floats partial_lse_;  // [2, rows, Hq]
  typename B::Floats lse_;          // [n + extra_rows_, Hq] of the merge
  typename B::Floats merged_;       // [n + extra_rows_, Hq, d] of the merge when there are extra rows
  typename B::Floats shared_out_;   // [n, Hq, d]: context partials of a run of slots (attend_shared)
  typename B::Floats shared_lse_;   // [n, Hq]
};

}  // namespace star
