// transpose_keys: a decoded key tile turned on its side for the row blocks' scores.
#include <cstdint>

#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

#include "attention_blocks.h"
#include "kv_rows.h"

namespace star::cpu::attention_blocks {
namespace {

#if defined(__AVX512F__)
static_assert(kWideLanes == 16);
using kv_rows::kAllLanes;  // the maskz forms, as kv_rows.h explains

// dst row j (ldd apart) = column j of the 16 x 16 block at src (rows lds apart): pairs interleaved,
// then quads, then 128-bit lanes twice.
void transpose_block(const float* src, int64_t lds, float* dst, int64_t ldd) {
  __m512 r[16], t[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(src + i * lds);
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_maskz_unpacklo_ps(kAllLanes, r[i], r[i + 1]);
    t[i + 1] = _mm512_maskz_unpackhi_ps(kAllLanes, r[i], r[i + 1]);
  }
  // r[4g + m], 128-bit lane L: column 4L + m of rows 4g .. 4g + 3.
  for (int g = 0; g < 16; g += 4) {
    r[g] = _mm512_maskz_shuffle_ps(kAllLanes, t[g], t[g + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[g + 1] = _mm512_maskz_shuffle_ps(kAllLanes, t[g], t[g + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[g + 2] = _mm512_maskz_shuffle_ps(kAllLanes, t[g + 1], t[g + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[g + 3] = _mm512_maskz_shuffle_ps(kAllLanes, t[g + 1], t[g + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  // t[m] and t[m + 4] (m < 4): columns m, m + 8 and m + 4, m + 12 of rows 0-7; t[8 + ...] of rows 8-15.
  for (int h = 0; h < 16; h += 8) {
    for (int m = 0; m < 4; ++m) {
      t[h + m] = _mm512_maskz_shuffle_f32x4(kAllLanes, r[h + m], r[h + m + 4], 0x88);
      t[h + m + 4] = _mm512_maskz_shuffle_f32x4(kAllLanes, r[h + m], r[h + m + 4], 0xdd);
    }
  }
  for (int j = 0; j < 8; ++j) {
    _mm512_storeu_ps(dst + j * ldd, _mm512_maskz_shuffle_f32x4(kAllLanes, t[j], t[j + 8], 0x88));
    _mm512_storeu_ps(dst + (j + 8) * ldd, _mm512_maskz_shuffle_f32x4(kAllLanes, t[j], t[j + 8], 0xdd));
  }
}
#elif defined(__AVX2__)
static_assert(kWideLanes == 8);

// dst row j (ldd apart) = column j of the 8 x 8 block at src (rows lds apart): pairs interleaved,
// then quads, then the 128-bit halves.
void transpose_block(const float* src, int64_t lds, float* dst, int64_t ldd) {
  __m256 r[8], t[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + i * lds);
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  // r[4g + m], 128-bit half H: column 4H + m of rows 4g .. 4g + 3.
  for (int g = 0; g < 8; g += 4) {
    r[g] = _mm256_shuffle_ps(t[g], t[g + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[g + 1] = _mm256_shuffle_ps(t[g], t[g + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[g + 2] = _mm256_shuffle_ps(t[g + 1], t[g + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[g + 3] = _mm256_shuffle_ps(t[g + 1], t[g + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int m = 0; m < 4; ++m) {
    _mm256_storeu_ps(dst + m * ldd, _mm256_permute2f128_ps(r[m], r[m + 4], 0x20));
    _mm256_storeu_ps(dst + (m + 4) * ldd, _mm256_permute2f128_ps(r[m], r[m + 4], 0x31));
  }
}
#else
void transpose_block(const float* src, int64_t lds, float* dst, int64_t ldd) {
  for (int i = 0; i < kWideLanes; ++i) {
    for (int j = 0; j < kWideLanes; ++j) dst[j * ldd + i] = src[i * lds + j];
  }
}
#endif

}  // namespace

void transpose_keys(const float* k, int64_t ldk, int64_t n, int64_t d, float* kt, int64_t ldt) {
  for (int64_t c = 0; c < n; c += kWideLanes) {
    for (int64_t p = 0; p < d; p += kWideLanes) transpose_block(k + c * ldk + p, ldk, kt + p * ldt + c, ldt);
  }
}

#if defined(__AVX512BF16__)
// The shuffles move 32-bit lanes whole, so bf16 pairs pass through them as they are.
void transpose_keys(const uint32_t* k, int64_t ldk, int64_t n, int64_t d, uint32_t* kt, int64_t ldt) {
  transpose_keys(reinterpret_cast<const float*>(k), ldk, n, d, reinterpret_cast<float*>(kt), ldt);
}
#endif

}  // namespace star::cpu::attention_blocks
