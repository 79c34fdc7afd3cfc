// Q6_K weight rows against Q8_0 activations for CPUs with AVX-512 VNNI: one weight row by up to 4
// activation rows. The activations are re-laid once per call (prepared_pairs_avx512.h, offset 32:
// the codes go into vpdpbusd unsigned, 0..63, and the lane sums are exactly Σ (u − 32)·a). Per weight
// super-block the 256 codes are unpacked in registers (q6_k_zmm.h) and the 16 scales widened
// once, d·scale; per 64 codes and activation row then one vpdpbusd, and the
// int32 lanes (4 products each, within one 16-element sub-block) times d·scale·d_a in float. The
// scalar reference (q6_k_dot.h) sums each 32-element block exactly in integers first, so only
// the float rounding differs.
#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "prepared_pairs_avx512.h"
#include "row_dots.h"
#include "q6_k_zmm.h"
#include "row_tiles.h"
#include "zmm_tile_store.h"
#include "star/quant/blocks.h"

namespace star::cpu::row_dots {
namespace {

using quant::BlockQ6_K;
using quant::BlockQ8_0;
using quant::kLegacyBlock;
using quant::kSuperBlock;

constexpr int kTileCols = 4;

struct Int8Activations {
  using Unit = Int8Pair;
  static constexpr int kUnitsPerBlock = 4;
  STAR_AVX512_INLINE static __m512i sums(__m512i codes, const Int8Pair* a, int q) {
    return _mm512_dpbusd_epi32(_mm512_load_si512(a[q].offsets), codes, _mm512_load_si512(a[q].codes));
  }
  STAR_AVX512_INLINE static __m512 scales(const Int8Pair* a, int q) { return _mm512_load_ps(a[q].d); }
};

// One weight row by NR prepared activation rows (x_row_bytes apart, whole Int8Pairs).
template <int MR, int NR>
STAR_AVX512 void tile(const std::byte* w, size_t, const std::byte* x, size_t x_row_bytes, int64_t k, float* y,
                      int64_t ldy, bool accumulate) {
  const int64_t blocks = k / quant::kLegacyBlock;
  static_assert(MR == 1);
  __m512 acc[NR];
  q6_k_rows<Int8Activations>(reinterpret_cast<const BlockQ6_K*>(w), blocks / (kSuperBlock / kLegacyBlock),
                             reinterpret_cast<const Int8Pair*>(x), x_row_bytes / sizeof(Int8Pair), acc);
  store_row(acc, NR, y, ldy, accumulate);
}

template <int MR, int NR>
struct Q6_KInt8Tile {
  static constexpr TileFn fn = tile<MR, NR>;
};

}  // namespace

void q6_k_q8_0_tile_avx512(const std::byte* w, size_t w_row_bytes, int64_t m, const std::byte* x, size_t x_row_bytes,
                           int64_t n, int64_t k, float* y, int64_t ldy, bool accumulate) {
  thread_local std::vector<Int8Pair> prepared;  // per OpenMP worker, reused across calls
  run_prepared_tiles<1, kTileCols, Q6_KInt8Tile>(prepared, prepare_int8_pairs<32>, k / kLegacyBlock / 2, w, w_row_bytes, m, x, x_row_bytes, n, k,
                                         y, ldy, accumulate);
}

float q6_k_q8_0_avx512(const std::byte* w, const std::byte* x, int64_t k) {
  return one_row_dot<q6_k_q8_0_tile_avx512>(w, x, k);
}

}  // namespace star::cpu::row_dots
