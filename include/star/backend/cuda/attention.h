// Flash-style attention forward on the GPU, returning the log-sum-exp beside the output; same
// contract as cpu::attention_forward, so Phase 1 blocks, Phase 2 shards and decoding all use it.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "star/backend/cpu/attention.h"
#include "star/common/status.h"

namespace star::cuda {

// q [nq, Hq, d] float32; k and v [nk, Hkv, d], float32 or bf16 (the KV cache's type; GQA: query
// head h uses kv head h / (Hq/Hkv)); out [nq, Hq, d] and lse [nq, Hq] float32, lse the natural-log
// log-sum-exp of scale * q.k over the keys the mask lets each row see. A row that sees no key gets
// out = 0 and lse = -inf (nk == 0 is allowed). Device pointers; out and lse must not overlap the
// inputs. Needs Hq % Hkv == 0 and 1 <= d <= 256; other shapes are INVALID_ARGUMENT.
//
// One thread block takes 16 rows (pairs of query token and query head of one kv head, so a K/V
// tile in shared memory serves the whole GQA group) against tiles of 32 keys, with an online
// softmax in registers; dot products and the P·V product run in float32 on the CUDA cores.
// Key tiles no row of the block sees are skipped. When (row tiles x kv heads) would leave most
// multiprocessors idle (decoding, short queries over a long shard), the key range is split too and
// the pieces merged with merge_partials, in scratch from the device's default stream-ordered
// memory pool (whose release threshold this sets to keep freed memory for the next call).
//
// Skip Softmax (`skip`, as in cpu::attention_forward): the vote group is the block's 16 rows and the
// tile its 32 keys; a skipped tile reads no V. Counting tiles waits for the stream.
Status attention_forward(const float* q, int64_t nq, const float* k, const float* v, int64_t nk,
                         int64_t n_heads, int64_t n_kv_heads, int64_t head_dim, float scale,
                         const AttentionMask& mask, float* out, float* lse, cudaStream_t stream,
                         const SkipSoftmax& skip = {});
Status attention_forward(const float* q, int64_t nq, const __nv_bfloat16* k,
                         const __nv_bfloat16* v, int64_t nk, int64_t n_heads, int64_t n_kv_heads,
                         int64_t head_dim, float scale, const AttentionMask& mask, float* out,
                         float* lse, cudaStream_t stream, const SkipSoftmax& skip = {});

}  // namespace star::cuda
