// Register tiles of BF16 weight rows for AVX-512, up to 2 weight rows by 4 activation rows: against
// BF16 activations on CPUs without AVX512-BF16 (vdpbf16ps; dot_avx512.cpp has that kernel), and
// against float32 activations (the logits, whose activations stay float on every CPU). BF16
// activations are widened to float32 once per call, float32 ones copied into the same padded
// chunks; each weight element is widened in registers (a bf16 is the top half of a float32, so a
// zero-extension and a shift are exact) and multiplied-added with the activations in float32. Every
// output sums its products in 16 lanes, 16 elements at a time, then the lanes in one fixed order,
// whatever its tile.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "row_dots.h"
#include "row_tiles.h"
#include "weight_prefetch.h"
#include "zmm_tile_store.h"

// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*(), which -Wuninitialized reports.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#define STAR_AVX512 __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl")))
#define STAR_AVX512_INLINE __attribute__((always_inline, target("avx2,fma,f16c,avx512f,avx512bw,avx512vl"))) inline

namespace star::cpu::row_dots {
namespace {

constexpr int kTileRows = 2;  // two accumulators an output: 2 x 4 x 2 of the 32 zmm
constexpr int kTileCols = 4;

// 16 bf16 (those `mask` selects, the rest 0) as float32.
STAR_AVX512_INLINE __m512 widen(const uint16_t* p, __mmask16 mask) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mask, p)), 16));
}

// 16 widened activations; a row is padded with zeros to whole chunks.
struct alignas(64) FloatChunk {
  float v[16];
};

STAR_AVX512 void widen_row(const std::byte* x, int64_t k, FloatChunk* out) {
  const auto* row = reinterpret_cast<const uint16_t*>(x);
  for (int64_t j = 0; j < k; j += 16) {
    const __mmask16 mask = static_cast<__mmask16>(k - j >= 16 ? 0xffff : (1u << (k - j)) - 1);
    _mm512_store_ps(out[j / 16].v, widen(row + j, mask));
  }
}

STAR_AVX512 void copy_row(const std::byte* x, int64_t k, FloatChunk* out) {
  const auto* row = reinterpret_cast<const float*>(x);
  for (int64_t j = 0; j < k; j += 16) {
    const __mmask16 mask = static_cast<__mmask16>(k - j >= 16 ? 0xffff : (1u << (k - j)) - 1);
    _mm512_store_ps(out[j / 16].v, _mm512_maskz_loadu_ps(mask, row + j));
  }
}

// MR weight rows (w_row_bytes apart) by NR widened activation rows (x_row_bytes apart, whole
// FloatChunks). Two accumulators an output, for alternate 16-element chunks: decode is one row, and
// one chain of multiply-adds would wait on its own latency.
template <int MR, int NR>
STAR_AVX512 void tile(const std::byte* weights, size_t w_row_bytes, const std::byte* activations, size_t x_row_bytes,
                      int64_t k, float* y, int64_t ldy, bool accumulate) {
  const auto* w = reinterpret_cast<const uint16_t*>(weights);
  const size_t w_row_elements = w_row_bytes / sizeof(uint16_t);
  const auto* x = reinterpret_cast<const float*>(activations);
  const size_t padded = x_row_bytes / sizeof(float);
  __m512 even[MR][NR], odd[MR][NR];
  for (int r = 0; r < MR; ++r) {
    for (int i = 0; i < NR; ++i) even[r][i] = odd[r][i] = _mm512_setzero_ps();
  }
  int64_t j = 0;
  for (; j + 32 <= k; j += 32) {
    __m512 w0[MR], w1[MR];
    for (int r = 0; r < MR; ++r) {
      prefetch_weights(w + r * w_row_elements + j);
      w0[r] = widen(w + r * w_row_elements + j, 0xffff);
      w1[r] = widen(w + r * w_row_elements + j + 16, 0xffff);
    }
    for (int i = 0; i < NR; ++i) {
      const __m512 x0 = _mm512_load_ps(x + i * padded + j), x1 = _mm512_load_ps(x + i * padded + j + 16);
      for (int r = 0; r < MR; ++r) {
        even[r][i] = _mm512_fmadd_ps(w0[r], x0, even[r][i]);
        odd[r][i] = _mm512_fmadd_ps(w1[r], x1, odd[r][i]);
      }
    }
  }
  for (; j < k; j += 16) {
    const __mmask16 mask = static_cast<__mmask16>(k - j >= 16 ? 0xffff : (1u << (k - j)) - 1);
    __m512 wf[MR];
    for (int r = 0; r < MR; ++r) wf[r] = widen(w + r * w_row_elements + j, mask);
    for (int i = 0; i < NR; ++i) {
      const __m512 xf = _mm512_load_ps(x + i * padded + j);
      for (int r = 0; r < MR; ++r) even[r][i] = _mm512_fmadd_ps(wf[r], xf, even[r][i]);
    }
  }
  __m512 acc[MR][NR];
  for (int r = 0; r < MR; ++r) {
    for (int i = 0; i < NR; ++i) acc[r][i] = _mm512_add_ps(even[r][i], odd[r][i]);
  }
  store(acc, y, ldy, accumulate);
}

template <int MR, int NR>
struct BF16Tile {
  static constexpr TileFn fn = tile<MR, NR>;
};

// The tiles over activation rows that `prepare` turns into float chunks (widened or copied).
template <void (*prepare)(const std::byte*, int64_t, FloatChunk*)>
void run_float_chunk_tiles(const std::byte* w, size_t w_row_bytes, int64_t m, const std::byte* x, size_t x_row_bytes,
                           int64_t n, int64_t k, float* y, int64_t ldy, bool accumulate) {
  thread_local std::vector<FloatChunk> chunks;  // per OpenMP worker and instantiation, reused across calls
  run_prepared_tiles<kTileRows, kTileCols, BF16Tile>(chunks, prepare, (k + 15) / 16, w, w_row_bytes, m, x, x_row_bytes, n,
                                                 k, y, ldy, accumulate);
}

}  // namespace

void bf16_bf16_tile_avx512(const std::byte* w, size_t w_row_bytes, int64_t m, const std::byte* x, size_t x_row_bytes,
                           int64_t n, int64_t k, float* y, int64_t ldy, bool accumulate) {
  run_float_chunk_tiles<widen_row>(w, w_row_bytes, m, x, x_row_bytes, n, k, y, ldy, accumulate);
}

float bf16_bf16_widen_avx512(const std::byte* w, const std::byte* x, int64_t k) {
  return one_row_dot<bf16_bf16_tile_avx512>(w, x, k);
}

void bf16_f32_tile_avx512(const std::byte* w, size_t w_row_bytes, int64_t m, const std::byte* x, size_t x_row_bytes,
                          int64_t n, int64_t k, float* y, int64_t ldy, bool accumulate) {
  run_float_chunk_tiles<copy_row>(w, w_row_bytes, m, x, x_row_bytes, n, k, y, ldy, accumulate);
}

float bf16_f32_tile_dot_avx512(const std::byte* w, const std::byte* x, int64_t k) {
  return one_row_dot<bf16_f32_tile_avx512>(w, x, k);
}

}  // namespace star::cpu::row_dots
