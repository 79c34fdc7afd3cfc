// The Q4_K and Q5_K row dot over 256-bit registers, one 32-weight sub-block a register (each
// sub-block has its own scale and min, each Q8_0 activation block its own d_a), shared by
// dot_k_avx2.cpp and dot_k_avx512.cpp (Q5_K only: AVX-512's Q4_K is q4_k_tile_avx512.cpp), which
// differ only in how they sum u8·s8 products. The
// arithmetic is dot_k_scalar.cpp's. The including file defines STAR_K_TARGET (its target attribute)
// and, in namespace star::cpu::row_dots's unnamed namespace,
//   STAR_K_TARGET __m256i code_dots(__m256i codes, __m256i aq)
// (each 32-bit lane the sum of four codes · activations) before including this header.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "q4_k_scales.h"
#include "star/quant/blocks.h"

namespace star::cpu::row_dots {
namespace {

using quant::BlockQ4_K;
using quant::BlockQ5_K;
using quant::BlockQ8_0;
using quant::kSuperBlock;

STAR_K_TARGET float horizontal_sum(__m256 v) {
  const __m128 half = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 quarter = _mm_add_ps(half, _mm_movehl_ps(half, half));
  return _mm_cvtss_f32(_mm_add_ss(quarter, _mm_movehdup_ps(quarter)));
}

// Bit s of each qh byte moved to bit 4 (the fifth bit of sub-block s's codes). 16-bit shifts by
// at most 4 keep each byte's bit 4 within its own byte.
STAR_K_TARGET __m256i fifth_bits(__m256i qh, int s) {
  const __m256i mask = _mm256_set1_epi8(0x10);
  if (s < 4) return _mm256_and_si256(_mm256_sll_epi16(qh, _mm_cvtsi32_si128(4 - s)), mask);
  return _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(s - 4)), mask);
}

struct Sums {
  // Set by the kernel, not by initialisers: a constructor would lack the kernel's target attribute.
  __m256 scaled;  // Σ (d·scale·d_a) · Σ q·a
  __m256 mins;    // Σ (dmin·min·d_a) · Σ a
};

STAR_K_TARGET void add_sub_block(__m256i codes, const BlockQ8_0& a, float d_scale, float dmin_min, Sums& sums) {
  const __m256i aq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.qs));
  const __m256i dot = code_dots(codes, aq);
  const __m256i a_sum = code_dots(_mm256_set1_epi8(1), aq);
  const float da = _cvtsh_ss(a.d);
  sums.scaled = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_set1_ps(d_scale * da), sums.scaled);
  sums.mins = _mm256_fmadd_ps(_mm256_cvtepi32_ps(a_sum), _mm256_set1_ps(dmin_min * da), sums.mins);
}

template <bool kFifthBit, typename Block>
STAR_K_TARGET float k_dot(const std::byte* w, const std::byte* x, int64_t k) {
  const auto* wb = reinterpret_cast<const Block*>(w);
  const auto* xb = reinterpret_cast<const BlockQ8_0*>(x);
  const __m256i low_nibbles = _mm256_set1_epi8(0x0F);
  Sums sums{_mm256_setzero_ps(), _mm256_setzero_ps()};
  for (int64_t b = 0; b < k / kSuperBlock; ++b, xb += 8) {
    const Block& block = wb[b];
    const SubBlockScales scales = unpack_q4_k_scales(block.scales);
    const float d = _cvtsh_ss(block.d), dmin = _cvtsh_ss(block.dmin);
    __m256i qh = _mm256_setzero_si256();
    if constexpr (kFifthBit) qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block.qh));
    for (int pair = 0; pair < 4; ++pair) {
      const __m256i packed = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block.qs + 32 * pair));
      for (int half = 0; half < 2; ++half) {
        const int s = 2 * pair + half;
        __m256i codes = _mm256_and_si256(half == 0 ? packed : _mm256_srli_epi16(packed, 4), low_nibbles);
        if constexpr (kFifthBit) codes = _mm256_or_si256(codes, fifth_bits(qh, s));
        add_sub_block(codes, xb[s], d * static_cast<float>(scales.scale[s]),
                      dmin * static_cast<float>(scales.min[s]), sums);
      }
    }
  }
  return horizontal_sum(_mm256_sub_ps(sums.scaled, sums.mins));
}

}  // namespace
}  // namespace star::cpu::row_dots
