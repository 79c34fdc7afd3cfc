// The driver shared by the register tiles (tile_avx2.cpp, tile_avx512.cpp): m weight rows by n
// activation rows as whole MaxRows x MaxCols tiles plus the smaller edge tiles, each a separate
// instantiation of the same code, so an output's arithmetic does not depend on its tile.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "star/quant/blocks.h"

namespace star::cpu::row_dots {

// MR weight rows (w_row_bytes apart) by NR activation rows over `blocks` 32-element blocks into
// y[i·ldy + r].
using TileFn = void (*)(const std::byte* w, size_t w_row_bytes, const std::byte* x, size_t x_row_bytes,
                        int64_t blocks, float* y, int64_t ldy, bool accumulate);

// Tile<MR, NR>::fn for 1 <= MR <= MaxRows, 1 <= NR <= MaxCols.
template <int MaxRows, int MaxCols, template <int, int> class Tile>
void run_tiles(const std::byte* w, size_t w_row_bytes, int64_t m, const std::byte* x, size_t x_row_bytes, int64_t n,
               int64_t k, float* y, int64_t ldy, bool accumulate) {
  // Not static: GCC emits a static local of a template function as a process-wide unique symbol
  // named after its arguments, and the tile types of different files, each in its file's
  // anonymous namespace, can share a name; the linker then gives every file the first file's table.
  constexpr auto kTiles = []<size_t... I>(std::index_sequence<I...>) {
    return std::array<TileFn, sizeof...(I)>{Tile<static_cast<int>(I) / MaxCols + 1, static_cast<int>(I) % MaxCols + 1>::fn...};
  }(std::make_index_sequence<MaxRows * MaxCols>());
  const int64_t blocks = k / quant::kLegacyBlock;
  // A single activation row has nothing to share across weight rows: one weight row at a time
  // keeps the weight one sequential stream (two interleaved rows read a 25 MB output projection
  // 10-40% slower on AVX2).
  const int64_t row_step = n == 1 ? 1 : MaxRows;
  for (int64_t r = 0; r < m; r += row_step) {
    const int64_t rows = std::min<int64_t>(row_step, m - r);
    for (int64_t i = 0; i < n; i += MaxCols) {
      const int64_t cols = std::min<int64_t>(MaxCols, n - i);
      kTiles[static_cast<size_t>((rows - 1) * MaxCols + cols - 1)](w + r * w_row_bytes, w_row_bytes, x + i * x_row_bytes,
                                                                   x_row_bytes, blocks, y + i * ldy + r, ldy, accumulate);
    }
  }
}

}  // namespace star::cpu::row_dots
