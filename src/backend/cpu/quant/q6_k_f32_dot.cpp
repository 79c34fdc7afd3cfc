// Q6_K weight rows against float32 activations: the output projection of llama.cpp's K-quant
// files (Q4_K_M, Q5_K_M, and Q4_0 files whose rows are whole super-blocks), where the activations
// stay float32 for accuracy (see matmul_float_activations). Each block's codes are unpacked once
// (q6_k_codes.h), each 16-element sub-block widened to float, dotted with x and scaled by d·scale.
#include <immintrin.h>

#include <cstring>

#include "legacy_block_simd.h"
#include "q6_k_codes.h"
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

STAR_AVX512 __m512 sub_block_product(const int8_t* q, const float* x) {
  return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q)))),
                       _mm512_loadu_ps(x));
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

STAR_AVX512 float q6_k_f32_avx512(const std::byte* w, const std::byte* x, int64_t k) {
  const auto* wb = reinterpret_cast<const BlockQ6_K*>(w);
  const auto* xf = reinterpret_cast<const float*>(x);
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
  for (int64_t b = 0; b < k / kSuperBlock; ++b) {
    int8_t q[kSuperBlock];
    unpack_q6_k_codes(wb[b], q);
    const float d = _cvtsh_ss(wb[b].d);
    const float* xb = xf + b * kSuperBlock;
    for (int g = 0; g < kSubBlocks; g += 2) {
      acc0 = _mm512_fmadd_ps(_mm512_set1_ps(d * static_cast<float>(wb[b].scales[g])),
                             sub_block_product(q + 16 * g, xb + 16 * g), acc0);
      acc1 = _mm512_fmadd_ps(_mm512_set1_ps(d * static_cast<float>(wb[b].scales[g + 1])),
                             sub_block_product(q + 16 * g + 16, xb + 16 * g + 16), acc1);
    }
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
}

}  // namespace star::cpu::row_dots
