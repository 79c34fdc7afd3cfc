// Q4_1, Q5_0 and Q5_1 row dots for CPUs with AVX2. Unsigned codes (Q4_1, Q5_1) go straight into
// vpmaddubsw as its unsigned operand (pair sums at most 2·31·128 < 2^15); Q5_0's signed codes
// through the sign trick, as Q4_0's. The offsets' m·s products are summed in float beside.
#include <immintrin.h>

#include "legacy_block_simd.h"
#include "row_dots.h"
#include "star/quant/blocks.h"

#define STAR_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace star::cpu::row_dots {
namespace {

using quant::kLegacyBlock;

STAR_AVX2 __m256 unsigned_block_dot(__m256i w, __m256i x) {
  return _mm256_cvtepi32_ps(_mm256_madd_epi16(_mm256_maddubs_epi16(w, x), _mm256_set1_epi16(1)));
}

STAR_AVX2 __m256 signed_block_dot(__m256i w, __m256i x) {
  return unsigned_block_dot(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w));
}

STAR_AVX2 __m256 scale(uint16_t dw, uint16_t dx) { return _mm256_set1_ps(_cvtsh_ss(dw) * _cvtsh_ss(dx)); }

STAR_AVX2 __m256i load_qs(const int8_t* qs) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs)); }

}  // namespace

STAR_AVX2 float q4_1_q8_1_avx2(const std::byte* w, const std::byte* x, int64_t k) {
  const auto* wb = reinterpret_cast<const quant::BlockQ4_1*>(w);
  const auto* xb = reinterpret_cast<const quant::BlockQ8_1*>(x);
  __m256 acc = _mm256_setzero_ps();
  float offsets = 0.f;
  for (int64_t b = 0; b < k / kLegacyBlock; ++b) {
    acc = _mm256_fmadd_ps(scale(wb[b].d, xb[b].d), unsigned_block_dot(nibble_bytes(wb[b].qs), load_qs(xb[b].qs)), acc);
    offsets += _cvtsh_ss(wb[b].m) * _cvtsh_ss(xb[b].s);
  }
  return horizontal_sum_8(acc) + offsets;
}

STAR_AVX2 float q5_0_q8_0_avx2(const std::byte* w, const std::byte* x, int64_t k) {
  const auto* wb = reinterpret_cast<const quant::BlockQ5_0*>(w);
  const auto* xb = reinterpret_cast<const quant::BlockQ8_0*>(x);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t b = 0; b < k / kLegacyBlock; ++b) {
    const __m256i codes = _mm256_sub_epi8(_mm256_or_si256(nibble_bytes(wb[b].qs), fifth_bit_bytes(wb[b].qh)),
                                          _mm256_set1_epi8(16));
    acc = _mm256_fmadd_ps(scale(wb[b].d, xb[b].d), signed_block_dot(codes, load_qs(xb[b].qs)), acc);
  }
  return horizontal_sum_8(acc);
}

STAR_AVX2 float q5_1_q8_1_avx2(const std::byte* w, const std::byte* x, int64_t k) {
  const auto* wb = reinterpret_cast<const quant::BlockQ5_1*>(w);
  const auto* xb = reinterpret_cast<const quant::BlockQ8_1*>(x);
  __m256 acc = _mm256_setzero_ps();
  float offsets = 0.f;
  for (int64_t b = 0; b < k / kLegacyBlock; ++b) {
    const __m256i codes = _mm256_or_si256(nibble_bytes(wb[b].qs), fifth_bit_bytes(wb[b].qh));
    acc = _mm256_fmadd_ps(scale(wb[b].d, xb[b].d), unsigned_block_dot(codes, load_qs(xb[b].qs)), acc);
    offsets += _cvtsh_ss(wb[b].m) * _cvtsh_ss(xb[b].s);
  }
  return horizontal_sum_8(acc) + offsets;
}

}  // namespace star::cpu::row_dots
