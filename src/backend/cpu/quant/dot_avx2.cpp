// Row dots for CPUs with AVX2: the int8 sums through the sign trick (|w| · sign(w)·x with
// vpmaddubsw, whose 16-bit pair sums stay below 2·128·127 < 2^15), then vpmaddwd to 32 bits.
// Compiled with a target attribute, not the build's flags: best_isa() picks it at run time.
#include <immintrin.h>

#include "row_dots.h"
#include "star/quant/blocks.h"

#define STAR_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace star::cpu::row_dots {
namespace {

using quant::BlockQ4_0;
using quant::BlockQ8_0;
using quant::kLegacyBlock;

STAR_AVX2 float horizontal_sum(__m256 v) {
  const __m128 half = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 quarter = _mm_add_ps(half, _mm_movehl_ps(half, half));
  return _mm_cvtss_f32(_mm_add_ss(quarter, _mm_movehdup_ps(quarter)));
}

// The 32 signed weights of a Q4_0 block: low nibbles are elements 0..15, high nibbles 16..31.
STAR_AVX2 __m256i q4_0_bytes(const uint8_t* qs) {
  const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m256i nibbles = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(packed, 4), packed),
                                           _mm256_set1_epi8(0x0f));
  return _mm256_sub_epi8(nibbles, _mm256_set1_epi8(8));
}

STAR_AVX2 __m256 int8_block_dot(__m256i w, __m256i x) {
  const __m256i pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w));
  return _mm256_cvtepi32_ps(_mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
}

STAR_AVX2 __m256 scale(uint16_t dw, uint16_t dx) {
  return _mm256_set1_ps(_cvtsh_ss(dw) * _cvtsh_ss(dx));
}

}  // namespace

STAR_AVX2 float q4_0_q8_0_avx2(const std::byte* w, const std::byte* x, int64_t k) {
  const auto* wb = reinterpret_cast<const BlockQ4_0*>(w);
  const auto* xb = reinterpret_cast<const BlockQ8_0*>(x);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t b = 0; b < k / kLegacyBlock; ++b) {
    const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb[b].qs));
    acc = _mm256_fmadd_ps(scale(wb[b].d, xb[b].d), int8_block_dot(q4_0_bytes(wb[b].qs), xq), acc);
  }
  return horizontal_sum(acc);
}

STAR_AVX2 float q8_0_q8_0_avx2(const std::byte* w, const std::byte* x, int64_t k) {
  const auto* wb = reinterpret_cast<const BlockQ8_0*>(w);
  const auto* xb = reinterpret_cast<const BlockQ8_0*>(x);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t b = 0; b < k / kLegacyBlock; ++b) {
    const __m256i wq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb[b].qs));
    const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb[b].qs));
    acc = _mm256_fmadd_ps(scale(wb[b].d, xb[b].d), int8_block_dot(wq, xq), acc);
  }
  return horizontal_sum(acc);
}

STAR_AVX2 float f16_f32_avx2(const std::byte* w, const std::byte* x, int64_t k) {
  const auto* wh = reinterpret_cast<const uint16_t*>(w);
  const auto* xf = reinterpret_cast<const float*>(x);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= k; i += 16) {
    const __m256 w0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wh + i)));
    const __m256 w1 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wh + i + 8)));
    acc0 = _mm256_fmadd_ps(w0, _mm256_loadu_ps(xf + i), acc0);
    acc1 = _mm256_fmadd_ps(w1, _mm256_loadu_ps(xf + i + 8), acc1);
  }
  float sum = horizontal_sum(_mm256_add_ps(acc0, acc1));
  for (; i < k; ++i) sum += _cvtsh_ss(wh[i]) * xf[i];
  return sum;
}

namespace {
// bf16 -> float32 is a 16-bit shift: exact.
STAR_AVX2 __m256 widen_bf16(const uint16_t* p) {
  const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
}
float bf16_value(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float f;
  __builtin_memcpy(&f, &wide, 4);
  return f;
}
}  // namespace

STAR_AVX2 float bf16_bf16_avx2(const std::byte* w, const std::byte* x, int64_t k) {
  const auto* wh = reinterpret_cast<const uint16_t*>(w);
  const auto* xh = reinterpret_cast<const uint16_t*>(x);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= k; i += 16) {
    acc0 = _mm256_fmadd_ps(widen_bf16(wh + i), widen_bf16(xh + i), acc0);
    acc1 = _mm256_fmadd_ps(widen_bf16(wh + i + 8), widen_bf16(xh + i + 8), acc1);
  }
  float sum = horizontal_sum(_mm256_add_ps(acc0, acc1));
  for (; i < k; ++i) sum += bf16_value(wh[i]) * bf16_value(xh[i]);
  return sum;
}

}  // namespace star::cpu::row_dots
