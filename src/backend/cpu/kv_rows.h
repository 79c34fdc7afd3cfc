// Stored K/V rows (star/model/kv_dtype.h) -> the attention kernel's float32 tiles, one head's row
// at a time, so the kernel reads bf16 and q8_0 caches directly and never copies a whole cache.
// Each decoder gives exactly decode_kv's values: bf16 widens exactly, q8_0 is one rounding of q · d.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__AVX512F__) || defined(__AVX2__) || defined(__F16C__)
#include <immintrin.h>
#endif

#include "simd.h"
#include "star/model/dtype.h"
#include "star/model/kv_dtype.h"
#include "star/quant/blocks.h"

namespace star::cpu::kv_rows {

// With AVX-512F, 16 elements a step; with AVX2, 8. The maskz forms with every lane selected compile
// to the plain instructions; GCC 12 warns (-Wmaybe-uninitialized) on the unmasked forms' undefined
// operand.
#if defined(__AVX512F__)
inline constexpr __mmask16 kAllLanes = 0xffff;
#endif

// dst[0:n] = rows.data's float32 elements [element, element + n).
inline void decode_f32(KvRows rows, int64_t element, int64_t n, float* dst) {
  const float* src = reinterpret_cast<const float*>(rows.data) + element;
  int64_t i = 0;
  for (; i + simd::kLanes <= n; i += simd::kLanes) simd::store(dst + i, simd::load(src + i));
  for (; i < n; ++i) dst[i] = src[i];
}

// bf16 is the top half of a float32: widen each element and shift it up.
inline void decode_bf16(KvRows rows, int64_t element, int64_t n, float* dst) {
  const std::byte* src = rows.data + 2 * element;
  int64_t i = 0;
#if defined(__AVX512F__)
  for (; i + 16 <= n; i += 16) {
    const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 2 * i));
    const __m512i wide = _mm512_maskz_slli_epi32(kAllLanes, _mm512_maskz_cvtepu16_epi32(kAllLanes, bits), 16);
    _mm512_storeu_ps(dst + i, _mm512_castsi512_ps(wide));
  }
#elif defined(__AVX2__)
  for (; i + 8 <= n; i += 8) {
    const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * i));
    _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(bits), 16)));
  }
#endif
  for (; i < n; ++i) {
    uint16_t bits;
    std::memcpy(&bits, src + 2 * i, 2);
    const uint32_t wide = static_cast<uint32_t>(bits) << 16;
    std::memcpy(dst + i, &wide, 4);
  }
}

inline float half_to_float(uint16_t bits) {
#if defined(__F16C__)
  return _cvtsh_ss(bits);
#else
  return f16_to_f32(bits);
#endif
}

// q8_0: element and n are multiples of 32 (whole blocks of one head's row).
inline void decode_q8_0(KvRows rows, int64_t element, int64_t n, float* dst) {
  using quant::BlockQ8_0;
  constexpr int64_t kBlock = quant::kLegacyBlock;
  const std::byte* src = rows.data + element / kBlock * int64_t{sizeof(BlockQ8_0)};
  for (int64_t b = 0; b < n / kBlock; ++b, src += sizeof(BlockQ8_0), dst += kBlock) {
    uint16_t scale_bits;
    std::memcpy(&scale_bits, src + offsetof(BlockQ8_0, d), 2);
    const float scale = half_to_float(scale_bits);
    const std::byte* qs = src + offsetof(BlockQ8_0, qs);
#if defined(__AVX512F__)
    const __m512 d = _mm512_set1_ps(scale);
    for (int64_t h = 0; h < kBlock; h += 16) {
      const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs + h));
      const __m512 x = _mm512_maskz_cvtepi32_ps(kAllLanes, _mm512_maskz_cvtepi8_epi32(kAllLanes, q));
      _mm512_storeu_ps(dst + h, _mm512_mul_ps(x, d));
    }
#elif defined(__AVX2__)
    const __m256 d = _mm256_set1_ps(scale);
    for (int64_t h = 0; h < kBlock; h += 8) {
      const __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(qs + h));
      _mm256_storeu_ps(dst + h, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), d));
    }
#else
    for (int64_t j = 0; j < kBlock; ++j) dst[j] = static_cast<float>(static_cast<int8_t>(qs[j])) * scale;
#endif
  }
}

}  // namespace star::cpu::kv_rows
