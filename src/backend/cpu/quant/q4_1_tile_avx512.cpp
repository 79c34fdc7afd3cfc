// Register tiles of Q4_1 weight rows against Q16 activations for CPUs with AVX-512 VNNI, up to 4
// weight rows by 4 activation rows, laid out as legacy_tiles_avx512.cpp's Q4_0 (the activations re-laid
// once per call, two 128-bit lanes of nibbles per weight block). The 16-bit activation codes are
// two int8 planes: per pair of weight blocks and activation row, vpdpbusd sums the nibbles (as the
// unsigned operand) against the signed high plane, and then, after a shift by 8 bits, the unsigned
// low plane against the nibbles (0..15, as the signed operand): exactly Σ nibble·q. The offset m
// adds m·s per block; s/8 sits in each of its block's 8 lanes, so the lane sum gives it back.
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <vector>

#include "prepared_pairs_avx512.h"
#include "row_dots.h"
#include "row_tiles.h"
#include "star/quant/blocks.h"
#include "weight_prefetch.h"
#include "zmm_tile_store.h"

namespace star::cpu::row_dots {
namespace {

using quant::BlockQ4_1;
using quant::kLegacyBlock;

constexpr int kTileRows = 4;
constexpr int kTileCols = 4;

template <int MR, int NR, bool Pair>
STAR_AVX512_INLINE void step(const BlockQ4_1* w, size_t w_row_blocks, const Q16Pair* x, size_t x_row_pairs,
                             __m512 (&acc)[MR][NR]) {
  __m512i wq[MR];
  __m512 dw[MR], mw[MR];
  for (int r = 0; r < MR; ++r) {
    wq[r] = nibble_pair<Pair>(w + r * w_row_blocks);
    dw[r] = f16_pair<Pair, BlockQ4_1, offsetof(BlockQ4_1, d)>(w + r * w_row_blocks);
    mw[r] = f16_pair<Pair, BlockQ4_1, offsetof(BlockQ4_1, m)>(w + r * w_row_blocks);
  }
  for (int i = 0; i < NR; ++i) {
    const Q16Pair& a = x[i * x_row_pairs];
    const __m512i lo = _mm512_load_si512(a.lo), hi = _mm512_load_si512(a.hi);
    const __m512 dx = _mm512_load_ps(a.d), sx = _mm512_load_ps(a.s);
    for (int r = 0; r < MR; ++r) {
      const __m512i high = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wq[r], hi);
      const __m512i sums = _mm512_dpbusd_epi32(_mm512_slli_epi32(high, 8), lo, wq[r]);
      acc[r][i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums), _mm512_mul_ps(dw[r], dx), acc[r][i]);
      acc[r][i] = _mm512_fmadd_ps(mw[r], sx, acc[r][i]);
    }
  }
}

// MR weight rows by NR prepared activation rows (x_row_bytes apart, whole Q16Pairs).
template <int MR, int NR>
STAR_AVX512 void tile(const std::byte* w, size_t w_row_bytes, const std::byte* x, size_t x_row_bytes, int64_t k,
                      float* y, int64_t ldy, bool accumulate) {
  const int64_t blocks = k / quant::kLegacyBlock;
  const auto* blocks_of = reinterpret_cast<const BlockQ4_1*>(w);
  const size_t row_blocks = w_row_bytes / sizeof(BlockQ4_1);
  const auto* prepared = reinterpret_cast<const Q16Pair*>(x);
  const size_t row_pairs = x_row_bytes / sizeof(Q16Pair);
  __m512 acc[MR][NR];
  for (auto& row : acc) std::fill(std::begin(row), std::end(row), _mm512_setzero_ps());
  int64_t b = 0;
  for (; b + 2 <= blocks; b += 2, blocks_of += 2, ++prepared) {
    for (int r = 0; r < MR; ++r) prefetch_weights(blocks_of + r * row_blocks);
    step<MR, NR, true>(blocks_of, row_blocks, prepared, row_pairs, acc);
  }
  if (b < blocks) step<MR, NR, false>(blocks_of, row_blocks, prepared, row_pairs, acc);
  store(acc, y, ldy, accumulate);
}

template <int MR, int NR>
struct Q4_1Tile {
  static constexpr TileFn fn = tile<MR, NR>;
};

}  // namespace

void q4_1_q16_tile_avx512(const std::byte* w, size_t w_row_bytes, int64_t m, const std::byte* x, size_t x_row_bytes,
                          int64_t n, int64_t k, float* y, int64_t ldy, bool accumulate) {
  thread_local std::vector<Q16Pair> prepared;  // per OpenMP worker, reused across calls
  run_prepared_tiles<kTileRows, kTileCols, Q4_1Tile>(prepared, prepare_q16_pairs<0>, (k / kLegacyBlock + 1) / 2, w, w_row_bytes, m, x,
                                                 x_row_bytes, n, k, y, ldy, accumulate);
}

float q4_1_q16_avx512(const std::byte* w, const std::byte* x, int64_t k) {
  return one_row_dot<q4_1_q16_tile_avx512>(w, x, k);
}

}  // namespace star::cpu::row_dots
