// Q8_0 weight rows against float32 activations: the output projection's product, where rounding
// the activations to int8 flips the top token (see matmul_float_activations). Each block's codes
// are widened to float and dotted with x in float32, then scaled by d once; no weight row is
// written back widened, so the product streams the stored bytes at memory speed.
#include <immintrin.h>

#include <cstring>

#include "legacy_block_simd.h"
#include "row_dots.h"
#include "star/model/dtype.h"
#include "star/quant/blocks.h"

// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*(), which -Wuninitialized reports.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#define STAR_AVX2 __attribute__((target("avx2,fma,f16c")))
#define STAR_AVX512 __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl")))

namespace star::cpu::row_dots {
namespace {

using quant::BlockQ8_0;
using quant::kLegacyBlock;

STAR_AVX2 __m256 widen_8_codes(const int8_t* qs) {
  int64_t bytes;
  std::memcpy(&bytes, qs, 8);
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_cvtsi64_si128(bytes)));
}

STAR_AVX512 __m512 widen_16_codes(const int8_t* qs) {
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs))));
}

STAR_AVX512 __m512 q8_0_f32_block(const BlockQ8_0& w, const float* x, __m512 acc) {
  const __m512 block = _mm512_fmadd_ps(widen_16_codes(w.qs + 16), _mm512_loadu_ps(x + 16),
                                       _mm512_mul_ps(widen_16_codes(w.qs), _mm512_loadu_ps(x)));
  return _mm512_fmadd_ps(_mm512_set1_ps(_cvtsh_ss(w.d)), block, acc);
}

}  // namespace

float q8_0_f32_scalar(const std::byte* w, const std::byte* x, int64_t k) {
  float sum = 0.f;
  for (int64_t b = 0; b < k / kLegacyBlock; ++b) {
    BlockQ8_0 block;
    std::memcpy(&block, w + b * static_cast<int64_t>(sizeof block), sizeof block);
    float partial = 0.f;
    for (int64_t j = 0; j < kLegacyBlock; ++j) {
      float xj;
      std::memcpy(&xj, x + 4 * (b * kLegacyBlock + j), 4);
      partial += static_cast<float>(block.qs[j]) * xj;
    }
    sum += f16_to_f32(block.d) * partial;
  }
  return sum;
}

STAR_AVX2 float q8_0_f32_avx2(const std::byte* w, const std::byte* x, int64_t k) {
  const auto* wb = reinterpret_cast<const BlockQ8_0*>(w);
  const auto* xf = reinterpret_cast<const float*>(x);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t b = 0; b < k / kLegacyBlock; ++b) {
    const float* xb = xf + b * kLegacyBlock;
    __m256 block = _mm256_mul_ps(widen_8_codes(wb[b].qs), _mm256_loadu_ps(xb));
    block = _mm256_fmadd_ps(widen_8_codes(wb[b].qs + 8), _mm256_loadu_ps(xb + 8), block);
    block = _mm256_fmadd_ps(widen_8_codes(wb[b].qs + 16), _mm256_loadu_ps(xb + 16), block);
    block = _mm256_fmadd_ps(widen_8_codes(wb[b].qs + 24), _mm256_loadu_ps(xb + 24), block);
    acc = _mm256_fmadd_ps(_mm256_set1_ps(_cvtsh_ss(wb[b].d)), block, acc);
  }
  return horizontal_sum_8(acc);
}

STAR_AVX512 float q8_0_f32_avx512(const std::byte* w, const std::byte* x, int64_t k) {
  const auto* wb = reinterpret_cast<const BlockQ8_0*>(w);
  const auto* xf = reinterpret_cast<const float*>(x);
  const int64_t blocks = k / kLegacyBlock;
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
  int64_t b = 0;
  for (; b + 2 <= blocks; b += 2) {
    acc0 = q8_0_f32_block(wb[b], xf + b * kLegacyBlock, acc0);
    acc1 = q8_0_f32_block(wb[b + 1], xf + (b + 1) * kLegacyBlock, acc1);
  }
  if (b < blocks) acc0 = q8_0_f32_block(wb[b], xf + b * kLegacyBlock, acc0);
  return _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
}

}  // namespace star::cpu::row_dots
