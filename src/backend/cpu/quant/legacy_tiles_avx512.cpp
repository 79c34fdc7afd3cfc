// Register tiles of Q4_0 and Q8_0 weight rows against Q8_0 activations for CPUs with AVX-512
// VNNI, up to 4 weight rows by 4 activation rows. Decode reads every weight byte once per token,
// so the instructions per weight block set its speed; everything that depends only on the
// activations is done once per call, for all weight rows, in a re-laid copy of them
// (prepared_pairs_avx512.h):
//
// - The weight codes go into vpdpbusd unsigned: Q4_0's nibbles as stored (code + 8), Q8_0's codes
//   with the sign bit flipped (code + 128). The offset's share is an activation-only term,
//   −offset·Σq per int32 lane, which starts the sum: the lane sums are exactly Σ code·q.
// - The activation scales are widened from f16 once, in the lanes of their block.
//
// Per pair of weight blocks that leaves loading the codes (Q4_0: two broadcast loads, a shift and
// a mask; Q8_0: two loads and a sign flip), a shuffle and a widening for the two f16 scales, and per
// activation row one vpdpbusd and d_w·d_x·Σ in float. Each block's integer sum and its float
// scaling are those of the scalar reference; only the order of the float additions differs.
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <vector>

#include "prepared_pairs_avx512.h"
#include "row_dots.h"
#include "row_tiles.h"
#include "star/quant/blocks.h"
#include "weight_prefetch.h"
#include "zmm_tile_store.h"

namespace star::cpu::row_dots {
namespace {

using quant::BlockQ4_0;
using quant::BlockQ8_0;
using quant::kLegacyBlock;

constexpr int kTileRows = 4;
constexpr int kTileCols = 4;

struct Q4_0Codes {
  using Block = BlockQ4_0;
  static constexpr int kOffset = 8;

  template <bool Pair>
  STAR_AVX512_INLINE static __m512i codes(const BlockQ4_0* b) {
    return nibble_pair<Pair>(b);
  }
  template <bool Pair>
  STAR_AVX512_INLINE static __m512 scales(const BlockQ4_0* b) {
    return f16_pair<Pair, BlockQ4_0, offsetof(BlockQ4_0, d)>(b);
  }
};

struct Q8_0Codes {
  using Block = BlockQ8_0;
  static constexpr int kOffset = 128;

  // Without a second block its codes read 128 after the flip, times the zero activations its
  // offsets were made from.
  template <bool Pair>
  STAR_AVX512_INLINE static __m512i codes(const BlockQ8_0* b) {
    return _mm512_xor_si512(q8_0_pair<Pair>(b), _mm512_set1_epi8(static_cast<char>(0x80)));
  }
  template <bool Pair>
  STAR_AVX512_INLINE static __m512 scales(const BlockQ8_0* b) {
    return f16_pair<Pair, BlockQ8_0, offsetof(BlockQ8_0, d)>(b);
  }
};

template <class Codes, int MR, int NR, bool Pair>
STAR_AVX512_INLINE void step(const typename Codes::Block* w, size_t w_row_blocks, const Int8Pair* x,
                             size_t x_row_pairs, __m512 (&acc)[MR][NR]) {
  __m512i wq[MR];
  __m512 dw[MR];
  for (int r = 0; r < MR; ++r) {
    wq[r] = Codes::template codes<Pair>(w + r * w_row_blocks);
    dw[r] = Codes::template scales<Pair>(w + r * w_row_blocks);
  }
  for (int i = 0; i < NR; ++i) {
    const Int8Pair& a = x[i * x_row_pairs];
    const __m512i offsets = _mm512_load_si512(a.offsets);
    const __m512i codes = _mm512_load_si512(a.codes);
    const __m512 dx = _mm512_load_ps(a.d);
    for (int r = 0; r < MR; ++r) {
      const __m512i sums = _mm512_dpbusd_epi32(offsets, wq[r], codes);
      acc[r][i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums), _mm512_mul_ps(dw[r], dx), acc[r][i]);
    }
  }
}

// MR weight rows by NR prepared activation rows (x_row_bytes apart, whole Int8Pairs).
template <class Codes, int MR, int NR>
STAR_AVX512 void tile(const std::byte* w, size_t w_row_bytes, const std::byte* x, size_t x_row_bytes, int64_t k,
                      float* y, int64_t ldy, bool accumulate) {
  const int64_t blocks = k / quant::kLegacyBlock;
  using Block = typename Codes::Block;
  // Whole rows of blocks (quantized rows are; blocks are 2-byte aligned in the file).
  const auto* blocks_of = reinterpret_cast<const Block*>(w);
  const size_t row_blocks = w_row_bytes / sizeof(Block);
  const auto* prepared = reinterpret_cast<const Int8Pair*>(x);
  const size_t row_pairs = x_row_bytes / sizeof(Int8Pair);
  __m512 acc[MR][NR];
  for (auto& row : acc) std::fill(std::begin(row), std::end(row), _mm512_setzero_ps());
  int64_t b = 0;
  for (; b + 2 <= blocks; b += 2, blocks_of += 2, ++prepared) {
    for (int r = 0; r < MR; ++r) prefetch_weights(blocks_of + r * row_blocks);
    step<Codes, MR, NR, true>(blocks_of, row_blocks, prepared, row_pairs, acc);
  }
  if (b < blocks) step<Codes, MR, NR, false>(blocks_of, row_blocks, prepared, row_pairs, acc);
  store(acc, y, ldy, accumulate);
}

// Distinct names per weight type: see row_tiles.h on tile tables and anonymous namespaces.
template <int MR, int NR>
struct Q4_0Tile {
  static constexpr TileFn fn = tile<Q4_0Codes, MR, NR>;
};
template <int MR, int NR>
struct Q8_0Tile {
  static constexpr TileFn fn = tile<Q8_0Codes, MR, NR>;
};

template <class Codes, template <int, int> class Tile>
void run(const std::byte* w, size_t w_row_bytes, int64_t m, const std::byte* x, size_t x_row_bytes, int64_t n, int64_t k,
         float* y, int64_t ldy, bool accumulate) {
  thread_local std::vector<Int8Pair> prepared;  // per OpenMP worker, reused across calls
  run_prepared_tiles<kTileRows, kTileCols, Tile>(prepared, prepare_int8_pairs<Codes::kOffset>, (k / kLegacyBlock + 1) / 2, w,
                                                 w_row_bytes, m, x, x_row_bytes, n, k, y, ldy, accumulate);
}

}  // namespace

void q4_0_q8_0_tile_avx512(const std::byte* w, size_t w_row_bytes, int64_t m, const std::byte* x, size_t x_row_bytes,
                           int64_t n, int64_t k, float* y, int64_t ldy, bool accumulate) {
  run<Q4_0Codes, Q4_0Tile>(w, w_row_bytes, m, x, x_row_bytes, n, k, y, ldy, accumulate);
}

void q8_0_q8_0_tile_avx512(const std::byte* w, size_t w_row_bytes, int64_t m, const std::byte* x, size_t x_row_bytes,
                           int64_t n, int64_t k, float* y, int64_t ldy, bool accumulate) {
  run<Q8_0Codes, Q8_0Tile>(w, w_row_bytes, m, x, x_row_bytes, n, k, y, ldy, accumulate);
}

float q4_0_q8_0_avx512(const std::byte* w, const std::byte* x, int64_t k) {
  return one_row_dot<q4_0_q8_0_tile_avx512>(w, x, k);
}

float q8_0_q8_0_avx512(const std::byte* w, const std::byte* x, int64_t k) {
  return one_row_dot<q8_0_q8_0_tile_avx512>(w, x, k);
}

}  // namespace star::cpu::row_dots
