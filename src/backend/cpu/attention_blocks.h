// Register-blocked inner loops of the CPU attention kernel, in two layouts.
//
// Column blocks (score_block, value_block): query rows (pairs of query token and query head) run
// along the vector lanes. Queries and the output accumulator are kept transposed, [d][rows], so
// both products of attention become one pattern: broadcast an element of K or V and multiply it
// into a vector of rows. This needs kLanes rows to fill a vector: prefill and longer queries.
//
// Row blocks (score_rows, value_rows): for decoding, where a kv head has only a few query rows
// (Hq / Hkv of them), head_dim runs along the lanes instead and rows stay row-major; scores come
// out with keys along the lanes.
#pragma once

#include <cstdint>

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

// Vectors of head_dim a value_rows pass accumulates per row.
inline constexpr int kValueChunks = simd::kVectorRegisters == 32 ? 4 : 2;

// Scores of R query rows against kLanes keys:
//   s[r, c] = sum_p q[r * d + p] * k[c * ldk + p]      r < R, c < kLanes, p < d
// q [R, d] row-major queries, k [kLanes, d] keys (row stride ldk), s [R, kLanes] (row stride lds).
// d must be a multiple of kLanes. With 32 vector registers two rows share each key load (the loads,
// not the FMAs, bound a row alone); every row's sums are the same operations in the same order
// either way, so a row's scores do not depend on the rows beside it.
template <int R>
inline void score_rows(const float* q, int64_t d, const float* k, int64_t ldk, float* s,
                       int64_t lds) {
  int r = 0;
  if constexpr (simd::kVectorRegisters == 32) {
    for (; r + 2 <= R; r += 2) {
      Vec acc0[kLanes] = {};
      Vec acc1[kLanes] = {};
      for (int64_t p = 0; p < d; p += kLanes) {
        const Vec query0 = simd::load(q + r * d + p);
        const Vec query1 = simd::load(q + (r + 1) * d + p);
#pragma GCC unroll 8
        for (int c = 0; c < kLanes; ++c) {
          const Vec key = simd::load(k + c * ldk + p);
          acc0[c] += key * query0;
          acc1[c] += key * query1;
        }
      }
      simd::store(s + r * lds, simd::transpose_sum(acc0));
      simd::store(s + (r + 1) * lds, simd::transpose_sum(acc1));
    }
  }
  for (; r < R; ++r) {
    Vec acc[kLanes] = {};
    for (int64_t p = 0; p < d; p += kLanes) {
      const Vec query = simd::load(q + r * d + p);
#pragma GCC unroll 8
      for (int c = 0; c < kLanes; ++c) acc[c] += simd::load(k + c * ldk + p) * query;
    }
    simd::store(s + r * lds, simd::transpose_sum(acc));
  }
}

// Rescaled accumulation of NC vectors of output per row over bc keys:
//   o[r, i] = alpha[r] * o[r, i] + sum_c p[r * ldp + c] * v[c * ldv + i]      r < R, i < NC*kLanes
// p [R, bc] probabilities (row stride ldp), v [bc, NC*kLanes] a column slice of the values (row
// stride ldv), o [R, NC*kLanes] (row stride ldo).
template <int R, int NC>
inline void value_rows(const float* p, int64_t ldp, const float* v, int64_t ldv, int64_t bc,
                       const float* alpha, float* o, int64_t ldo) {
  Vec acc[R][NC];
  for (int r = 0; r < R; ++r) {
    for (int j = 0; j < NC; ++j) acc[r][j] = simd::load(o + r * ldo + j * kLanes) * alpha[r];
  }
  for (int64_t c = 0; c < bc; ++c) {
    Vec values[NC];
#pragma GCC unroll 4
    for (int j = 0; j < NC; ++j) values[j] = simd::load(v + c * ldv + j * kLanes);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const Vec prob = simd::splat(p[r * ldp + c]);
#pragma GCC unroll 4
      for (int j = 0; j < NC; ++j) acc[r][j] += prob * values[j];
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int j = 0; j < NC; ++j) simd::store(o + r * ldo + j * kLanes, acc[r][j]);
  }
}

}  // namespace star::cpu::attention_blocks
