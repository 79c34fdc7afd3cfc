// Register tiles of Q4_1 and Q8_0 weight rows against Q16 activations for CPUs with AVX2: one
// weight row by up to 8 activation rows. Without them an AVX2 CPU multiplied these products
// (every Q4_1 one, and the Q8_0 output projection) against float32 activations, widening every
// code to float: SmolLM2's decode ran at a third of llama.cpp's speed on a Zen 1 core.
//
// AVX2 has no vpdpbusd, and vpmaddubsw would take one multiply per int8 plane plus a vpmaddwd
// each to widen its sums (and Q8_0's codes against the unsigned low plane overflow its 16-bit pair
// sums). So each activation row is re-laid once per call as plain int16 codes (q = 256·hi + lo),
// each weight block's codes are widened to int16 once for all activation rows, and two vpmaddwd
// give Σ code·q exactly in int32 lanes (|127·32767| pairs fit). Per block and output, d_w·d_x times
// that (plus, for Q4_1, m·(s/8) in each of the block's 8 lanes, so that the lane sum gives m·s back)
// is added to the output's sum. One weight row by 8 activation rows beat 2 by 4, 1 by 4 and 2 by
// 3 at 16 rows on the Zen 1 core. The one-row dot is the 1x1 tile, so an output's arithmetic does
// not depend on its tile.
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "legacy_block_simd.h"
#include "q16_block.h"
#include "row_dots.h"
#include "row_tiles.h"
#include "star/quant/blocks.h"

namespace star::cpu::row_dots {
namespace {

using quant::BlockQ4_1;
using quant::BlockQ8_0;
using quant::kLegacyBlock;

constexpr int kTileRows = 1, kTileCols = 8;

// One Q16 activation block as the tiles read it.
struct Q16Codes {
  int16_t q[kLegacyBlock];
  float d;
  float s_lane;  // s / 8: its share of each of the block's 8 lanes
};
static_assert(offsetof(Q16Codes, s_lane) == offsetof(Q16Codes, d) + sizeof(float), "d and s_lane load as one pair");

STAR_AVX2_BLOCKS void prepare_q16_codes(const std::byte* x, int64_t k, Q16Codes* out) {
  const auto* blocks = reinterpret_cast<const BlockQ16*>(x);
  for (int64_t b = 0; b < k / kLegacyBlock; ++b) {
    const BlockQ16& a = blocks[b];
    for (int half = 0; half < 2; ++half) {
      const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a.lo + 16 * half));
      const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a.hi + 16 * half));
      const __m256i q = _mm256_add_epi16(_mm256_slli_epi16(_mm256_cvtepi8_epi16(hi), 8), _mm256_cvtepu8_epi16(lo));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[b].q + 16 * half), q);
    }
    out[b].d = a.d;
    out[b].s_lane = a.s * 0.125f;
  }
}

// A weight block's codes as int16, elements 0..15 and 16..31.
struct WideCodes {
  __m256i first, second;
};

struct Q4_1Weights {
  using Block = BlockQ4_1;
  static constexpr bool kOffset = true;
  // Low nibbles are elements 0..15, high ones 16..31.
  STAR_AVX2_BLOCKS static WideCodes codes(const BlockQ4_1& b) {
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs));
    const __m128i nibble = _mm_set1_epi8(0x0f);
    return {_mm256_cvtepu8_epi16(_mm_and_si128(packed, nibble)),
            _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(packed, 4), nibble))};
  }
  // d and m, adjacent in the block, widened together.
  static_assert(offsetof(BlockQ4_1, m) == offsetof(BlockQ4_1, d) + sizeof(uint16_t));
  STAR_AVX2_BLOCKS static __m128 scales(const BlockQ4_1& b) {
    int32_t dm;
    std::memcpy(&dm, &b.d, sizeof dm);
    return _mm_cvtph_ps(_mm_cvtsi32_si128(dm));
  }
};

struct Q8_0Weights {
  using Block = BlockQ8_0;
  static constexpr bool kOffset = false;
  STAR_AVX2_BLOCKS static WideCodes codes(const BlockQ8_0& b) {
    return {_mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs))),
            _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs + 16)))};
  }
  STAR_AVX2_BLOCKS static __m128 scales(const BlockQ8_0& b) { return _mm_set_ss(_cvtsh_ss(b.d)); }
};

template <class Weights, int MR, int NR>
STAR_AVX2_BLOCKS void q16_tile(const std::byte* w, size_t w_row_bytes, const std::byte* x, size_t x_row_bytes,
                               int64_t k, float* y, int64_t ldy, bool accumulate) {
  using Block = typename Weights::Block;
  const int64_t blocks = k / kLegacyBlock;
  __m256 acc[MR][NR];
  for (auto& row : acc) std::fill(std::begin(row), std::end(row), _mm256_setzero_ps());
  for (int64_t b = 0; b < blocks; ++b) {
    WideCodes codes[MR];
    __m128 scales[MR];  // d_w, and m_w for Q4_1
    for (int r = 0; r < MR; ++r) {
      const Block& block = reinterpret_cast<const Block*>(w + r * w_row_bytes)[b];
      codes[r] = Weights::codes(block);
      scales[r] = Weights::scales(block);
    }
    for (int i = 0; i < NR; ++i) {
      const Q16Codes& a = reinterpret_cast<const Q16Codes*>(x + i * x_row_bytes)[b];
      const __m256i q_first = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.q));
      const __m256i q_second = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.q + 16));
      for (int r = 0; r < MR; ++r) {
        const __m256i sums =
            _mm256_add_epi32(_mm256_madd_epi16(codes[r].first, q_first), _mm256_madd_epi16(codes[r].second, q_second));
        // (d_w·d_x, m_w·s/8) in one product.
        const __m128 products = _mm_mul_ps(scales[r], _mm_castpd_ps(_mm_load_sd(reinterpret_cast<const double*>(&a.d))));
        const __m256 scale = _mm256_broadcastss_ps(products);
        if constexpr (Weights::kOffset) {
          const __m256 offset = _mm256_broadcastss_ps(_mm_movehdup_ps(products));
          acc[r][i] = _mm256_add_ps(acc[r][i], _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), scale, offset));
        } else {
          acc[r][i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), scale, acc[r][i]);
        }
      }
    }
  }
  for (int i = 0; i < NR; ++i) {
    for (int r = 0; r < MR; ++r) {
      const float v = horizontal_sum_8(acc[r][i]);
      float& out = y[i * ldy + r];
      out = accumulate ? out + v : v;
    }
  }
}

// Distinct names per weight type: see run_tiles.
template <int MR, int NR>
struct Q4_1Q16TileAvx2 {
  static constexpr TileFn fn = q16_tile<Q4_1Weights, MR, NR>;
};

template <int MR, int NR>
struct Q8_0Q16TileAvx2 {
  static constexpr TileFn fn = q16_tile<Q8_0Weights, MR, NR>;
};

}  // namespace

void q4_1_q16_tile_avx2(const std::byte* w, size_t w_row_bytes, int64_t m, const std::byte* x, size_t x_row_bytes,
                        int64_t n, int64_t k, float* y, int64_t ldy, bool accumulate) {
  thread_local std::vector<Q16Codes> prepared;  // per OpenMP worker, reused across calls
  run_prepared_tiles<kTileRows, kTileCols, Q4_1Q16TileAvx2>(prepared, prepare_q16_codes, k / kLegacyBlock, w,
                                                            w_row_bytes, m, x, x_row_bytes, n, k, y, ldy, accumulate);
}

void q8_0_q16_tile_avx2(const std::byte* w, size_t w_row_bytes, int64_t m, const std::byte* x, size_t x_row_bytes,
                        int64_t n, int64_t k, float* y, int64_t ldy, bool accumulate) {
  thread_local std::vector<Q16Codes> prepared;
  run_prepared_tiles<kTileRows, kTileCols, Q8_0Q16TileAvx2>(prepared, prepare_q16_codes, k / kLegacyBlock, w,
                                                            w_row_bytes, m, x, x_row_bytes, n, k, y, ldy, accumulate);
}

float q4_1_q16_avx2(const std::byte* w, const std::byte* x, int64_t k) {
  return one_row_dot<q4_1_q16_tile_avx2>(w, x, k);
}

float q8_0_q16_avx2(const std::byte* w, const std::byte* x, int64_t k) {
  return one_row_dot<q8_0_q16_tile_avx2>(w, x, k);
}

}  // namespace star::cpu::row_dots
