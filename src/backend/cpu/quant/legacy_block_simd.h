// AVX2 pieces shared by the legacy-block row dots (32-element blocks): the block's codes as 32
// bytes in element order, and the final horizontal sum. Target attributes, not the build's flags:
// the including kernels are picked at run time, and AVX-512 targets include AVX2.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#define STAR_AVX2_BLOCKS __attribute__((target("avx2,fma,f16c")))

namespace star::cpu::row_dots {

// 16 bytes of packed nibbles -> 32 bytes 0..15: low nibbles are elements 0..15, high ones 16..31.
STAR_AVX2_BLOCKS inline __m256i nibble_bytes(const uint8_t* qs) {
  const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(packed, 4), packed), _mm256_set1_epi8(0x0f));
}

// Q5's fifth bits (bit j of the little-endian u32 qh belongs to element j) -> byte j = 0x10 or 0.
STAR_AVX2_BLOCKS inline __m256i fifth_bit_bytes(const uint8_t* qh) {
  uint32_t bits;
  std::memcpy(&bits, qh, 4);
  // Byte j takes qh's byte j / 8 (the shuffle works per 128-bit lane; both lanes hold all of qh),
  // then tests its bit j % 8.
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32(static_cast<int32_t>(bits)),
      _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201));
  return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit), _mm256_set1_epi8(0x10));
}

STAR_AVX2_BLOCKS inline float horizontal_sum_8(__m256 v) {
  const __m128 half = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 quarter = _mm_add_ps(half, _mm_movehl_ps(half, half));
  return _mm_cvtss_f32(_mm_add_ss(quarter, _mm_movehdup_ps(quarter)));
}

}  // namespace star::cpu::row_dots
