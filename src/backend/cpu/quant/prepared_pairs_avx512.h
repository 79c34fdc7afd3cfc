// Activation rows re-laid once per call for the AVX-512 register tiles, two 32-element blocks a
// 64-byte register (the second all zero past an odd row's end): int32 lanes 0-7 belong to the
// first block, 8-15 to the second, d_x sits in its block's lanes, and the weight codes can go into
// vpdpbusd as its unsigned operand: they are stored + Offset (Q4_0's nibbles: 8, Q8_0's codes with
// the sign bit flipped: 128, Q6_K's 6-bit codes: 32), and −Offset·Σ of each lane's 4 activation
// codes starts that lane's sum, so the sums are exactly Σ code·q.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "avx512_target.h"
#include "q16_block.h"
#include "star/quant/blocks.h"

namespace star::cpu::row_dots {

// From Q8_0 activation blocks.
struct alignas(64) Int8Pair {
  int8_t codes[64];
  int32_t offsets[16];  // −Offset·Σ of the lane's 4 codes
  float d[16];
};

// From Q16 activation blocks (q16_block.h): both code planes, the offsets of each against the
// weight codes (the high plane's are −Offset·Σhi; the low plane's, against codes taken as signed,
// −Offset·Σlo where Offset < 128, else 0: Q8_0's signed codes need none), and s/8 in each lane
// (the lane sum of a block gives back s, for weights with an offset m).
struct alignas(64) Q16Pair {
  uint8_t lo[64];
  int8_t hi[64];
  int32_t lo_offsets[16];
  int32_t hi_offsets[16];
  float d[16];
  float s[16];
};

// Two blocks' 32-byte code planes in one register (the second zero without a second block).
STAR_AVX512_INLINE __m512i block_pair(const void* first, const void* second, bool pair) {
  const __m256i low = _mm256_loadu_si256(static_cast<const __m256i*>(first));
  const __m256i high = pair ? _mm256_loadu_si256(static_cast<const __m256i*>(second)) : _mm256_setzero_si256();
  return _mm512_inserti64x4(_mm512_castsi256_si512(low), high, 1);
}

STAR_AVX512_INLINE __m512 pair_lanes(float first, float second) {
  return _mm512_mask_blend_ps(0xff00, _mm512_set1_ps(first), _mm512_set1_ps(second));
}

// One Q8_0 activation row of k elements into (k/32 + 1)/2 Int8Pairs.
template <int Offset>
STAR_AVX512 void prepare_int8_pairs(const std::byte* x, int64_t k, Int8Pair* out) {
  const auto* xb = reinterpret_cast<const quant::BlockQ8_0*>(x);
  const int64_t blocks = k / quant::kLegacyBlock;
  for (int64_t b = 0; b < blocks; b += 2) {
    const bool pair = b + 1 < blocks;
    const __m512i codes = block_pair(xb[b].qs, pair ? xb[b + 1].qs : nullptr, pair);
    // The offset bytes as vpdpbusd's unsigned operand (128 included).
    const __m512i sums = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(static_cast<char>(Offset)), codes);
    Int8Pair& p = out[b / 2];
    _mm512_store_si512(p.codes, codes);
    _mm512_store_si512(p.offsets, _mm512_sub_epi32(_mm512_setzero_si512(), sums));
    _mm512_store_ps(p.d, pair_lanes(_cvtsh_ss(xb[b].d), pair ? _cvtsh_ss(xb[b + 1].d) : 0.f));
  }
}

// One Q16 activation row of k elements into (k/32 + 1)/2 Q16Pairs.
template <int Offset>
STAR_AVX512 void prepare_q16_pairs(const std::byte* x, int64_t k, Q16Pair* out) {
  const auto* xb = reinterpret_cast<const BlockQ16*>(x);
  const int64_t blocks = k / quant::kLegacyBlock;
  const __m512i offset = _mm512_set1_epi8(static_cast<char>(Offset));
  for (int64_t b = 0; b < blocks; b += 2) {
    const BlockQ16& first = xb[b];
    const bool pair = b + 1 < blocks;
    const __m512i lo = block_pair(first.lo, pair ? xb[b + 1].lo : nullptr, pair);
    const __m512i hi = block_pair(first.hi, pair ? xb[b + 1].hi : nullptr, pair);
    // Σ lo·Offset with lo unsigned: the offset bytes go in as the signed operand, which 128 is not.
    const __m512i lo_sums =
        Offset < 128 ? _mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, offset) : _mm512_setzero_si512();
    const __m512i hi_sums = _mm512_dpbusd_epi32(_mm512_setzero_si512(), offset, hi);
    Q16Pair& p = out[b / 2];
    _mm512_store_si512(p.lo, lo);
    _mm512_store_si512(p.hi, hi);
    _mm512_store_si512(p.lo_offsets, _mm512_sub_epi32(_mm512_setzero_si512(), lo_sums));
    _mm512_store_si512(p.hi_offsets, _mm512_sub_epi32(_mm512_setzero_si512(), hi_sums));
    _mm512_store_ps(p.d, pair_lanes(first.d, pair ? xb[b + 1].d : 0.f));
    _mm512_store_ps(p.s, pair_lanes(first.s / 8, pair ? xb[b + 1].s / 8 : 0.f));
  }
}

// Σ over each lane's 4 elements of (u − Offset)·q for the weight codes u (stored + Offset).
STAR_AVX512_INLINE __m512i q16_sums(__m512i codes, const Q16Pair& a) {
  const __m512i high = _mm512_dpbusd_epi32(_mm512_load_si512(a.hi_offsets), codes, _mm512_load_si512(a.hi));
  const __m512i start = _mm512_add_epi32(_mm512_slli_epi32(high, 8), _mm512_load_si512(a.lo_offsets));
  return _mm512_dpbusd_epi32(start, _mm512_load_si512(a.lo), codes);
}

}  // namespace star::cpu::row_dots
