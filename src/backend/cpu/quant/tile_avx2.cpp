// Register tiles of Q8_0 and Q4_0 weight rows for CPUs with AVX2 (16 ymm registers): 2 weight rows
// by 4 activation rows of int8 products, 1 by 8 with float32 activations. A weight block is loaded
// and unpacked once for every activation row of the tile, an int8 activation block once for both
// weight rows. With float32 activations, one weight row against 8 activation rows beat 2 by 3 on a
// 2-core AMD EPYC (Zen): the output projection of 16 rows of the `small` preset ~15% faster. The
// one-row dots of these types are the 1x1 tile, so an output's arithmetic does not depend on how
// many rows the product has or where the output sits in a tile.
//
// Int8 activations: the sign trick (|w| · sign(w)·x with vpmaddubsw, whose 16-bit pair sums stay
// below 2·128·127 < 2^15), vpmaddwd to exact int32 block sums, then d_w·d_x per block in float.
// Float activations: each weight block's codes widened once and dotted with every activation row.
// Compiled with a target attribute: best_isa() picks it.
#include <immintrin.h>

#include <algorithm>

#include "legacy_block_simd.h"
#include "row_dots.h"
#include "row_tiles.h"
#include "star/quant/blocks.h"

#define STAR_AVX2_INLINE __attribute__((always_inline, target("avx2,fma,f16c"))) inline

namespace star::cpu::row_dots {
namespace {

using quant::BlockQ4_0;
using quant::BlockQ8_0;
using quant::kLegacyBlock;

constexpr int kInt8TileRows = 2, kInt8TileCols = 4;
constexpr int kFloatTileRows = 1, kFloatTileCols = 8;

struct Q8_0Codes {
  using Block = BlockQ8_0;
  STAR_AVX2_INLINE static __m256i load(const BlockQ8_0& b) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs));
  }
};

struct Q4_0Codes {
  using Block = BlockQ4_0;
  STAR_AVX2_INLINE static __m256i load(const BlockQ4_0& b) {
    return _mm256_sub_epi8(nibble_bytes(b.qs), _mm256_set1_epi8(8));
  }
};

template <int MR, int NR>
STAR_AVX2_INLINE void store(__m256 (&acc)[MR][NR], float* y, int64_t ldy, bool accumulate) {
  for (int i = 0; i < NR; ++i) {
    for (int r = 0; r < MR; ++r) {
      const float v = horizontal_sum_8(acc[r][i]);
      float& out = y[i * ldy + r];
      out = accumulate ? out + v : v;
    }
  }
}

template <class Codes, int MR, int NR>
STAR_AVX2_BLOCKS void int8_tile(const std::byte* w, size_t w_row_bytes, const std::byte* x, size_t x_row_bytes,
                                int64_t k, float* y, int64_t ldy, bool accumulate) {
  const int64_t blocks = k / quant::kLegacyBlock;
  __m256 acc[MR][NR];
  for (auto& row : acc) std::fill(std::begin(row), std::end(row), _mm256_setzero_ps());
  const __m256i ones = _mm256_set1_epi16(1);
  for (int64_t b = 0; b < blocks; ++b) {
    __m256i wq[MR], w_abs[MR];
    __m256 dw[MR];
    for (int r = 0; r < MR; ++r) {
      const auto& block = reinterpret_cast<const typename Codes::Block*>(w + r * w_row_bytes)[b];
      wq[r] = Codes::load(block);
      w_abs[r] = _mm256_sign_epi8(wq[r], wq[r]);
      dw[r] = _mm256_set1_ps(_cvtsh_ss(block.d));
    }
    for (int i = 0; i < NR; ++i) {
      const BlockQ8_0& a = reinterpret_cast<const BlockQ8_0*>(x + i * x_row_bytes)[b];
      const __m256i xq = Q8_0Codes::load(a);
      const __m256 dx = _mm256_set1_ps(_cvtsh_ss(a.d));
      for (int r = 0; r < MR; ++r) {
        const __m256i pairs = _mm256_maddubs_epi16(w_abs[r], _mm256_sign_epi8(xq, wq[r]));
        const __m256 sums = _mm256_cvtepi32_ps(_mm256_madd_epi16(pairs, ones));
        acc[r][i] = _mm256_fmadd_ps(sums, _mm256_mul_ps(dw[r], dx), acc[r][i]);
      }
    }
  }
  store(acc, y, ldy, accumulate);
}

STAR_AVX2_INLINE __m256 widened_codes(const int8_t* qs) {
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(qs))));
}

// Per block and output: Σ q·x over the block's 32 elements, then d times that into the sum. The
// block sums of different blocks are independent, so the one dependent FMA per block and output
// leaves the FMA latency hidden even with a single output.
template <int MR, int NR>
STAR_AVX2_BLOCKS void q8_0_f32_tile(const std::byte* w, size_t w_row_bytes, const std::byte* x, size_t x_row_bytes,
                                    int64_t k, float* y, int64_t ldy, bool accumulate) {
  const int64_t blocks = k / quant::kLegacyBlock;
  __m256 acc[MR][NR];
  for (auto& row : acc) std::fill(std::begin(row), std::end(row), _mm256_setzero_ps());
  for (int64_t b = 0; b < blocks; ++b) {
    __m256 codes[MR][4], d[MR];
    for (int r = 0; r < MR; ++r) {
      const BlockQ8_0& block = reinterpret_cast<const BlockQ8_0*>(w + r * w_row_bytes)[b];
      d[r] = _mm256_set1_ps(_cvtsh_ss(block.d));
      for (int q = 0; q < 4; ++q) codes[r][q] = widened_codes(block.qs + 8 * q);
    }
    for (int i = 0; i < NR; ++i) {
      const float* xb = reinterpret_cast<const float*>(x + i * x_row_bytes) + b * kLegacyBlock;
      for (int r = 0; r < MR; ++r) {
        __m256 sum = _mm256_mul_ps(codes[r][0], _mm256_loadu_ps(xb));
        for (int q = 1; q < 4; ++q) sum = _mm256_fmadd_ps(codes[r][q], _mm256_loadu_ps(xb + 8 * q), sum);
        acc[r][i] = _mm256_fmadd_ps(d[r], sum, acc[r][i]);
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
struct FloatTileAvx2 {
  static constexpr TileFn fn = q8_0_f32_tile<MR, NR>;
};

}  // namespace

float q8_0_q8_0_avx2(const std::byte* w, const std::byte* x, int64_t k) {
  float y;
  int8_tile<Q8_0Codes, 1, 1>(w, 0, x, 0, k, &y, 0, false);
  return y;
}

float q4_0_q8_0_avx2(const std::byte* w, const std::byte* x, int64_t k) {
  float y;
  int8_tile<Q4_0Codes, 1, 1>(w, 0, x, 0, k, &y, 0, false);
  return y;
}

float q8_0_f32_avx2(const std::byte* w, const std::byte* x, int64_t k) {
  float y;
  q8_0_f32_tile<1, 1>(w, 0, x, 0, k, &y, 0, false);
  return y;
}

void q8_0_q8_0_tile_avx2(const std::byte* w, size_t w_row_bytes, int64_t m, const std::byte* x, size_t x_row_bytes,
                         int64_t n, int64_t k, float* y, int64_t ldy, bool accumulate) {
  run_tiles<kInt8TileRows, kInt8TileCols, Int8<Q8_0Codes>::Tile>(w, w_row_bytes, m, x, x_row_bytes, n, k, y, ldy,
                                                                 accumulate);
}

void q4_0_q8_0_tile_avx2(const std::byte* w, size_t w_row_bytes, int64_t m, const std::byte* x, size_t x_row_bytes,
                         int64_t n, int64_t k, float* y, int64_t ldy, bool accumulate) {
  run_tiles<kInt8TileRows, kInt8TileCols, Int8<Q4_0Codes>::Tile>(w, w_row_bytes, m, x, x_row_bytes, n, k, y, ldy,
                                                                 accumulate);
}

void q8_0_f32_tile_avx2(const std::byte* w, size_t w_row_bytes, int64_t m, const std::byte* x, size_t x_row_bytes,
                        int64_t n, int64_t k, float* y, int64_t ldy, bool accumulate) {
  run_tiles<kFloatTileRows, kFloatTileCols, FloatTileAvx2>(w, w_row_bytes, m, x, x_row_bytes, n, k, y, ldy, accumulate);
}

}  // namespace star::cpu::row_dots
