// Register tiles of BF16 weight rows against BF16 activations for AVX-512 CPUs without
// AVX512-BF16 (vdpbf16ps; dot_avx512.cpp has that kernel): up to 2 weight rows by 4 activation
// rows. The activations, already rounded to bf16, are widened to float32 once per call; each
// weight element is widened in registers (a bf16 is the top half of a float32, so a zero-extension
// and a shift are exact) and multiplied-added with the activations in float32. Every output sums
// its products in 16 lanes, 16 elements at a time, then the lanes in one fixed order, whatever
// its tile.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "row_dots.h"
#include "row_tiles.h"
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

// Activation rows widened to float32, each padded with zeros to a multiple of 16 elements.
STAR_AVX512 void widen_rows(const std::byte* x, size_t x_row_bytes, int64_t n, int64_t k, int64_t padded, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    const auto* row = reinterpret_cast<const uint16_t*>(x + i * x_row_bytes);
    for (int64_t j = 0; j < padded; j += 16) {
      const __mmask16 mask = static_cast<__mmask16>(k - j >= 16 ? 0xffff : (1u << (k - j)) - 1);
      _mm512_store_ps(out + i * padded + j, widen(row + j, mask));
    }
  }
}

// MR weight rows (w_row_elements apart) by NR widened activation rows (`padded` floats apart). Two
// accumulators an output, for alternate 16-element chunks: decode is one row, and one chain of
// multiply-adds would wait on its own latency.
template <int MR, int NR>
STAR_AVX512 void tile(const uint16_t* w, size_t w_row_elements, const float* x, int64_t padded, int64_t k, float* y,
                      int64_t ldy, bool accumulate) {
  __m512 even[MR][NR], odd[MR][NR];
  for (int r = 0; r < MR; ++r) {
    for (int i = 0; i < NR; ++i) even[r][i] = odd[r][i] = _mm512_setzero_ps();
  }
  int64_t j = 0;
  for (; j + 32 <= k; j += 32) {
    __m512 w0[MR], w1[MR];
    for (int r = 0; r < MR; ++r) {
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

using BF16TileFn = void (*)(const uint16_t*, size_t, const float*, int64_t, int64_t, float*, int64_t, bool);

template <size_t... I>
constexpr std::array<BF16TileFn, sizeof...(I)> tile_table(std::index_sequence<I...>) {
  return {tile<static_cast<int>(I) / kTileCols + 1, static_cast<int>(I) % kTileCols + 1>...};
}

}  // namespace

void bf16_bf16_tile_avx512(const std::byte* w, size_t w_row_bytes, int64_t m, const std::byte* x, size_t x_row_bytes,
                           int64_t n, int64_t k, float* y, int64_t ldy, bool accumulate) {
  const int64_t padded = (k + 15) / 16 * 16;
  // Per thread and reused: the OpenMP workers call this for every chunk of weight rows.
  thread_local std::vector<float> widened;
  widened.resize(static_cast<size_t>(n * padded + 16));
  // 64-byte aligned rows: padded is a multiple of 16 floats.
  float* const rows = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(widened.data()) + 63) & ~uintptr_t{63});
  widen_rows(x, x_row_bytes, n, k, padded, rows);
  static constexpr auto kTiles = tile_table(std::make_index_sequence<kTileRows * kTileCols>());
  const auto* weights = reinterpret_cast<const uint16_t*>(w);
  const size_t row_elements = w_row_bytes / sizeof(uint16_t);
  // As run_tiles (row_tiles.h): one weight row at a time for a single activation row.
  const int64_t row_step = n == 1 ? 1 : kTileRows;
  for (int64_t r = 0; r < m; r += row_step) {
    const int64_t rows_here = std::min<int64_t>(row_step, m - r);
    for (int64_t i = 0; i < n; i += kTileCols) {
      const int64_t cols = std::min<int64_t>(kTileCols, n - i);
      kTiles[static_cast<size_t>((rows_here - 1) * kTileCols + cols - 1)](
          weights + r * row_elements, row_elements, rows + i * padded, padded, k, y + i * ldy + r, ldy, accumulate);
    }
  }
}

float bf16_bf16_widen_avx512(const std::byte* w, const std::byte* x, int64_t k) {
  return one_row_dot<bf16_bf16_tile_avx512>(w, x, k);
}

}  // namespace star::cpu::row_dots
