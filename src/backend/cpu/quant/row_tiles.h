// The driver shared by the register tiles (tile_avx2.cpp and the *_avx512.cpp ones): m weight rows by n
// activation rows as whole MaxRows x MaxCols tiles plus the smaller edge tiles, each a separate
// instantiation of the same code, so an output's arithmetic does not depend on its tile.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "star/backend/cpu/dot_kernels.h"

namespace star::cpu::row_dots {

// MR weight rows (w_row_bytes apart) by NR activation rows of k elements into y[i·ldy + r].
using TileFn = void (*)(const std::byte* w, size_t w_row_bytes, const std::byte* x, size_t x_row_bytes, int64_t k,
                        float* y, int64_t ldy, bool accumulate);

// Tile<MR, NR>::fn for 1 <= MR <= MaxRows, 1 <= NR <= MaxCols.
//
// Every Tile template needs a name no other file's tile has, even inside an anonymous namespace:
// GCC emits run_tiles<MaxRows, MaxCols, Tile> out of line as a weak symbol named after those
// arguments, and the linker keeps one copy per name, so two files' `Tile<..>` with the same
// MaxRows and MaxCols would both run one file's kernels (Q4_K's and Q6_K's did, once this function
// grew too big to inline).
template <int MaxRows, int MaxCols, template <int, int> class Tile>
void run_tiles(const std::byte* w, size_t w_row_bytes, int64_t m, const std::byte* x, size_t x_row_bytes, int64_t n,
               int64_t k, float* y, int64_t ldy, bool accumulate) {
  // Not static: GCC emits a static local of a template function as a process-wide unique symbol
  // named after its arguments, and the tile types of different files, each in its file's
  // anonymous namespace, can share a name; the linker then gives every file the first file's table.
  constexpr auto kTiles = []<size_t... I>(std::index_sequence<I...>) {
    return std::array<TileFn, sizeof...(I)>{Tile<static_cast<int>(I) / MaxCols + 1, static_cast<int>(I) % MaxCols + 1>::fn...};
  }(std::make_index_sequence<MaxRows * MaxCols>());
  // A single activation row has nothing to share across weight rows: one weight row at a time
  // keeps the weight one sequential stream (two interleaved rows read a 25 MB output projection
  // 10-40% slower on AVX2).
  const int64_t row_step = n == 1 ? 1 : MaxRows;
  // Past one column of tiles, a weight tile is read from memory by its first tile only; the next
  // tile's lines are prefetched a share per later tile, so the memory works while they compute.
  const int64_t col_tiles = (n + MaxCols - 1) / MaxCols;
  const auto tile_bytes = static_cast<int64_t>(static_cast<size_t>(row_step) * w_row_bytes);
  const int64_t lines_per_tile = col_tiles > 1 ? (tile_bytes / 64 + col_tiles - 2) / (col_tiles - 1) : 0;
  for (int64_t r = 0; r < m; r += row_step) {
    const int64_t rows = std::min<int64_t>(row_step, m - r);
    const std::byte* next = w + (r + row_step) * w_row_bytes;
    const std::byte* next_end = w + std::min<int64_t>(m, r + 2 * row_step) * w_row_bytes;
    for (int64_t i = 0; i < n; i += MaxCols) {
      const int64_t cols = std::min<int64_t>(MaxCols, n - i);
      if (i > 0) {
        const std::byte* from = next + (i / MaxCols - 1) * lines_per_tile * 64;
        for (int64_t line = 0; line < lines_per_tile && from + line * 64 < next_end; ++line) {
          __builtin_prefetch(from + line * 64);
        }
      }
      kTiles[static_cast<size_t>((rows - 1) * MaxCols + cols - 1)](w + r * w_row_bytes, w_row_bytes, x + i * x_row_bytes,
                                                                   x_row_bytes, k, y + i * ldy + r, ldy, accumulate);
    }
  }
}

// run_tiles over activation rows re-laid once per call: `prepare` turns one activation row into
// `units` Prepared values (prepare's own unit: a block pair, a super-block), in `scratch`, which
// the caller keeps per thread (thread_local in a plain function: a static of this template would be
// one object for every file whose Prepared type has the same name, see above).
template <int MaxRows, int MaxCols, template <int, int> class Tile, class Prepared>
void run_prepared_tiles(std::vector<Prepared>& scratch, void (*prepare)(const std::byte* x, int64_t k, Prepared* out),
                        int64_t units, const std::byte* w, size_t w_row_bytes, int64_t m, const std::byte* x,
                        size_t x_row_bytes, int64_t n, int64_t k, float* y, int64_t ldy, bool accumulate) {
  scratch.resize(static_cast<size_t>(n * units));
  for (int64_t i = 0; i < n; ++i) prepare(x + i * x_row_bytes, k, scratch.data() + i * units);
  run_tiles<MaxRows, MaxCols, Tile>(w, w_row_bytes, m, reinterpret_cast<const std::byte*>(scratch.data()),
                                    static_cast<size_t>(units) * sizeof(Prepared), n, k, y, ldy, accumulate);
}

// The one-row dot of a kernel whose RowTile is `tile`: its 1x1 case.
template <RowTile tile>
float one_row_dot(const std::byte* w, const std::byte* x, int64_t k) {
  float y;
  tile(w, 0, 1, x, 0, 1, k, &y, 0, false);
  return y;
}

}  // namespace star::cpu::row_dots
