// Row dots for CPUs with AVX-512 VNNI: F16 rows widened and fused-multiply-added, BF16 rows with
// vdpbf16ps (where the CPU also has AVX512-BF16; else bf16_tile_avx512.cpp). Q4_0, Q8_0, Q4_K and
// Q6_K are the 1x1 case of their register tiles (legacy_, q4_k_ and q6_k_tile_avx512.cpp), Q5_K is
// in dot_k_avx512.cpp.
// Compiled with a target attribute, not the build's flags: best_isa() picks it at run time.
#include <immintrin.h>

// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*(), which -Wuninitialized reports.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "row_dots.h"

#define STAR_AVX512 __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))
// vdpbf16ps needs AVX512-BF16 on top, which not every AVX-512 VNNI CPU has (find_dot_kernel).
#define STAR_AVX512_BF16 __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,avx512bf16")))

namespace star::cpu::row_dots {

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
