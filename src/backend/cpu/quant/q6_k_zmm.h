// One Q6_K block in AVX-512 registers, for the AVX-512 Q6_K kernels (q6_k_f32_dot.cpp,
// q6_k_tile_avx512.cpp, q16_output_tiles_avx512.cpp): its 256 codes unsigned (0..63, the stored
// code + 32) in element order, 64 a register, and its 16 sub-block scales as d·scale.
#pragma once

#include <immintrin.h>

#include "star/quant/blocks.h"
#include "weight_prefetch.h"

#define STAR_Q6_K_ZMM __attribute__((always_inline, target("avx2,fma,f16c,avx512f,avx512bw,avx512vl"))) inline
#define STAR_Q6_K_VNNI \
  __attribute__((always_inline, target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni"))) inline

namespace star::cpu::row_dots {

// Each half of 128 elements: ql's 64 bytes hold the low four bits (elements 0-63 in the low
// nibbles, 64-127 in the high ones), qh's 32 bytes two high bits of each: bits 0-1 for elements
// 0-31, 2-3 for 32-63, 4-5 for 64-95, 6-7 for 96-127 (of the half).
STAR_Q6_K_ZMM void q6_k_unsigned_codes(const quant::BlockQ6_K& block, __m512i (&codes)[4]) {
  const __m512i low_nibbles = _mm512_set1_epi8(0x0F), high_bits = _mm512_set1_epi8(0x30);
  // Per 16-bit element of the broadcast qh, the shift that moves the first 32 codes' bits (lower
  // 256 bits) and the next 32 codes' bits (upper 256) to bits 4-5; 16-bit shifts by at most 4 keep
  // the bits each mask keeps within their own byte.
  const __m512i low_shift = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(2), 1);
  const __m512i high_shift = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(2), 1);
  for (int half = 0; half < 2; ++half) {
    const __m512i ql = _mm512_loadu_si512(block.ql + 64 * half);
    const __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(block.qh + 32 * half)));
    codes[2 * half] = _mm512_or_si512(_mm512_and_si512(ql, low_nibbles),
                                      _mm512_and_si512(_mm512_sllv_epi16(qh, low_shift), high_bits));
    codes[2 * half + 1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), low_nibbles),
                                          _mm512_and_si512(_mm512_srlv_epi16(qh, high_shift), high_bits));
  }
}

STAR_Q6_K_ZMM __m512 q6_k_scales(const quant::BlockQ6_K& block) {
  const __m512i scales = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block.scales)));
  return _mm512_mul_ps(_mm512_set1_ps(_cvtsh_ss(block.d)), _mm512_cvtepi32_ps(scales));
}

// The scale index of each int32 lane of a vpdpbusd over codes register `quarter`: lane L sums 4
// codes of sub-block 4·quarter + L/4.
STAR_Q6_K_ZMM __m512i q6_k_lane_sub_blocks(int quarter) {
  return _mm512_add_epi32(_mm512_set1_epi32(4 * quarter),
                          _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0));
}

// One Q6_K weight row by NR activation rows into acc (16 float lanes per output), the body of the
// Q6_K register tiles; Activations, the calling file's, re-lays the activations:
//   Activations::Unit, kUnitsPerBlock   its re-laid activations, so many per 256 elements
//   Activations::sums(codes, units, q)  the int32 lanes Σ (u − 32)·a over codes register q
//   Activations::scales(units, q)       d_a in the lanes of codes register q
// Each lane is then scaled by d·scale·d_a and added in float.
template <class Activations, int NR>
STAR_Q6_K_VNNI void q6_k_rows(const quant::BlockQ6_K* w, int64_t super_blocks, const typename Activations::Unit* x,
                              size_t row_stride, __m512 (&acc)[NR]) {
  __m512i lane_sub_blocks[4];
  for (int q = 0; q < 4; ++q) lane_sub_blocks[q] = q6_k_lane_sub_blocks(q);
  for (int i = 0; i < NR; ++i) acc[i] = _mm512_setzero_ps();
  for (int64_t sb = 0; sb < super_blocks; ++sb) {
    prefetch_weight_block(w + sb);
    const __m512 scales = q6_k_scales(w[sb]);
    __m512i codes[4];
    q6_k_unsigned_codes(w[sb], codes);
    __m512 quarter_scales[4];
    for (int q = 0; q < 4; ++q) quarter_scales[q] = _mm512_permutexvar_ps(lane_sub_blocks[q], scales);
    for (int i = 0; i < NR; ++i) {
      const typename Activations::Unit* a = x + i * row_stride + Activations::kUnitsPerBlock * sb;
      for (int q = 0; q < 4; ++q) {
        const __m512 scale = _mm512_mul_ps(quarter_scales[q], Activations::scales(a, q));
        acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(Activations::sums(codes[q], a, q)), scale, acc[i]);
      }
    }
  }
}

}  // namespace star::cpu::row_dots
