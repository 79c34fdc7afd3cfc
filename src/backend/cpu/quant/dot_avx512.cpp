// Row dots for CPUs with AVX-512 VNNI (and BF16 for the BF16 weights). The int8 blocks use vpdpbusd on 256-bit lanes
// (one 32-element block a register: each block has its own scale, so wider registers only add
// shuffles); |w| is the unsigned operand and sign(w)·x the signed one. BF16 rows use vdpbf16ps.
// Compiled with a target attribute, not the build's flags: best_isa() picks it at run time.
#include <immintrin.h>

// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*(), which -Wuninitialized reports.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "row_dots.h"
#include "star/quant/blocks.h"

#define STAR_AVX512 __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))
// vdpbf16ps needs AVX512-BF16 on top, which not every AVX-512 VNNI CPU has (find_dot_kernel).
#define STAR_AVX512_BF16 __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,avx512bf16")))

namespace star::cpu::row_dots {
namespace {

using quant::BlockQ4_0;
using quant::BlockQ8_0;
using quant::kLegacyBlock;

STAR_AVX512 float horizontal_sum(__m256 v) {
  const __m128 half = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 quarter = _mm_add_ps(half, _mm_movehl_ps(half, half));
  return _mm_cvtss_f32(_mm_add_ss(quarter, _mm_movehdup_ps(quarter)));
}

STAR_AVX512 __m256i q4_0_bytes(const uint8_t* qs) {
  const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m256i nibbles = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(packed, 4), packed),
                                           _mm256_set1_epi8(0x0f));
  return _mm256_sub_epi8(nibbles, _mm256_set1_epi8(8));
}

STAR_AVX512 __m256 int8_block_dot(__m256i w, __m256i x) {
  return _mm256_cvtepi32_ps(
      _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w)));
}

STAR_AVX512 __m256 scale(uint16_t dw, uint16_t dx) {
  return _mm256_set1_ps(_cvtsh_ss(dw) * _cvtsh_ss(dx));
}

}  // namespace

STAR_AVX512 float q4_0_q8_0_avx512(const std::byte* w, const std::byte* x, int64_t k) {
  const auto* wb = reinterpret_cast<const BlockQ4_0*>(w);
  const auto* xb = reinterpret_cast<const BlockQ8_0*>(x);
  const int64_t blocks = k / kLegacyBlock;
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t b = 0;
  for (; b + 2 <= blocks; b += 2) {
    const __m256i x0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb[b].qs));
    const __m256i x1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb[b + 1].qs));
    acc0 = _mm256_fmadd_ps(scale(wb[b].d, xb[b].d), int8_block_dot(q4_0_bytes(wb[b].qs), x0), acc0);
    acc1 = _mm256_fmadd_ps(scale(wb[b + 1].d, xb[b + 1].d), int8_block_dot(q4_0_bytes(wb[b + 1].qs), x1), acc1);
  }
  if (b < blocks) {
    const __m256i x0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb[b].qs));
    acc0 = _mm256_fmadd_ps(scale(wb[b].d, xb[b].d), int8_block_dot(q4_0_bytes(wb[b].qs), x0), acc0);
  }
  return horizontal_sum(_mm256_add_ps(acc0, acc1));
}

STAR_AVX512 float q8_0_q8_0_avx512(const std::byte* w, const std::byte* x, int64_t k) {
  const auto* wb = reinterpret_cast<const BlockQ8_0*>(w);
  const auto* xb = reinterpret_cast<const BlockQ8_0*>(x);
  const int64_t blocks = k / kLegacyBlock;
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t b = 0;
  for (; b + 2 <= blocks; b += 2) {
    for (int64_t j = 0; j < 2; ++j) {
      const __m256i wq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb[b + j].qs));
      const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb[b + j].qs));
      __m256& acc = j == 0 ? acc0 : acc1;
      acc = _mm256_fmadd_ps(scale(wb[b + j].d, xb[b + j].d), int8_block_dot(wq, xq), acc);
    }
  }
  if (b < blocks) {
    const __m256i wq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb[b].qs));
    const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb[b].qs));
    acc0 = _mm256_fmadd_ps(scale(wb[b].d, xb[b].d), int8_block_dot(wq, xq), acc0);
  }
  return horizontal_sum(_mm256_add_ps(acc0, acc1));
}

STAR_AVX512 float f16_f32_avx512(const std::byte* w, const std::byte* x, int64_t k) {
  const auto* wh = reinterpret_cast<const uint16_t*>(w);
  const auto* xf = reinterpret_cast<const float*>(x);
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= k; i += 32) {
    const __m512 w0 = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(wh + i)));
    const __m512 w1 = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(wh + i + 16)));
    acc0 = _mm512_fmadd_ps(w0, _mm512_loadu_ps(xf + i), acc0);
    acc1 = _mm512_fmadd_ps(w1, _mm512_loadu_ps(xf + i + 16), acc1);
  }
  float sum = _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
  for (; i < k; ++i) sum += _cvtsh_ss(wh[i]) * xf[i];
  return sum;
}

STAR_AVX512_BF16 float bf16_bf16_avx512(const std::byte* w, const std::byte* x, int64_t k) {
  const auto* wh = reinterpret_cast<const uint16_t*>(w);
  const auto* xh = reinterpret_cast<const uint16_t*>(x);
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 64 <= k; i += 64) {
    const __m512i w0 = _mm512_loadu_si512(wh + i), w1 = _mm512_loadu_si512(wh + i + 32);
    const __m512i x0 = _mm512_loadu_si512(xh + i), x1 = _mm512_loadu_si512(xh + i + 32);
    acc0 = _mm512_dpbf16_ps(acc0, reinterpret_cast<const __m512bh&>(w0), reinterpret_cast<const __m512bh&>(x0));
    acc1 = _mm512_dpbf16_ps(acc1, reinterpret_cast<const __m512bh&>(w1), reinterpret_cast<const __m512bh&>(x1));
  }
  float sum = _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
  for (; i < k; ++i) {
    const uint32_t wb = static_cast<uint32_t>(wh[i]) << 16, xb = static_cast<uint32_t>(xh[i]) << 16;
    float wf, xf;
    __builtin_memcpy(&wf, &wb, 4);
    __builtin_memcpy(&xf, &xb, 4);
    sum += wf * xf;
  }
  return sum;
}

}  // namespace star::cpu::row_dots
