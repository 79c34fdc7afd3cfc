// The end of an AVX-512 register tile: each output's float lanes summed in one fixed order and
// stored, so an output's value does not depend on the tile it was computed in.
#pragma once

#include <immintrin.h>

#include <cstdint>

#define STAR_ZMM_TILE_INLINE __attribute__((always_inline, target("avx2,fma,f16c,avx512f,avx512bw,avx512vl"))) inline

namespace star::cpu::row_dots {

// The horizontal sums of 4 vectors at once, in lanes 0, 4, 8 and 12: the same additions of the same
// lane pairs as _mm512_reduce_add_ps of each vector alone (halves, then quarters, then pairs), so
// a sum does not depend on which vectors share the call.
STAR_ZMM_TILE_INLINE __m512 sums_of_4(__m512 a, __m512 b, __m512 c, __m512 d) {
  const __m512 ab = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(1, 0, 1, 0)),
                                  _mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(3, 2, 3, 2)));
  const __m512 cd = _mm512_add_ps(_mm512_shuffle_f32x4(c, d, _MM_SHUFFLE(1, 0, 1, 0)),
                                  _mm512_shuffle_f32x4(c, d, _MM_SHUFFLE(3, 2, 3, 2)));
  const __m512 quarters = _mm512_add_ps(_mm512_shuffle_f32x4(ab, cd, _MM_SHUFFLE(2, 0, 2, 0)),
                                        _mm512_shuffle_f32x4(ab, cd, _MM_SHUFFLE(3, 1, 3, 1)));
  const __m512 pairs = _mm512_add_ps(quarters, _mm512_permute_ps(quarters, _MM_SHUFFLE(1, 0, 3, 2)));
  return _mm512_add_ps(pairs, _mm512_permute_ps(pairs, _MM_SHUFFLE(2, 3, 0, 1)));
}

template <int MR, int NR>
STAR_ZMM_TILE_INLINE void store(__m512 (&acc)[MR][NR], float* y, int64_t ldy, bool accumulate) {
  static_assert(MR <= 4);
  for (int i = 0; i < NR; ++i) {
    __m512 v[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    for (int r = 0; r < MR; ++r) v[r] = acc[r][i];
    alignas(64) float sums[16];
    _mm512_store_ps(sums, sums_of_4(v[0], v[1], v[2], v[3]));
    for (int r = 0; r < MR; ++r) {
      float& out = y[i * ldy + r];
      out = accumulate ? out + sums[4 * r] : sums[4 * r];
    }
  }
}

// The tiles of one weight row (16 float lanes an output): y[i·ldy] = each output's lane sum.
STAR_ZMM_TILE_INLINE void store_row(const __m512* acc, int nr, float* y, int64_t ldy, bool accumulate) {
  for (int i = 0; i < nr; ++i) {
    const float v = _mm512_reduce_add_ps(acc[i]);
    float& out = y[i * ldy];
    out = accumulate ? out + v : v;
  }
}

}  // namespace star::cpu::row_dots
