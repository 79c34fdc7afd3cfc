// Q6_K weight rows against float32 activations: the output projection of llama.cpp's K-quant
// files (Q4_K_M, Q5_K_M, and Q4_0 files whose rows are whole super-blocks), where the activations
// stay float32 for accuracy (see matmul_float_activations). Each block's codes are unpacked once
// (q6_k_codes.h), each 16-element sub-block widened to float, dotted with x and scaled by d·scale.
#include <immintrin.h>

#include <cstring>

#include "legacy_block_simd.h"
#include "q6_k_codes.h"
#include "q6_k_zmm.h"
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

using quant::BlockQ6_K;
using quant::kSuperBlock;

constexpr int kSubBlocks = kSuperBlock / 16;

STAR_AVX2 __m256 widen_8_codes(const int8_t* q) {
  int64_t bytes;
  std::memcpy(&bytes, q, 8);
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_cvtsi64_si128(bytes)));
}

STAR_AVX512 __m512 widened_product(__m128i codes, const float* x) {
  return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(codes)), _mm512_loadu_ps(x));
}

}  // namespace

float q6_k_f32_scalar(const std::byte* w, const std::byte* x, int64_t k) {
  float sum = 0.f;
  for (int64_t b = 0; b < k / kSuperBlock; ++b) {
    BlockQ6_K block;
    std::memcpy(&block, w + b * static_cast<int64_t>(sizeof block), sizeof block);
    int8_t q[kSuperBlock];
    unpack_q6_k_codes(block, q);
    const float d = f16_to_f32(block.d);
    for (int g = 0; g < kSubBlocks; ++g) {
      float partial = 0.f;
      for (int j = 0; j < 16; ++j) {
        float xj;
        std::memcpy(&xj, x + 4 * (b * kSuperBlock + 16 * g + j), 4);
        partial += static_cast<float>(q[16 * g + j]) * xj;
      }
      sum += (d * static_cast<float>(block.scales[g])) * partial;
    }
  }
  return sum;
}

STAR_AVX2 float q6_k_f32_avx2(const std::byte* w, const std::byte* x, int64_t k) {
  const auto* wb = reinterpret_cast<const BlockQ6_K*>(w);
  const auto* xf = reinterpret_cast<const float*>(x);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  for (int64_t b = 0; b < k / kSuperBlock; ++b) {
    int8_t q[kSuperBlock];
    unpack_q6_k_codes(wb[b], q);
    const float d = _cvtsh_ss(wb[b].d);
    const float* xb = xf + b * kSuperBlock;
    for (int g = 0; g < kSubBlocks; ++g) {
      const __m256 product = _mm256_fmadd_ps(widen_8_codes(q + 16 * g + 8), _mm256_loadu_ps(xb + 16 * g + 8),
                                             _mm256_mul_ps(widen_8_codes(q + 16 * g), _mm256_loadu_ps(xb + 16 * g)));
      __m256& acc = g % 2 == 0 ? acc0 : acc1;
      acc = _mm256_fmadd_ps(_mm256_set1_ps(d * static_cast<float>(wb[b].scales[g])), product, acc);
    }
  }
  return horizontal_sum_8(_mm256_add_ps(acc0, acc1));
}

// The codes are unpacked in registers (q6_k_zmm.h) and each 16-element sub-block widened from
// there; the scales d·scale are formed once per block and broadcast from memory. The
// auto-vectorized unpack of unpack_q6_k_codes streamed ~3.5 GB/s on one thread.
STAR_AVX512 float q6_k_f32_avx512(const std::byte* w, const std::byte* x, int64_t k) {
  const auto* wb = reinterpret_cast<const BlockQ6_K*>(w);
  const auto* xf = reinterpret_cast<const float*>(x);
  const __m512i offset = _mm512_set1_epi8(32);
  alignas(64) float scale[kSubBlocks];
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
  for (int64_t b = 0; b < k / kSuperBlock; ++b) {
    const BlockQ6_K& block = wb[b];
    _mm512_store_ps(scale, q6_k_scales(block));
    // Without this GCC forwards the stored vector and broadcasts each scale with three
    // shuffle-port instructions instead of one load.
    asm volatile("" ::: "memory");
    __m512i codes[4];
    q6_k_unsigned_codes(block, codes);
    const float* xb = xf + b * kSuperBlock;
    for (int quarter = 0; quarter < 4; ++quarter) {
      const __m512i signed_codes = _mm512_sub_epi8(codes[quarter], offset);
      const int g = 4 * quarter;
      const float* xg = xb + 16 * g;
      acc0 = _mm512_fmadd_ps(_mm512_set1_ps(scale[g]), widened_product(_mm512_castsi512_si128(signed_codes), xg), acc0);
      acc1 = _mm512_fmadd_ps(_mm512_set1_ps(scale[g + 1]),
                             widened_product(_mm512_extracti32x4_epi32(signed_codes, 1), xg + 16), acc1);
      acc0 = _mm512_fmadd_ps(_mm512_set1_ps(scale[g + 2]),
                             widened_product(_mm512_extracti32x4_epi32(signed_codes, 2), xg + 32), acc0);
      acc1 = _mm512_fmadd_ps(_mm512_set1_ps(scale[g + 3]),
                             widened_product(_mm512_extracti32x4_epi32(signed_codes, 3), xg + 48), acc1);
    }
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
}

}  // namespace star::cpu::row_dots
