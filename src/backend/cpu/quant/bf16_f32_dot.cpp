// BF16 weight rows against float32 activations: the output projection of BF16 files, where the
// activations stay float32 for accuracy (see matmul_float_activations). A bf16 is the top half of
// a float32, so each weight widens exactly with a 16-bit shift in registers; the row streams at
// memory speed where widening it into a buffer first (dequantize_weight_rows) did not. The AVX-512
// kernel is a register tile (bf16_tile_avx512.cpp), as a row at a time left the vocabulary's rows to
// OpenMP one by one.
#include <immintrin.h>

#include <cstring>

#include "legacy_block_simd.h"
#include "row_dots.h"
#include "star/model/dtype.h"

// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*(), which -Wuninitialized reports.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#define STAR_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace star::cpu::row_dots {
namespace {

float weight_at(const std::byte* w, int64_t i) {
  uint16_t bits;
  std::memcpy(&bits, w + 2 * i, 2);
  return bf16_to_f32(bits);
}

float activation_at(const std::byte* x, int64_t i) {
  float v;
  std::memcpy(&v, x + 4 * i, 4);
  return v;
}

STAR_AVX2 __m256 widen_8(const uint16_t* p) {
  const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
}

}  // namespace

float bf16_f32_scalar(const std::byte* w, const std::byte* x, int64_t k) {
  float sum = 0.f;
  for (int64_t i = 0; i < k; ++i) sum += weight_at(w, i) * activation_at(x, i);
  return sum;
}

STAR_AVX2 float bf16_f32_avx2(const std::byte* w, const std::byte* x, int64_t k) {
  const auto* wh = reinterpret_cast<const uint16_t*>(w);
  const auto* xf = reinterpret_cast<const float*>(x);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= k; i += 16) {
    acc0 = _mm256_fmadd_ps(widen_8(wh + i), _mm256_loadu_ps(xf + i), acc0);
    acc1 = _mm256_fmadd_ps(widen_8(wh + i + 8), _mm256_loadu_ps(xf + i + 8), acc1);
  }
  float sum = horizontal_sum_8(_mm256_add_ps(acc0, acc1));
  for (; i < k; ++i) sum += weight_at(w, i) * xf[i];
  return sum;
}

}  // namespace star::cpu::row_dots
