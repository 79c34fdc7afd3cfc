// Scaled dot-product attention on the CPU: the one kernel behind prefill, decoding, Phase 1 blocks,
// Phase 2 shards and ring steps. It returns the log-sum-exp beside the output so partial results
// over disjoint key sets can be merged exactly (star/attention/merge.h).
#pragma once

#include <cstdint>

#include "star/attention/block_plan.h"
#include "star/attention/skip_softmax.h"
#include "star/model/kv_dtype.h"

namespace star {

// Which keys each query sees. Query i and key j are indices into the q and k/v arrays given to the
// kernel; causal_offset places query i at key position causal_offset + i.
struct AttentionMask {
  bool causal = false;
  int64_t causal_offset = 0;  // causal: query i sees key j iff j <= causal_offset + i
  AttentionWindow window;     // when bounded, query i additionally sees only keys
                              // j < window.sink or j > (causal_offset + i) - window.window
};

namespace cpu {

// How attention_forward cuts a call, which fixes what Skip Softmax votes on. Tasks take query
// tokens [i * tile_tokens, (i + 1) * tile_tokens) of one kv head, whose rows (token-major, the GQA
// group's query heads inside each token) vote in consecutive groups of vote_rows; keys are cut
// into split-KV pieces [s * split_keys, (s + 1) * split_keys), each its own running-max state,
// and each piece into tiles of key_tile keys from its start.
struct AttentionTiling {
  int64_t key_tile = 0;
  int64_t split_keys = 0;
  int64_t tile_tokens = 0;
  int64_t vote_rows = 0;
};
AttentionTiling attention_tiling(int64_t nq, int64_t nk, int64_t n_heads, int64_t n_kv_heads, int64_t head_dim,
                                 int threads);

// q [nq, Hq, d], k and v [nk, Hkv, d] (GQA: query head h uses kv head h / (Hq/Hkv)) stored as one
// KvDType (f32, bf16, or q8_0 with d a multiple of 32), read as stored: each key tile is decoded
// into the task's float32 tile, so the result is that of float32 K and V equal to decode_kv's
// (except where attention_rounds_to_bf16).
// out [nq, Hq, d], lse [nq, Hq] natural-log log-sum-exp of the scaled scores (scale * q.k).
// A query row that sees no key gets out = 0 and lse = -inf (so nk == 0 is allowed).
// Requires Hq % Hkv == 0; out and lse must not overlap the inputs.
//
// Flash-attention style: tiles of (query tokens x query heads sharing one kv head) against tiles
// of keys, with an online softmax, so extra memory is O(tile) per thread. Fully masked key tiles
// are skipped. OpenMP threads share (kv head, query tile) tasks; a short query (decoding, Phase 2)
// instead gives each task every kv head and a slice of the keys, so threads stream disjoint parts
// of the cache, and the slices are merged with merge_partials. `skip` turns on Skip Softmax (see
// SkipSoftmax; attention_tiling for its tiles and vote groups); without it the result is the dense one.
void attention_forward(const float* q, int64_t nq, KvRows k, KvRows v, int64_t nk, int64_t n_heads,
                       int64_t n_kv_heads, int64_t head_dim, float scale, const AttentionMask& mask,
                       float* out, float* lse, const SkipSoftmax& skip = {});

// `queries` independent queries of nq tokens each, q [queries * nq, Hq, d] (query i's tokens at
// rows [i * nq, (i + 1) * nq)), against the same keys with no mask and no Skip Softmax: out and lse
// as attention_forward's, each query's rows bit for bit those of its own attention_forward call.
// Many decoding sequences on one context shard (Phase 2 sessions) then decode each key tile once
// for all of them instead of once each.
void attention_forward_shared_keys(const float* q, int64_t queries, int64_t nq, KvRows k, KvRows v, int64_t nk,
                                   int64_t n_heads, int64_t n_kv_heads, int64_t head_dim, float scale, float* out,
                                   float* lse);
// Whether attention_forward_shared_keys decodes each key tile once for queries of nq tokens on a
// cache of `dtype`: the rows of one query, nq * Hq / Hkv, fit one row block of this build's vectors
// (1 token and GQA group <= 4 with AVX, <= 2 without; head_dim a multiple of the row blocks' vector,
// 16 floats with AVX-512), or the query takes the bf16 pairs (attention_rounds_to_bf16) and its
// rows fit one query tile (128 with AVX: a 16-token query with a GQA group of up to 8);
// otherwise it runs one attention_forward a query.
bool attention_shares_key_tiles(int64_t nq, int64_t n_heads, int64_t n_kv_heads, int64_t head_dim, KvDType dtype);

// Whether a query of nq tokens on a cache of `dtype` takes the bf16 pair products: built for a CPU
// with AVX512-BF16, a bf16 cache, head_dim a multiple of 32, and, with Skip Softmax on
// (`skip_softmax`: 0 < lambda < 1), a decoding token (nq * Hq / Hkv <= 4, whose rows vote as one
// block). Its scores and values then multiply bf16 pairs (vdpbf16ps) into float32 sums, with the
// scaled queries (q * scale * log2 e) and the softmax probabilities rounded to bf16 (nearest even),
// as FlashAttention's products on a GPU; the running max, the sums and lse stay float32. That holds
// for a Phase 1 block as for a decoding token. Otherwise the result is the float32 kernel's on the
// stored values, bit for bit.
bool attention_rounds_to_bf16(int64_t nq, int64_t n_heads, int64_t n_kv_heads, int64_t head_dim, KvDType dtype,
                              bool skip_softmax);

// Float32 K and V.
inline void attention_forward(const float* q, int64_t nq, const float* k, const float* v, int64_t nk,
                              int64_t n_heads, int64_t n_kv_heads, int64_t head_dim, float scale,
                              const AttentionMask& mask, float* out, float* lse,
                              const SkipSoftmax& skip = {}) {
  attention_forward(q, nq, KvRows::f32(k), KvRows::f32(v), nk, n_heads, n_kv_heads, head_dim, scale, mask,
                    out, lse, skip);
}

}  // namespace cpu
}  // namespace star
