// Register tiles of Q4_1 weight rows against Q16 activations for CPUs with AVX-512 VNNI, up to 4
// weight rows by 4 activation rows, laid out as legacy_tiles_avx512.cpp's Q4_0 (the activations re-laid
// once per call, two 128-bit lanes of nibbles per weight block). The 16-bit activation codes are
// two int8 planes: per pair of weight blocks and activation row, vpdpbusd sums the nibbles (as the
// unsigned operand) against the signed high plane, and then, after a shift by 8 bits, the unsigned
// low plane against the nibbles (0..15, as the signed operand): exactly Σ nibble·q. The offset m
// adds m·s per block; s/8 sits in each of its block's 8 lanes, so the lane sum gives it back.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "prepared_pairs_avx512.h"
#include "row_dots.h"
#include "row_tiles.h"
#include "star/quant/blocks.h"
#include "zmm_tile_store.h"

namespace star::cpu::row_dots {
namespace {

using quant::BlockQ4_1;
using quant::kLegacyBlock;

constexpr int kTileRows = 4;
constexpr int kTileCols = 4;

// Two weight blocks as 128-bit lanes [block 0 low nibbles, its high nibbles, block 1 low, high];
// without a second block its lanes are 0.
template <bool Pair>
STAR_AVX512_INLINE __m512i weight_codes(const BlockQ4_1* b) {
  const __m128i* qs0 = reinterpret_cast<const __m128i*>(b[0].qs);
  const __m512i packed = Pair ? _mm512_mask_broadcast_i32x4(_mm512_broadcast_i32x4(_mm_loadu_si128(qs0)), 0xff00,
                                                             _mm_loadu_si128(reinterpret_cast<const __m128i*>(b[1].qs)))
                              : _mm512_maskz_broadcast_i32x4(0x00ff, _mm_loadu_si128(qs0));
  const __m512i shifts = _mm512_set_epi64(4, 4, 0, 0, 4, 4, 0, 0);
  return _mm512_and_si512(_mm512_srlv_epi64(packed, shifts), _mm512_set1_epi8(0x0f));
}

// The two blocks' f16 d (first = 0) or m (first = 2) as float lanes [block 0 ×8, block 1 ×8]. A
// pair of 20-byte blocks spans 40 bytes, so the 32 loaded here lie within it; block 1's d and m
// sit at bytes 4-7 of the upper 128-bit half.
template <bool Pair, int First>
STAR_AVX512_INLINE __m512 weight_scales(const BlockQ4_1* b) {
  if constexpr (!Pair) return _mm512_maskz_mov_ps(0x00ff, _mm512_set1_ps(_cvtsh_ss(First == 0 ? b[0].d : b[0].m)));
  const __m256i bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b));
  constexpr char a = First, c = First + 4;
  const __m256i spread = _mm256_shuffle_epi8(
      bytes, _mm256_setr_epi8(a, a + 1, a, a + 1, a, a + 1, a, a + 1, a, a + 1, a, a + 1, a, a + 1, a, a + 1,
                              c, c + 1, c, c + 1, c, c + 1, c, c + 1, c, c + 1, c, c + 1, c, c + 1, c, c + 1));
  return _mm512_cvtph_ps(spread);
}

template <int MR, int NR, bool Pair>
STAR_AVX512_INLINE void step(const BlockQ4_1* w, size_t w_row_blocks, const Q16Pair* x, size_t x_row_pairs,
                             __m512 (&acc)[MR][NR]) {
  __m512i wq[MR];
  __m512 dw[MR], mw[MR];
  for (int r = 0; r < MR; ++r) {
    wq[r] = weight_codes<Pair>(w + r * w_row_blocks);
    dw[r] = weight_scales<Pair, 0>(w + r * w_row_blocks);
    mw[r] = weight_scales<Pair, 2>(w + r * w_row_blocks);
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
  for (; b + 2 <= blocks; b += 2, blocks_of += 2, ++prepared) step<MR, NR, true>(blocks_of, row_blocks, prepared, row_pairs, acc);
  if (b < blocks) step<MR, NR, false>(blocks_of, row_blocks, prepared, row_pairs, acc);
  store(acc, y, ldy, accumulate);
}

template <int MR, int NR>
struct Tile {
  static constexpr TileFn fn = tile<MR, NR>;
};

}  // namespace

void q4_1_q16_tile_avx512(const std::byte* w, size_t w_row_bytes, int64_t m, const std::byte* x, size_t x_row_bytes,
                          int64_t n, int64_t k, float* y, int64_t ldy, bool accumulate) {
  thread_local std::vector<Q16Pair> prepared;  // per OpenMP worker, reused across calls
  run_prepared_tiles<kTileRows, kTileCols, Tile>(prepared, prepare_q16_pairs<0>, (k / kLegacyBlock + 1) / 2, w, w_row_bytes, m, x,
                                                 x_row_bytes, n, k, y, ldy, accumulate);
}

float q4_1_q16_avx512(const std::byte* w, const std::byte* x, int64_t k) {
  return one_row_dot<q4_1_q16_tile_avx512>(w, x, k);
}

}  // namespace star::cpu::row_dots
