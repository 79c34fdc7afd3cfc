// Two 32-element blocks a 64-byte register, for the AVX-512 register tiles: activation rows re-laid
// once per call, and weight block pairs loaded in the same lanes. Activations come two blocks a
// 64-byte register (the second all zero past an odd row's end): int32 lanes 0-7 belong to the
// first block, 8-15 to the second, d_x sits in its block's lanes, and the weight codes can go into
// vpdpbusd as its unsigned operand: they are stored + Offset (Q4_0's nibbles: 8, Q8_0's codes with
// the sign bit flipped: 128, Q6_K's 6-bit codes: 32), and −Offset·Σ of each lane's 4 activation
// codes starts that lane's sum, so the sums are exactly Σ code·q.
#pragma once

#include <immintrin.h>

#include <cstddef>
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

// Two Q4_0 or Q4_1 blocks' nibbles (0..15) as 128-bit lanes [block 0 low nibbles, its high
// nibbles, block 1 low, high], element order within each block; without a second block its lanes
// are 0.
template <bool Pair, class Block>
STAR_AVX512_INLINE __m512i nibble_pair(const Block* b) {
  const __m128i* qs0 = reinterpret_cast<const __m128i*>(b[0].qs);
  const __m512i packed = Pair ? _mm512_mask_broadcast_i32x4(_mm512_broadcast_i32x4(_mm_loadu_si128(qs0)), 0xff00,
                                                             _mm_loadu_si128(reinterpret_cast<const __m128i*>(b[1].qs)))
                              : _mm512_maskz_broadcast_i32x4(0x00ff, _mm_loadu_si128(qs0));
  const __m512i shifts = _mm512_set_epi64(4, 4, 0, 0, 4, 4, 0, 0);
  return _mm512_and_si512(_mm512_srlv_epi64(packed, shifts), _mm512_set1_epi8(0x0f));
}

// Two Q8_0 blocks' codes (signed); without a second block its codes are 0.
template <bool Pair>
STAR_AVX512_INLINE __m512i q8_0_pair(const quant::BlockQ8_0* b) {
  return block_pair(b[0].qs, Pair ? b[1].qs : nullptr, Pair);
}

// The f16 at byte Field of two consecutive blocks as float lanes [block 0 ×8, block 1 ×8] (block
// 1's 0 without it). Where both lie in the first 32 bytes (18- and 20-byte blocks), one load and a
// shuffle within each 128-bit half; else a 16-byte load from each.
template <bool Pair, class Block, size_t Field>
STAR_AVX512_INLINE __m512 f16_pair(const Block* b) {
  const auto* bytes = reinterpret_cast<const char*>(b);
  if constexpr (!Pair) {
    uint16_t bits;
    __builtin_memcpy(&bits, bytes + Field, 2);
    return _mm512_maskz_mov_ps(0x00ff, _mm512_set1_ps(_cvtsh_ss(bits)));
  }
  constexpr bool kOneLoad = sizeof(Block) + Field + 2 <= 32;
  constexpr char lo = kOneLoad ? Field : 0, hi = kOneLoad ? sizeof(Block) + Field - 16 : 0;
  const __m256i loaded =
      kOneLoad ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bytes))
               : _mm256_set_m128i(_mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes + sizeof(Block) + Field)),
                                  _mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes + Field)));
  const __m256i spread = _mm256_shuffle_epi8(
      loaded, _mm256_setr_epi8(lo, lo + 1, lo, lo + 1, lo, lo + 1, lo, lo + 1, lo, lo + 1, lo, lo + 1, lo, lo + 1, lo, lo + 1,
                               hi, hi + 1, hi, hi + 1, hi, hi + 1, hi, hi + 1, hi, hi + 1, hi, hi + 1, hi, hi + 1, hi, hi + 1));
  return _mm512_cvtph_ps(spread);
}

}  // namespace star::cpu::row_dots
