// Register-blocked inner loops of the CPU attention kernel, in two layouts.
//
// Column blocks (score_block, value_block): query rows (pairs of query token and query head) run
// along the vector lanes. Queries and the output accumulator are kept transposed, [d][rows], so
// both products of attention become one pattern: broadcast an element of K or V and multiply it
// into a vector of rows. This needs kLanes rows to fill a vector: prefill and longer queries.
//
// Row blocks (score_keys, value_rows): for decoding, where a kv head has only a few query rows
// (Hq / Hkv of them), rows stay row-major and a key tile, transposed once, serves them all: scores
// take keys along the lanes (a broadcast query element times a vector of keys), values head_dim.
// Many decoding sequences on one context share each transposed tile, so the kernel then runs as a
// small matrix product, yet each row's arithmetic is the one it has alone. On a bf16 cache with
// AVX512-BF16 the row blocks multiply bf16 pairs instead (kBf16Pairs, at the end).
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__AVX512BF16__)
#include <immintrin.h>
#endif

#include "simd.h"

namespace star::cpu::attention_blocks {

using simd::kLanes;
using simd::Vec;

// Row vectors processed together (kLanes query rows each).
inline constexpr int kMaxRowVectors = simd::kVectorRegisters == 32 ? 4 : 2;

// Block height MR for NV row vectors: MR * NV accumulators, NV row operands and one broadcast fit
// in the vector registers, with at least 8 accumulators to cover the FMA latency.
template <int NV>
inline constexpr int kBlockHeight = NV == 1 ? 12 : NV == 2 ? (kMaxRowVectors == 4 ? 12 : 6) : NV == 3 ? 8 : 6;

// Calls fn.template operator()<MR>(first) for blocks covering [0, count): full blocks of
// kBlockHeight<NV>, then the remainder in blocks of 8, 4, 2 and 1.
template <int NV, typename Fn>
inline void for_each_block(int64_t count, Fn&& fn) {
  constexpr int kMr = kBlockHeight<NV>;
  int64_t first = 0;
  for (; first + kMr <= count; first += kMr) fn.template operator()<kMr>(first);
  if constexpr (kMr > 8) {
    if (first + 8 <= count) {
      fn.template operator()<8>(first);
      first += 8;
    }
  }
  if constexpr (kMr > 4) {
    if (first + 4 <= count) {
      fn.template operator()<4>(first);
      first += 4;
    }
  }
  if (first + 2 <= count) {
    fn.template operator()<2>(first);
    first += 2;
  }
  if (first < count) fn.template operator()<1>(first);
}

// Scores of MR keys against NV * kLanes query rows:
//   st[m, :] = sum_p k[m * ldk + p] * qt[p * ldq + :]      m < MR, p < d
// k [MR, d] keys (row stride ldk), qt [d, NV*kLanes] transposed queries, st [MR, NV*kLanes].
template <int MR, int NV>
inline void score_block(const float* k, int64_t ldk, const float* qt, int64_t ldq, int64_t d,
                        float* st, int64_t lds) {
  Vec acc[MR][NV] = {};
  for (int64_t p = 0; p < d; ++p) {
    Vec rows[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) rows[v] = simd::load(qt + p * ldq + v * kLanes);
#pragma GCC unroll 16
    for (int m = 0; m < MR; ++m) {
      const Vec key = simd::splat(k[m * ldk + p]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[m][v] += key * rows[v];
    }
  }
  for (int m = 0; m < MR; ++m) {
    for (int v = 0; v < NV; ++v) simd::store(st + m * lds + v * kLanes, acc[m][v]);
  }
}

// Rescaled accumulation of MR output dimensions over bc keys:
//   ot[m, :] = alpha * ot[m, :] + sum_c v[c * ldv + m] * pt[c * ldp + :]      m < MR, c < bc
// v [bc, MR] a column slice of the values (row stride ldv), pt [bc, NV*kLanes] transposed
// probabilities, alpha [NV] per-row rescale factors, ot [MR, NV*kLanes] (row stride ldo).
template <int MR, int NV>
inline void value_block(const float* v, int64_t ldv, const float* pt, int64_t ldp, int64_t bc,
                        const Vec* alpha, float* ot, int64_t ldo) {
  Vec acc[MR][NV];
  for (int m = 0; m < MR; ++m) {
    for (int r = 0; r < NV; ++r) acc[m][r] = simd::load(ot + m * ldo + r * kLanes) * alpha[r];
  }
  for (int64_t c = 0; c < bc; ++c) {
    Vec probs[NV];
#pragma GCC unroll 4
    for (int r = 0; r < NV; ++r) probs[r] = simd::load(pt + c * ldp + r * kLanes);
#pragma GCC unroll 16
    for (int m = 0; m < MR; ++m) {
      const Vec value = simd::splat(v[c * ldv + m]);
#pragma GCC unroll 4
      for (int r = 0; r < NV; ++r) acc[m][r] += value * probs[r];
    }
  }
  for (int m = 0; m < MR; ++m) {
    for (int r = 0; r < NV; ++r) simd::store(ot + m * ldo + r * kLanes, acc[m][r]);
  }
}

// Rows of queries handled by the row blocks: up to half a vector, beyond which columns are as good.
inline constexpr int kMaxDecodeRows = kLanes / 2;

// The row blocks' own vectors: 16 lanes where AVX-512 has them (the column blocks keep kLanes, whose
// register tiles are sized for it), else kLanes.
#if defined(__AVX512F__)
inline constexpr int kWideLanes = 16;
#else
inline constexpr int kWideLanes = kLanes;
#endif
using WideVec = float __attribute__((vector_size(kWideLanes * sizeof(float))));

// Vectors of head_dim a value_rows pass accumulates per row.
inline constexpr int kValueChunks = simd::kVectorRegisters == 32 ? 4 : 2;

// Rows a row block takes at once (several decoding queries sharing a key tile fill them): with 32
// registers, 6 x 4 accumulators, 4 key or value vectors and a broadcast. Never fewer than one
// query's rows, which share a block (Skip Softmax votes by block).
inline constexpr int kRowBlockRows = simd::kVectorRegisters == 32 ? 6 : kMaxDecodeRows;
static_assert(kRowBlockRows >= kMaxDecodeRows);

inline WideVec load_wide(const float* p) {
  WideVec v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
inline void store_wide(float* p, WideVec v) { std::memcpy(p, &v, sizeof(v)); }

// Scores of R query rows against NK * kWideLanes keys, keys along the lanes:
//   s[r, c] = sum_p q[r * d + p] * kt[p * ldk + c]      r < R, c < NK * kWideLanes, p < d
// q [R, d] row-major queries, kt [d, ldk] the keys transposed (transpose_keys), s [R, lds]. Each
// score is one chain of multiply-adds over p in order, so a row's scores do not depend on R, NK or
// the rows beside it.
template <int R, int NK>
inline void score_keys(const float* q, int64_t d, const float* kt, int64_t ldk, float* s, int64_t lds) {
  WideVec acc[R][NK] = {};
  for (int64_t p = 0; p < d; ++p) {
    WideVec keys[NK];
#pragma GCC unroll 4
    for (int j = 0; j < NK; ++j) keys[j] = load_wide(kt + p * ldk + j * kWideLanes);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const WideVec query = q[r * d + p] - WideVec{};
#pragma GCC unroll 4
      for (int j = 0; j < NK; ++j) acc[r][j] += query * keys[j];
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int j = 0; j < NK; ++j) store_wide(s + r * lds + j * kWideLanes, acc[r][j]);
  }
}

// kt[p * ldt + c] = k[c * ldk + p] for c < n (a multiple of kWideLanes), p < d (the same): a key
// tile [n, d] turned into the [d, n] that score_keys reads, kWideLanes x kWideLanes at a time.
void transpose_keys(const float* k, int64_t ldk, int64_t n, int64_t d, float* kt, int64_t ldt);

// Rescaled accumulation of NC wide vectors of output per row over bc keys:
//   o[r, i] = alpha[r] * o[r, i] + sum_c p[r * ldp + c] * v[c * ldv + i]      r < R, i < NC * kWideLanes
// p [R, bc] probabilities (row stride ldp), v [bc, NC * kWideLanes] a column slice of the values
// (row stride ldv), o [R, NC * kWideLanes] (row stride ldo).
template <int R, int NC>
inline void value_rows(const float* p, int64_t ldp, const float* v, int64_t ldv, int64_t bc,
                       const float* alpha, float* o, int64_t ldo) {
  WideVec acc[R][NC];
  for (int r = 0; r < R; ++r) {
    for (int j = 0; j < NC; ++j) acc[r][j] = load_wide(o + r * ldo + j * kWideLanes) * alpha[r];
  }
  for (int64_t c = 0; c < bc; ++c) {
    WideVec values[NC];
#pragma GCC unroll 4
    for (int j = 0; j < NC; ++j) values[j] = load_wide(v + c * ldv + j * kWideLanes);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const WideVec prob = p[r * ldp + c] - WideVec{};
#pragma GCC unroll 4
      for (int j = 0; j < NC; ++j) acc[r][j] += prob * values[j];
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int j = 0; j < NC; ++j) store_wide(o + r * ldo + j * kWideLanes, acc[r][j]);
  }
}

// Decoding on a bf16 cache where the CPU multiplies bf16 pairs (AVX512-BF16's vdpbf16ps: two
// products a lane, each exact in float32, added into a float32 accumulator): the row blocks then
// take the keys and values as stored, and round the scaled queries and the probabilities to bf16,
// as FlashAttention's products do on a GPU; every sum stays float32 (vdpbf16ps flushes denormals
// to zero: a probability below 2^-126 counts as 0). This halves the instructions of both products
// and the bytes of the packed tiles, against the float32 blocks above.
#if defined(__AVX512BF16__)
inline constexpr bool kBf16Pairs = true;

// Scores of R rows against NK * 16 keys from bf16 pairs, keys along the lanes:
//   s[r, c] = sum_p (q2[r * d2 + p] . kt2[p * ldk + c])      p < d2 = d / 2
// where each 32-bit word holds elements 2p and 2p + 1 (q2: a row's rounded queries; kt2: the keys
// turned on their side a word at a time, transpose_keys on the stored rows). One chain over p in
// order per score, as score_keys.
template <int R, int NK>
inline void score_keys_bf16(const uint32_t* q2, int64_t d2, const uint32_t* kt2, int64_t ldk, float* s,
                            int64_t lds) {
  __m512 acc[R][NK];
  for (int r = 0; r < R; ++r) {
    for (int j = 0; j < NK; ++j) acc[r][j] = _mm512_setzero_ps();
  }
  for (int64_t p = 0; p < d2; ++p) {
    __m512bh keys[NK];
#pragma GCC unroll 4
    for (int j = 0; j < NK; ++j) keys[j] = (__m512bh)_mm512_loadu_si512(kt2 + p * ldk + j * 16);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512bh query = (__m512bh)_mm512_set1_epi32(static_cast<int>(q2[r * d2 + p]));
#pragma GCC unroll 4
      for (int j = 0; j < NK; ++j) acc[r][j] = _mm512_dpbf16_ps(acc[r][j], query, keys[j]);
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int j = 0; j < NK; ++j) _mm512_storeu_ps(s + r * lds + j * 16, acc[r][j]);
  }
}

// value_rows from bf16 pairs: o[r, i] = alpha[r] * o[r, i] + sum_c (p2[r * ldp + c] . v2[c * ldv + i])
// over c < pairs, where p2's word c holds the probabilities of keys 2c and 2c + 1 and v2's word
// (c, i) the values of element i of the same two keys (interleave_value_pairs).
template <int R, int NC>
inline void value_rows_bf16(const uint32_t* p2, int64_t ldp, const uint32_t* v2, int64_t ldv, int64_t pairs,
                            const float* alpha, float* o, int64_t ldo) {
  __m512 acc[R][NC];
  for (int r = 0; r < R; ++r) {
    for (int j = 0; j < NC; ++j) {
      acc[r][j] = _mm512_mul_ps(_mm512_loadu_ps(o + r * ldo + j * 16), _mm512_set1_ps(alpha[r]));
    }
  }
  for (int64_t c = 0; c < pairs; ++c) {
    __m512bh values[NC];
#pragma GCC unroll 4
    for (int j = 0; j < NC; ++j) values[j] = (__m512bh)_mm512_loadu_si512(v2 + c * ldv + j * 16);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512bh prob = (__m512bh)_mm512_set1_epi32(static_cast<int>(p2[r * ldp + c]));
#pragma GCC unroll 4
      for (int j = 0; j < NC; ++j) acc[r][j] = _mm512_dpbf16_ps(acc[r][j], prob, values[j]);
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int j = 0; j < NC; ++j) _mm512_storeu_ps(o + r * ldo + j * 16, acc[r][j]);
  }
}

// transpose_keys for 32-bit words: keys as stored, a bf16 pair a word.
void transpose_keys(const uint32_t* k, int64_t ldk, int64_t n, int64_t d, uint32_t* kt, int64_t ldt);

// dst[0:n) = src[0:n) rounded to bf16 (nearest even), n a multiple of 8: a row of queries or
// probabilities as the bf16 pairs the products above read.
void round_to_bf16(const float* src, int64_t n, uint32_t* dst);

// v2[h * head_stride + c * ldv + i] = (element i of head h of key 2c, the same of key 2c + 1) for
// the bf16 rows of `keys` keys at v (row stride ldv_src elements, `heads` heads of d elements side
// by side), i < d (a multiple of 32); with an odd count the last pair's second key is zero.
void interleave_value_pairs(const uint16_t* v, int64_t ldv_src, int64_t keys, int64_t d, int64_t heads,
                            uint32_t* v2, int64_t ldv, int64_t head_stride);
#else
inline constexpr bool kBf16Pairs = false;
#endif

}  // namespace star::cpu::attention_blocks
