// Q4_K weight rows against Q8_0 activations for CPUs with AVX-512 VNNI: one weight row by up to 4
// activation rows, the arithmetic of dot_k_scalar.cpp (per 32-element sub-block the exact integer
// Σ q·a, scaled by (d·scale)·d_a, and the min term dmin·min·d_a·Σa). What depends only on the
// activations is done once per call, for all weight rows, in a re-laid copy (PreparedSuperBlock):
// the codes of each super-block contiguous and aligned, d_a widened from f16, and d_a·Σa, so the
// min term of a whole super-block is one 8-lane product instead of a second vpdpbusd per sub-block.
// Per weight super-block that leaves the 6-bit scales and mins unpacked once (ggml's 32-bit word
// trick, in the lanes of one register), two 64-byte loads of the codes split into their nibbles,
// then per activation row and pair of sub-blocks one vpdpbusd, a conversion and a multiply-add by
// the pair's scales. Decode reads the weights once and is bound by these instructions as much as by
// the memory: this form (131072x768 at one row, 2 threads, medians of 21 calls) takes 3.5-3.8 ms
// where the one with a broadcast, a shift and a mask a pair of sub-blocks and the scales unpacked in
// general registers took 4.1-4.2.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "avx512_target.h"
#include "weight_prefetch.h"
#include "row_dots.h"
#include "row_tiles.h"
#include "star/quant/blocks.h"

namespace star::cpu::row_dots {
namespace {

using quant::BlockQ4_K;
using quant::BlockQ8_0;
using quant::kLegacyBlock;
using quant::kSuperBlock;

constexpr int kSubBlocks = kSuperBlock / kLegacyBlock;
constexpr int kTileCols = 4;

struct alignas(64) PreparedSuperBlock {
  int8_t codes[kSuperBlock];
  float d[kSubBlocks];     // d_a of each activation block
  float sums[kSubBlocks];  // d_a·Σa
};

// The codes of sub-block s go where the weights' nibbles put it (see tile): each 64-byte load of
// the weight codes holds sub-blocks 4h and 4h + 2 in its low nibbles and 4h + 1 and 4h + 3 in its
// high ones, so the re-laid codes are sub-blocks 0, 2, 1, 3, 4, 6, 5, 7.
constexpr int kCodesOrder[kSubBlocks] = {0, 2, 1, 3, 4, 6, 5, 7};

STAR_AVX512 void prepare_row(const std::byte* x, int64_t k, PreparedSuperBlock* out) {
  const auto* xb = reinterpret_cast<const BlockQ8_0*>(x);
  const int64_t super_blocks = k / kSuperBlock;
  for (int64_t sb = 0; sb < super_blocks; ++sb) {
    PreparedSuperBlock& p = out[sb];
    for (int s = 0; s < kSubBlocks; ++s) {
      const BlockQ8_0& block = xb[sb * kSubBlocks + s];
      std::memcpy(p.codes + kLegacyBlock * kCodesOrder[s], block.qs, kLegacyBlock);
      int32_t sum = 0;
      for (int8_t q : block.qs) sum += q;
      p.d[s] = _cvtsh_ss(block.d);
      p.sums[s] = p.d[s] * static_cast<float>(sum);
    }
  }
}

// The 8 scales (bytes 0-7) and 8 mins (bytes 8-15) of get_scale_min_k4, from the 12 packed bytes
// as three little-endian words a, b, c: scale j < 4 is the low 6 bits of byte j and min j of byte
// j + 4; scale and min j + 4 take byte j + 8's nibbles and the top 2 bits of bytes j and j + 4. The
// four result words [a & 0x3f.., (c & 0x0f..) | ((a >> 2) & 0x30..), b & 0x3f.., ((c >> 4) & 0x0f..)
// | ((b >> 2) & 0x30..)] are computed in the lanes of one register (the block's codes follow its
// scales, so the 16-byte load stays inside the block).
STAR_AVX512_INLINE __m128i scales_and_mins(const uint8_t packed[quant::kScaleBytesK]) {
  const __m128i words = _mm_loadu_si128(reinterpret_cast<const __m128i*>(packed));
  const __m128i aabb = _mm_shuffle_epi32(words, _MM_SHUFFLE(1, 1, 0, 0));
  const __m128i acbc = _mm_shuffle_epi32(words, _MM_SHUFFLE(2, 1, 2, 0));
  const __m128i low = _mm_and_si128(_mm_srlv_epi32(aabb, _mm_setr_epi32(0, 2, 0, 2)),
                                    _mm_setr_epi32(0x3f3f3f3f, 0x30303030, 0x3f3f3f3f, 0x30303030));
  const __m128i high = _mm_and_si128(_mm_srlv_epi32(acbc, _mm_setr_epi32(0, 0, 0, 4)),
                                     _mm_setr_epi32(0, 0x0f0f0f0f, 0, 0x0f0f0f0f));
  return _mm_or_si128(low, high);
}

// One weight row by NR prepared activation rows (x_row_bytes apart, whole PreparedSuperBlocks).
template <int MR, int NR>
STAR_AVX512 void tile(const std::byte* w, size_t, const std::byte* x, size_t x_row_bytes, int64_t k, float* y,
                      int64_t ldy, bool accumulate) {
  const int64_t blocks = k / quant::kLegacyBlock;
  static_assert(MR == 1);
  const auto* wb = reinterpret_cast<const BlockQ4_K*>(w);
  const auto* prepared = reinterpret_cast<const PreparedSuperBlock*>(x);
  const size_t row_stride = x_row_bytes / sizeof(PreparedSuperBlock);
  // Codes registers 0-3 hold sub-blocks (0, 2), (1, 3), (4, 6) and (5, 7) (kCodesOrder): the int32
  // sums of the first land in lanes 0-7, of the second in lanes 8-15, and so do their scales.
  const __m512i pair_lanes[4] = {_mm512_set_epi32(2, 2, 2, 2, 2, 2, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0),
                                 _mm512_set_epi32(3, 3, 3, 3, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1),
                                 _mm512_set_epi32(6, 6, 6, 6, 6, 6, 6, 6, 4, 4, 4, 4, 4, 4, 4, 4),
                                 _mm512_set_epi32(7, 7, 7, 7, 7, 7, 7, 7, 5, 5, 5, 5, 5, 5, 5, 5)};
  const __m512i nibble = _mm512_set1_epi8(0x0f);
  __m512 acc[NR];
  __m256 acc_min[NR];
  for (int i = 0; i < NR; ++i) {
    acc[i] = _mm512_setzero_ps();
    acc_min[i] = _mm256_setzero_ps();
  }
  for (int64_t sb = 0; sb < blocks / kSubBlocks; ++sb) {
    prefetch_weight_block(wb + sb);
    const BlockQ4_K& block = wb[sb];
    const __m128i both = scales_and_mins(block.scales);
    // d and dmin, the two f16 that open the block, in lanes 0 and 1.
    const __m128 d_dmin = _mm_cvtph_ps(_mm_loadu_si32(&block.d));
    const __m256 scales = _mm256_mul_ps(_mm256_broadcastss_ps(d_dmin), _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(both)));
    const __m256 mins = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_unpackhi_epi64(both, both)));
    const __m256 dmin = _mm256_broadcastss_ps(_mm_movehdup_ps(d_dmin));
    __m512i codes[4];
    for (int h = 0; h < 2; ++h) {
      const __m512i packed = _mm512_loadu_si512(block.qs + 64 * h);
      codes[2 * h] = _mm512_and_si512(packed, nibble);
      codes[2 * h + 1] = _mm512_and_si512(_mm512_srli_epi16(packed, 4), nibble);
    }
    for (int i = 0; i < NR; ++i) {
      const PreparedSuperBlock& a = prepared[i * row_stride + sb];
      const __m512 pair_scales = _mm512_castps256_ps512(_mm256_mul_ps(scales, _mm256_load_ps(a.d)));
      for (int p = 0; p < 4; ++p) {
        const __m512i sums = _mm512_dpbusd_epi32(_mm512_setzero_si512(), codes[p], _mm512_load_si512(a.codes + 64 * p));
        acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums), _mm512_permutexvar_ps(pair_lanes[p], pair_scales), acc[i]);
      }
      acc_min[i] = _mm256_fmadd_ps(dmin, _mm256_mul_ps(mins, _mm256_load_ps(a.sums)), acc_min[i]);
    }
  }
  for (int i = 0; i < NR; ++i) {
    const __m128 m4 = _mm_add_ps(_mm256_castps256_ps128(acc_min[i]), _mm256_extractf128_ps(acc_min[i], 1));
    const __m128 m2 = _mm_add_ps(m4, _mm_movehl_ps(m4, m4));
    const float v = _mm512_reduce_add_ps(acc[i]) - _mm_cvtss_f32(_mm_add_ss(m2, _mm_movehdup_ps(m2)));
    float& out = y[i * ldy];
    out = accumulate ? out + v : v;
  }
}

template <int MR, int NR>
struct Q4_KTile {
  static constexpr TileFn fn = tile<MR, NR>;
};

}  // namespace

void q4_k_q8_0_tile_avx512(const std::byte* w, size_t w_row_bytes, int64_t m, const std::byte* x, size_t x_row_bytes,
                           int64_t n, int64_t k, float* y, int64_t ldy, bool accumulate) {
  thread_local std::vector<PreparedSuperBlock> prepared;  // per OpenMP worker, reused across calls
  run_prepared_tiles<1, kTileCols, Q4_KTile>(prepared, prepare_row, k / kSuperBlock, w, w_row_bytes, m, x, x_row_bytes, n, k,
                                         y, ldy, accumulate);
}

float q4_k_q8_0_avx512(const std::byte* w, const std::byte* x, int64_t k) {
  return one_row_dot<q4_k_q8_0_tile_avx512>(w, x, k);
}

}  // namespace star::cpu::row_dots
