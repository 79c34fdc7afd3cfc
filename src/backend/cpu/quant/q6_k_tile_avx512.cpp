// Q6_K weight rows against Q8_0 activations for CPUs with AVX-512 VNNI: one weight row by up to 4
// activation rows. The activations are re-laid once per call (PreparedSuperBlock): codes aligned,
// −32·Σa per int32 lane (the codes go into vpdpbusd unsigned, 0..63, and the lane sums start from
// that, so they are exactly Σ (u − 32)·a), and d_a widened in the lanes of its block. Per weight
// super-block the 256 codes are unpacked in registers (q6_k_zmm.h) and the 16 scales widened
// once, d·scale; per 64 codes and activation row then one vpdpbusd, and the
// int32 lanes (4 products each, within one 16-element sub-block) times d·scale·d_a in float. The
// scalar reference (q6_k_dot.h) sums each 32-element block exactly in integers first, so only
// the float rounding differs.
#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "row_dots.h"
#include "q6_k_zmm.h"
#include "row_tiles.h"
#include "star/quant/blocks.h"

// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*(), which -Wuninitialized reports.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#define STAR_AVX512 __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))

namespace star::cpu::row_dots {
namespace {

using quant::BlockQ6_K;
using quant::BlockQ8_0;
using quant::kLegacyBlock;
using quant::kSuperBlock;

constexpr int kTileCols = 4;

// 64 elements (two activation blocks) per quarter.
struct alignas(64) PreparedSuperBlock {
  int8_t codes[kSuperBlock];
  int32_t offsets[4][16];  // −32·Σ of the lane's 4 codes
  float d[4][16];          // lanes 0-7 the quarter's first block's d_a, 8-15 its second's
};

STAR_AVX512 void prepare_row(const std::byte* x, int64_t k, PreparedSuperBlock* out) {
  const auto* xb = reinterpret_cast<const BlockQ8_0*>(x);
  const int64_t super_blocks = k / kSuperBlock;
  for (int64_t sb = 0; sb < super_blocks; ++sb) {
    PreparedSuperBlock& p = out[sb];
    for (int quarter = 0; quarter < 4; ++quarter) {
      const BlockQ8_0& first = xb[8 * sb + 2 * quarter];
      const BlockQ8_0& second = xb[8 * sb + 2 * quarter + 1];
      const __m512i codes = _mm512_inserti64x4(
          _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(first.qs))),
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(second.qs)), 1);
      const __m512i sums = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(32), codes);
      _mm512_store_si512(p.codes + 64 * quarter, codes);
      _mm512_store_si512(p.offsets[quarter], _mm512_sub_epi32(_mm512_setzero_si512(), sums));
      _mm512_store_ps(p.d[quarter], _mm512_mask_blend_ps(0xff00, _mm512_set1_ps(_cvtsh_ss(first.d)),
                                                         _mm512_set1_ps(_cvtsh_ss(second.d))));
    }
  }
}

// One weight row by NR prepared activation rows (x_row_bytes apart, whole PreparedSuperBlocks).
template <int MR, int NR>
STAR_AVX512 void tile(const std::byte* w, size_t, const std::byte* x, size_t x_row_bytes, int64_t blocks, float* y,
                      int64_t ldy, bool accumulate) {
  static_assert(MR == 1);
  const auto* wb = reinterpret_cast<const BlockQ6_K*>(w);
  const auto* prepared = reinterpret_cast<const PreparedSuperBlock*>(x);
  const size_t row_stride = x_row_bytes / sizeof(PreparedSuperBlock);
  __m512i lane_sub_blocks[4];
  for (int q = 0; q < 4; ++q) lane_sub_blocks[q] = q6_k_lane_sub_blocks(q);
  __m512 acc[NR];
  for (int i = 0; i < NR; ++i) acc[i] = _mm512_setzero_ps();
  for (int64_t sb = 0; sb < blocks / (kSuperBlock / kLegacyBlock); ++sb) {
    const BlockQ6_K& block = wb[sb];
    const __m512 scales = q6_k_scales(block);
    __m512i codes[4];
    q6_k_unsigned_codes(block, codes);
    __m512 quarter_scales[4];
    for (int q = 0; q < 4; ++q) quarter_scales[q] = _mm512_permutexvar_ps(lane_sub_blocks[q], scales);
    for (int i = 0; i < NR; ++i) {
      const PreparedSuperBlock& a = prepared[i * row_stride + sb];
      for (int q = 0; q < 4; ++q) {
        const __m512i sums =
            _mm512_dpbusd_epi32(_mm512_load_si512(a.offsets[q]), codes[q], _mm512_load_si512(a.codes + 64 * q));
        acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums), _mm512_mul_ps(quarter_scales[q], _mm512_load_ps(a.d[q])),
                                 acc[i]);
      }
    }
  }
  for (int i = 0; i < NR; ++i) {
    const float v = _mm512_reduce_add_ps(acc[i]);
    float& out = y[i * ldy];
    out = accumulate ? out + v : v;
  }
}

template <int MR, int NR>
struct Tile {
  static constexpr TileFn fn = tile<MR, NR>;
};

}  // namespace

void q6_k_q8_0_tile_avx512(const std::byte* w, size_t w_row_bytes, int64_t m, const std::byte* x, size_t x_row_bytes,
                           int64_t n, int64_t k, float* y, int64_t ldy, bool accumulate) {
  thread_local std::vector<PreparedSuperBlock> prepared;  // per OpenMP worker, reused across calls
  run_prepared_tiles<1, kTileCols, Tile>(prepared, prepare_row, k / kSuperBlock, w, w_row_bytes, m, x, x_row_bytes, n, k,
                                         y, ldy, accumulate);
}

float q6_k_q8_0_avx512(const std::byte* w, const std::byte* x, int64_t k) {
  return one_row_dot<q6_k_q8_0_tile_avx512>(w, x, k);
}

}  // namespace star::cpu::row_dots
