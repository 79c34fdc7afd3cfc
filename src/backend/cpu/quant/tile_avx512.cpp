// Register tiles of Q8_0 weight rows for CPUs with AVX-512 VNNI: up to 4 weight rows by
// 4 activation rows of zmm accumulators, so a weight block is loaded and unpacked once for every
// activation row of the tile and an activation block once for every weight row. The one-row dots
// of these types are the 1x1 tile: every output goes through the same instructions in the same
// order wherever it sits in a tile, so a product's rows do not depend on how many rows it has.
//
// Int8 activations: one zmm holds two 32-element blocks (lanes 0-7 the first block's int32 sums,
// 8-15 the second's). vpdpbusd wants one unsigned operand: the activations go in as q + 128 (the
// sign bit flipped), and the accumulator starts at -128·Σ4 w per lane, so the int32 block sums stay
// exactly Σ w·q. They are then scaled by d_w·d_x per block and summed in float lanes.
//
// Float activations (Q8_0 output projection): each weight block's codes are widened once and
// dotted with every activation row; d scales each block's sum.
// Compiled with a target attribute, not the build's flags: best_isa() picks it at run time.
#include <immintrin.h>

#include <algorithm>

#include "row_dots.h"
#include "row_tiles.h"
#include "zmm_tile_store.h"
#include "star/quant/blocks.h"

// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*(), which -Wuninitialized reports.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#define STAR_AVX512 __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))
#define STAR_AVX512_INLINE __attribute__((always_inline, target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni"))) inline

namespace star::cpu::row_dots {
namespace {

using quant::BlockQ8_0;
using quant::kLegacyBlock;

// Weight rows by activation rows of one register tile: 16 accumulators, the 4 weight rows' codes,
// corrections and scales, and the activation block in flight fit the 32 zmm registers.
constexpr int kTileRows = 4;
constexpr int kTileCols = 4;

// Two consecutive blocks (the second zero when Pair is false): 64 codes and their scales, each
// scale in the 8 lanes of its block's int32 sums.
struct BlockPair {
  __m512i q;
  __m512 d;
};

STAR_AVX512_INLINE __m512 pair_scales(uint16_t d0, uint16_t d1) {
  return _mm512_mask_blend_ps(0xff00, _mm512_set1_ps(_cvtsh_ss(d0)), _mm512_set1_ps(_cvtsh_ss(d1)));
}

struct Q8_0Codes {
  using Block = BlockQ8_0;
  template <bool Pair>
  STAR_AVX512_INLINE static BlockPair load(const BlockQ8_0* b) {
    const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[0].qs));
    if constexpr (!Pair) return {_mm512_zextsi256_si512(lo), pair_scales(b[0].d, 0)};
    const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[1].qs));
    return {_mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1), pair_scales(b[0].d, b[1].d)};
  }
};

template <class Codes, int MR, int NR, bool Pair>
STAR_AVX512_INLINE void int8_step(const std::byte* w, size_t w_row_bytes, const std::byte* x, size_t x_row_bytes,
                                  int64_t b, __m512 (&acc)[MR][NR]) {
  const __m512i sign_bit = _mm512_set1_epi8(static_cast<char>(0x80));
  __m512i wq[MR], correction[MR];
  __m512 dw[MR];
  for (int r = 0; r < MR; ++r) {
    const BlockPair p = Codes::template load<Pair>(reinterpret_cast<const typename Codes::Block*>(w + r * w_row_bytes) + b);
    wq[r] = p.q;
    dw[r] = p.d;
    correction[r] = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_dpbusd_epi32(_mm512_setzero_si512(), sign_bit, p.q));
  }
  for (int i = 0; i < NR; ++i) {
    const BlockPair a = Q8_0Codes::load<Pair>(reinterpret_cast<const BlockQ8_0*>(x + i * x_row_bytes) + b);
    const __m512i xu = _mm512_xor_si512(a.q, sign_bit);
    for (int r = 0; r < MR; ++r) {
      const __m512i sums = _mm512_dpbusd_epi32(correction[r], xu, wq[r]);
      acc[r][i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums), _mm512_mul_ps(dw[r], a.d), acc[r][i]);
    }
  }
}

// MR weight rows (w_row_bytes apart) by NR activation rows over `blocks` blocks.
template <class Codes, int MR, int NR>
STAR_AVX512 void int8_tile(const std::byte* w, size_t w_row_bytes, const std::byte* x, size_t x_row_bytes,
                           int64_t blocks, float* y, int64_t ldy, bool accumulate) {
  __m512 acc[MR][NR];
  for (auto& row : acc) std::fill(std::begin(row), std::end(row), _mm512_setzero_ps());
  int64_t b = 0;
  for (; b + 2 <= blocks; b += 2) int8_step<Codes, MR, NR, true>(w, w_row_bytes, x, x_row_bytes, b, acc);
  if (b < blocks) int8_step<Codes, MR, NR, false>(w, w_row_bytes, x, x_row_bytes, b, acc);
  store(acc, y, ldy, accumulate);
}

STAR_AVX512_INLINE __m512 widened_codes(const int8_t* qs) {
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs))));
}

// Per block and output: Σ q·x over the block's 32 elements, then d times that into the sum (one
// dependent FMA per block and output, so the latency stays hidden even with a single output).
template <int MR, int NR>
STAR_AVX512 void q8_0_f32_tile(const std::byte* w, size_t w_row_bytes, const std::byte* x, size_t x_row_bytes,
                               int64_t blocks, float* y, int64_t ldy, bool accumulate) {
  __m512 acc[MR][NR];
  for (auto& row : acc) std::fill(std::begin(row), std::end(row), _mm512_setzero_ps());
  for (int64_t b = 0; b < blocks; ++b) {
    __m512 lo[MR], hi[MR], d[MR];
    for (int r = 0; r < MR; ++r) {
      const BlockQ8_0& block = reinterpret_cast<const BlockQ8_0*>(w + r * w_row_bytes)[b];
      d[r] = _mm512_set1_ps(_cvtsh_ss(block.d));
      lo[r] = widened_codes(block.qs);
      hi[r] = widened_codes(block.qs + 16);
    }
    for (int i = 0; i < NR; ++i) {
      const float* xb = reinterpret_cast<const float*>(x + i * x_row_bytes) + b * kLegacyBlock;
      const __m512 x_lo = _mm512_loadu_ps(xb), x_hi = _mm512_loadu_ps(xb + 16);
      for (int r = 0; r < MR; ++r) {
        const __m512 sum = _mm512_fmadd_ps(hi[r], x_hi, _mm512_mul_ps(lo[r], x_lo));
        acc[r][i] = _mm512_fmadd_ps(d[r], sum, acc[r][i]);
      }
    }
  }
  store(acc, y, ldy, accumulate);
}

template <class Codes>
struct Int8 {
  template <int MR, int NR>
  struct Tile {
    static constexpr TileFn fn = int8_tile<Codes, MR, NR>;
  };
};

template <int MR, int NR>
struct FloatTile {
  static constexpr TileFn fn = q8_0_f32_tile<MR, NR>;
};

}  // namespace

float q8_0_q8_0_avx512(const std::byte* w, const std::byte* x, int64_t k) {
  float y;
  int8_tile<Q8_0Codes, 1, 1>(w, 0, x, 0, k / kLegacyBlock, &y, 0, false);
  return y;
}

float q8_0_f32_avx512(const std::byte* w, const std::byte* x, int64_t k) {
  float y;
  q8_0_f32_tile<1, 1>(w, 0, x, 0, k / kLegacyBlock, &y, 0, false);
  return y;
}

void q8_0_q8_0_tile_avx512(const std::byte* w, size_t w_row_bytes, int64_t m, const std::byte* x, size_t x_row_bytes,
                           int64_t n, int64_t k, float* y, int64_t ldy, bool accumulate) {
  run_tiles<kTileRows, kTileCols, Int8<Q8_0Codes>::Tile>(w, w_row_bytes, m, x, x_row_bytes, n, k, y, ldy, accumulate);
}

void q8_0_f32_tile_avx512(const std::byte* w, size_t w_row_bytes, int64_t m, const std::byte* x, size_t x_row_bytes,
                          int64_t n, int64_t k, float* y, int64_t ldy, bool accumulate) {
  run_tiles<kTileRows, kTileCols, FloatTile>(w, w_row_bytes, m, x, x_row_bytes, n, k, y, ldy, accumulate);
}

}  // namespace star::cpu::row_dots
