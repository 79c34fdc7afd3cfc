// Q6_K and Q8_0 weight rows against Q16 activations for CPUs with AVX-512 VNNI, one Q6_K or up to
// two Q8_0 weight rows by up to 4 activation rows: the output projection of llama.cpp's files (Q6_K in K-quant and Q4_0
// ones, the tied Q8_0 embedding of SmolLM2's), where rounding the activations to 8 bits flips the
// top token and float32 activations leave the kernel compute-bound. The activations are re-laid
// once per call (as in q6_k_tile_avx512.cpp): both code planes aligned, the per-lane offsets that
// make vpdpbusd's unsigned operand exact, and d_x in the lanes of its block. Per 64 weights and
// activation row two vpdpbusd give Σ w·q exactly: the high plane's sum, shifted by 8 bits, then the
// low plane's (unsigned) against the weight codes (signed).
//
// Q6_K: the codes go in unsigned (0..63) against the signed high plane, less 32·Σhi per lane; the
// low plane against the codes as signed (0..63), less 32·Σlo. Q8_0: the signed codes go in as
// code + 128 against the high plane, less 128·Σhi; the low plane against the codes as they are.
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <vector>

#include "prepared_pairs_avx512.h"
#include "q6_k_zmm.h"
#include "row_dots.h"
#include "row_tiles.h"
#include "weight_prefetch.h"
#include "zmm_tile_store.h"
#include "star/quant/blocks.h"

namespace star::cpu::row_dots {
namespace {

using quant::BlockQ6_K;
using quant::BlockQ8_0;
using quant::kLegacyBlock;
using quant::kSuperBlock;

constexpr int kTileCols = 4;
constexpr int kQ8_0TileRows = 2;

struct Q16Activations {
  using Unit = Q16Pair;
  static constexpr int kUnitsPerBlock = 4;
  STAR_AVX512_INLINE static __m512i sums(__m512i codes, const Q16Pair* a, int q) { return q16_sums(codes, a[q]); }
  STAR_AVX512_INLINE static __m512 scales(const Q16Pair* a, int q) { return _mm512_load_ps(a[q].d); }
};

template <int MR, int NR>
STAR_AVX512 void q6_k_tile(const std::byte* w, size_t, const std::byte* x, size_t x_row_bytes, int64_t k, float* y,
                           int64_t ldy, bool accumulate) {
  const int64_t blocks = k / quant::kLegacyBlock;
  static_assert(MR == 1);
  __m512 acc[NR];
  q6_k_rows<Q16Activations>(reinterpret_cast<const BlockQ6_K*>(w), blocks / (kSuperBlock / kLegacyBlock),
                            reinterpret_cast<const Q16Pair*>(x), x_row_bytes / sizeof(Q16Pair), acc);
  store_row(acc, NR, y, ldy, accumulate);
}

// MR weight rows share each activation row's loads (the loads bound a single weight row).
template <bool Pair, int MR, int NR>
STAR_AVX512_INLINE void q8_0_step(const BlockQ8_0* w, size_t w_row_blocks, const Q16Pair* x, size_t row_stride,
                                  __m512 (&acc)[MR][NR]) {
  __m512i codes[MR], shifted[MR];
  __m512 dw[MR];
  for (int r = 0; r < MR; ++r) {
    codes[r] = q8_0_pair<Pair>(w + r * w_row_blocks);
    shifted[r] = _mm512_xor_si512(codes[r], _mm512_set1_epi8(static_cast<char>(0x80)));
    dw[r] = f16_pair<Pair, BlockQ8_0, offsetof(BlockQ8_0, d)>(w + r * w_row_blocks);
  }
  for (int i = 0; i < NR; ++i) {
    const Q16Pair& a = x[i * row_stride];
    const __m512i hi_offsets = _mm512_load_si512(a.hi_offsets);
    const __m512i hi = _mm512_load_si512(a.hi);
    const __m512i lo = _mm512_load_si512(a.lo);
    const __m512 dx = _mm512_load_ps(a.d);
    for (int r = 0; r < MR; ++r) {
      const __m512i high = _mm512_dpbusd_epi32(hi_offsets, shifted[r], hi);
      const __m512i sums = _mm512_dpbusd_epi32(_mm512_slli_epi32(high, 8), lo, codes[r]);
      acc[r][i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums), _mm512_mul_ps(dw[r], dx), acc[r][i]);
    }
  }
}

template <int MR, int NR>
STAR_AVX512 void q8_0_tile(const std::byte* w, size_t w_row_bytes, const std::byte* x, size_t x_row_bytes, int64_t k,
                           float* y, int64_t ldy, bool accumulate) {
  const int64_t blocks = k / quant::kLegacyBlock;
  const auto* wb = reinterpret_cast<const BlockQ8_0*>(w);
  const size_t row_blocks = w_row_bytes / sizeof(BlockQ8_0);
  const auto* prepared = reinterpret_cast<const Q16Pair*>(x);
  const size_t row_stride = x_row_bytes / sizeof(Q16Pair);
  __m512 acc[MR][NR];
  for (auto& row : acc) std::fill(std::begin(row), std::end(row), _mm512_setzero_ps());
  int64_t b = 0;
  for (; b + 2 <= blocks; b += 2, wb += 2, ++prepared) {
    for (int r = 0; r < MR; ++r) prefetch_weights(wb + r * row_blocks);
    q8_0_step<true>(wb, row_blocks, prepared, row_stride, acc);
  }
  if (b < blocks) q8_0_step<false>(wb, row_blocks, prepared, row_stride, acc);
  store(acc, y, ldy, accumulate);
}

template <int MR, int NR>
struct Q6_KQ16Tile {
  static constexpr TileFn fn = q6_k_tile<MR, NR>;
};
template <int MR, int NR>
struct Q8_0Q16Tile {
  static constexpr TileFn fn = q8_0_tile<MR, NR>;
};

}  // namespace

void q6_k_q16_tile_avx512(const std::byte* w, size_t w_row_bytes, int64_t m, const std::byte* x, size_t x_row_bytes,
                          int64_t n, int64_t k, float* y, int64_t ldy, bool accumulate) {
  thread_local std::vector<Q16Pair> prepared;  // per OpenMP worker, reused across calls
  run_prepared_tiles<1, kTileCols, Q6_KQ16Tile>(prepared, prepare_q16_pairs<32>, (k / kLegacyBlock + 1) / 2, w, w_row_bytes, m, x,
                                             x_row_bytes, n, k, y, ldy, accumulate);
}

void q8_0_q16_tile_avx512(const std::byte* w, size_t w_row_bytes, int64_t m, const std::byte* x, size_t x_row_bytes,
                          int64_t n, int64_t k, float* y, int64_t ldy, bool accumulate) {
  thread_local std::vector<Q16Pair> prepared;  // per OpenMP worker, reused across calls
  run_prepared_tiles<kQ8_0TileRows, kTileCols, Q8_0Q16Tile>(prepared, prepare_q16_pairs<128>, (k / kLegacyBlock + 1) / 2, w, w_row_bytes, m, x,
                                             x_row_bytes, n, k, y, ldy, accumulate);
}

float q6_k_q16_avx512(const std::byte* w, const std::byte* x, int64_t k) {
  return one_row_dot<q6_k_q16_tile_avx512>(w, x, k);
}

float q8_0_q16_avx512(const std::byte* w, const std::byte* x, int64_t k) {
  return one_row_dot<q8_0_q16_tile_avx512>(w, x, k);
}

}  // namespace star::cpu::row_dots
