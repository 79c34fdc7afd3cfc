// The Q6_K row dot against Q8_0 activations over 256-bit registers, for dot_k_avx2.cpp after
// k_quant_dot_body.h (its code_dots and horizontal_sum); AVX-512 has q6_k_tile_avx512.cpp. The arithmetic is
// q6_k_dot.h's: per 32-element activation block the exact integer sum of both 16-element
// sub-blocks times their scales, then one float multiply-add by d_w·d_x. The codes are unpacked in
// registers, 32 at a time, as unsigned 0..63 (code_dots takes them as the unsigned operand), and
// the −32 offset is subtracted as 32·Σa: the auto-vectorized unpack through a stack array of
// q6_k_dot.h streamed 1.6 GB/s on one thread.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "star/quant/blocks.h"

namespace star::cpu::row_dots {
namespace {

using quant::BlockQ6_K;

// Each 32-bit lane of code_dots sums four consecutive bytes, so lanes 0-3 cover the first
// 16-element sub-block and lanes 4-7 the second: scales[pair] four times, then scales[pair + 1].
STAR_K_TARGET __m256i q6_k_lane_scales(__m128i scales, int pair) {
  const int64_t low = 0x01010101LL * pair, high = 0x01010101LL * (pair + 1);
  return _mm256_cvtepi8_epi32(_mm_shuffle_epi8(scales, _mm_cvtsi64_si128(low | (high << 32))));
}

STAR_K_TARGET __m256 q6_k_block_sum(__m256i codes, const BlockQ8_0& a, __m128i scales, int pair, float d,
                                     __m256 acc) {
  const __m256i aq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.qs));
  const __m256i centred = _mm256_sub_epi32(code_dots(codes, aq), code_dots(_mm256_set1_epi8(32), aq));
  const __m256i scaled = _mm256_mullo_epi32(centred, q6_k_lane_scales(scales, pair));
  return _mm256_fmadd_ps(_mm256_cvtepi32_ps(scaled), _mm256_set1_ps(d * _cvtsh_ss(a.d)), acc);
}

STAR_K_TARGET float q6_k_dot(const std::byte* w, const std::byte* x, int64_t k) {
  const auto* wb = reinterpret_cast<const BlockQ6_K*>(w);
  const auto* xb = reinterpret_cast<const BlockQ8_0*>(x);
  const __m256i low_nibbles = _mm256_set1_epi8(0x0F), high_bits = _mm256_set1_epi8(0x30);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  for (int64_t b = 0; b < k / quant::kSuperBlock; ++b, xb += 8) {
    const BlockQ6_K& block = wb[b];
    const __m128i scales = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block.scales));
    const float d = _cvtsh_ss(block.d);
    // Each half of 128 elements: ql's 64 bytes hold the low four bits (elements 0-31 and 32-63 in
    // the low nibbles, 64-95 and 96-127 in the high ones), qh's 32 bytes two high bits of each.
    for (int half = 0; half < 2; ++half) {
      const __m256i ql0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block.ql + 64 * half));
      const __m256i ql1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block.ql + 64 * half + 32));
      const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block.qh + 32 * half));
      // 16-bit shifts by at most 4 keep the bits each mask keeps within their own byte.
      const __m256i c0 = _mm256_or_si256(_mm256_and_si256(ql0, low_nibbles),
                                         _mm256_and_si256(_mm256_slli_epi16(qh, 4), high_bits));
      const __m256i c1 = _mm256_or_si256(_mm256_and_si256(ql1, low_nibbles),
                                         _mm256_and_si256(_mm256_slli_epi16(qh, 2), high_bits));
      const __m256i c2 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), low_nibbles),
                                         _mm256_and_si256(qh, high_bits));
      const __m256i c3 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), low_nibbles),
                                         _mm256_and_si256(_mm256_srli_epi16(qh, 2), high_bits));
      const int s = 4 * half;
      acc0 = q6_k_block_sum(c0, xb[s], scales, 2 * s, d, acc0);
      acc1 = q6_k_block_sum(c1, xb[s + 1], scales, 2 * s + 2, d, acc1);
      acc0 = q6_k_block_sum(c2, xb[s + 2], scales, 2 * s + 4, d, acc0);
      acc1 = q6_k_block_sum(c3, xb[s + 3], scales, 2 * s + 6, d, acc1);
    }
  }
  return horizontal_sum(_mm256_add_ps(acc0, acc1));
}

}  // namespace
}  // namespace star::cpu::row_dots
