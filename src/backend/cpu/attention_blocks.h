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
// small matrix product, yet each row's arithmetic is the one it has alone.
#pragma once

#include <cstdint>
#include <cstring>

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

}  // namespace star::cpu::attention_blocks
