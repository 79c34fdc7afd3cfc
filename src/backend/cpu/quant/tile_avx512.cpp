// Register tiles of Q8_0 weight rows against float32 activations for CPUs with AVX-512 (where no
// Q16 kernel takes the output projection): up to 4 weight rows by 4 activation rows of zmm
// accumulators, so a weight block is loaded and widened once for every activation row of the tile
// and an activation block once for every weight row; d scales each block's sum. The one-row dot is
// the 1x1 tile: every output goes through the same instructions in the same order wherever it sits
// in a tile, so a product's rows do not depend on how many rows it has. (The int8 tiles:
// legacy_tiles_avx512.cpp.)
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

// Weight rows by activation rows of one register tile: 16 accumulators, the 4 weight rows' widened
// codes and scales, and the activation block in flight fit the 32 zmm registers.
constexpr int kTileRows = 4;
constexpr int kTileCols = 4;

STAR_AVX512_INLINE __m512 widened_codes(const int8_t* qs) {
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs))));
}

// Per block and output: Σ q·x over the block's 32 elements, then d times that into the sum (one
// dependent FMA per block and output, so the latency stays hidden even with a single output).
template <int MR, int NR>
STAR_AVX512 void q8_0_f32_tile(const std::byte* w, size_t w_row_bytes, const std::byte* x, size_t x_row_bytes,
                               int64_t k, float* y, int64_t ldy, bool accumulate) {
  const int64_t blocks = k / quant::kLegacyBlock;
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

template <int MR, int NR>
struct FloatTileAvx512 {
  static constexpr TileFn fn = q8_0_f32_tile<MR, NR>;
};

}  // namespace

float q8_0_f32_avx512(const std::byte* w, const std::byte* x, int64_t k) {
  float y;
  q8_0_f32_tile<1, 1>(w, 0, x, 0, k, &y, 0, false);
  return y;
}

void q8_0_f32_tile_avx512(const std::byte* w, size_t w_row_bytes, int64_t m, const std::byte* x, size_t x_row_bytes,
                          int64_t n, int64_t k, float* y, int64_t ldy, bool accumulate) {
  run_tiles<kTileRows, kTileCols, FloatTileAvx512>(w, w_row_bytes, m, x, x_row_bytes, n, k, y, ldy, accumulate);
}

}  // namespace star::cpu::row_dots
