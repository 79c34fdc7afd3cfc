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
#include "zmm_tile_store.h"
#include "star/quant/blocks.h"

// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*(), which -Wuninitialized reports.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#define STAR_AVX512 __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))
#define STAR_AVX512_INLINE __attribute__((always_inline, target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni"))) inline

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

struct Int8Activations {
  using Unit = PreparedSuperBlock;
  static constexpr int kUnitsPerBlock = 1;
  STAR_AVX512_INLINE static __m512i sums(__m512i codes, const PreparedSuperBlock* a, int q) {
    return _mm512_dpbusd_epi32(_mm512_load_si512(a->offsets[q]), codes, _mm512_load_si512(a->codes + 64 * q));
  }
  STAR_AVX512_INLINE static __m512 scales(const PreparedSuperBlock* a, int q) { return _mm512_load_ps(a->d[q]); }
};

// One weight row by NR prepared activation rows (x_row_bytes apart, whole PreparedSuperBlocks).
template <int MR, int NR>
STAR_AVX512 void tile(const std::byte* w, size_t, const std::byte* x, size_t x_row_bytes, int64_t blocks, float* y,
                      int64_t ldy, bool accumulate) {
  static_assert(MR == 1);
  __m512 acc[NR];
  q6_k_rows<Int8Activations>(reinterpret_cast<const BlockQ6_K*>(w), blocks / (kSuperBlock / kLegacyBlock),
                             reinterpret_cast<const PreparedSuperBlock*>(x), x_row_bytes / sizeof(PreparedSuperBlock), acc);
  store_row(acc, NR, y, ldy, accumulate);
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
