// Row dots for CPUs with AVX2: F16 and BF16 rows widened and fused-multiply-added, Q6_K through
// q6_k_dot.h. Q4_0 and Q8_0 are the 1x1 case of their register tiles (tile_avx2.cpp).
// Compiled with a target attribute, not the build's flags: best_isa() picks it at run time.
#include <immintrin.h>

#include "row_dots.h"

#define STAR_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace star::cpu::row_dots {
namespace {

STAR_AVX2 float horizontal_sum(__m256 v) {
  const __m128 half = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 quarter = _mm_add_ps(half, _mm_movehl_ps(half, half));
  return _mm_cvtss_f32(_mm_add_ss(quarter, _mm_movehdup_ps(quarter)));
}

}  // namespace

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
