// The AVX-512 VNNI half of the int8 panels (int8_panels.h): activations re-laid once per call,
// panels of 16 weight rows packed per thread, and the register tile that multiplies them.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "avx512_target.h"
#include "int8_panels.h"
#include "q16_block.h"
#include "weight_prefetch.h"
#include "star/model/weight_tensor.h"
#include "star/quant/blocks.h"

namespace star::cpu {
namespace {

using quant::BlockQ8_0;
using quant::kLegacyBlock;

constexpr int kLanes = 16;      // weight rows in a panel, one per int32 lane
static_assert(kLanes == kPanelRows, "weight_rows keeps the panels of views that start at a panel");
constexpr int kMaxPanels = 2;   // panels in a register tile: 32 weight rows
constexpr int kMaxXRows = 6;    // activation rows in a register tile
// 2·6 int32 sums, 2·6 float sums and the two panels' codes and scales: 28 of the 32 registers.

// The activation rows as the tiles read them. Per row: its codes, the f16 scale d of each block
// widened once, and what the weight's offset or min contributes through Σq: −offset·Σq per
// sub-block (the start of that sub-block's int32 sums, so they come out as Σ (code − offset)·q),
// or d·Σq per block (the min's factor).
struct Activations {
  std::vector<int8_t> codes;          // [n][k]
  std::vector<float> d;               // [n][k / 32]
  std::vector<int32_t> offset_sums;   // [n][k / sub_block], offset formats
  std::vector<float> d_sums;          // [n][k / 32], min formats
};

void size_activations(const PanelRowFormat& format, int64_t n, int64_t k, Activations& a) {
  const int64_t blocks = k / kLegacyBlock, subs = k / format.sub_block;
  a.codes.resize(static_cast<size_t>(n * k));
  a.d.resize(static_cast<size_t>(n * blocks));
  a.offset_sums.resize(format.offset != 0 ? static_cast<size_t>(n * subs) : 0);
  a.d_sums.resize(format.has_min ? static_cast<size_t>(n * blocks) : 0);
}

// Activation row i from its Q8_0 blocks (k / 32 of them).
void relay_row(const PanelRowFormat& format, const BlockQ8_0* row, int64_t i, int64_t k, Activations& a) {
  const int64_t blocks = k / kLegacyBlock, subs = k / format.sub_block;
  const int subs_per_block = static_cast<int>(kLegacyBlock) / format.sub_block;
  for (int64_t b = 0; b < blocks; ++b) {
    const BlockQ8_0& block = row[b];
    const float d = f16_to_f32(block.d);
    std::memcpy(a.codes.data() + i * k + b * kLegacyBlock, block.qs, kLegacyBlock);
    a.d[static_cast<size_t>(i * blocks + b)] = d;
    int32_t total = 0;
    for (int s = 0; s < subs_per_block; ++s) {
      int32_t sum = 0;
      for (int j = 0; j < format.sub_block; ++j) sum += block.qs[s * format.sub_block + j];
      total += sum;
      if (format.offset != 0) a.offset_sums[static_cast<size_t>(i * subs + b * subs_per_block + s)] = -format.offset * sum;
    }
    if (format.has_min) a.d_sums[static_cast<size_t>(i * blocks + b)] = d * static_cast<float>(total);
  }
}

void relay_activations(const PanelRowFormat& format, const float* x, int64_t n, int64_t k, Activations& a) {
  size_activations(format, n, k, a);
#pragma omp parallel
  {
    std::vector<BlockQ8_0> row(static_cast<size_t>(k / kLegacyBlock));
#pragma omp for schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      quantize_activation_row(ActivationType::kQ8_0, x + i * k, k, reinterpret_cast<std::byte*>(row.data()));
      relay_row(format, row.data(), i, k, a);
    }
  }
}

// relay_activations of rows already rounded: x [n][k / 32].
void relay_blocks(const PanelRowFormat& format, const BlockQ8_0* x, int64_t n, int64_t k, Activations& a) {
  size_activations(format, n, k, a);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) relay_row(format, x + i * (k / kLegacyBlock), i, k, a);
}

// 16 weight rows: codes [k / 4][16 lanes][4], scales [k / sub_block][16], mins [k / 32][16].
struct Panel {
  const uint8_t* codes;
  const float* scales;
  const float* mins;
};

// Per thread: the unpacked rows of a panel (row-major) and kMaxPanels packed panels.
struct PanelScratch {
  std::vector<uint8_t> row_codes;
  std::vector<float> row_scales, row_mins;
  std::vector<uint8_t> codes;
  std::vector<float> scales, mins;
};

void size_scratch(const PanelRowFormat& format, int64_t k, PanelScratch& s) {
  const int64_t subs = k / format.sub_block, blocks = k / kLegacyBlock;
  s.row_codes.resize(static_cast<size_t>(kLanes * k));
  s.row_scales.resize(static_cast<size_t>(kLanes * subs));
  s.row_mins.resize(static_cast<size_t>(kLanes * blocks));
  s.codes.resize(static_cast<size_t>(kMaxPanels * kLanes * k));
  s.scales.resize(static_cast<size_t>(kMaxPanels * kLanes * subs));
  s.mins.resize(static_cast<size_t>(kMaxPanels * kLanes * blocks));
}

// Σ_j |element j| of an unpacked row (PanelRowFormat), summed in double and rounded up, so that
// it bounds the elements' sum.
float weight_row_l1(const PanelRowFormat& format, int64_t k, const uint8_t* codes, const float* scales,
                    const float* mins) {
  double sum = 0;
  for (int64_t j = 0; j < k; ++j) {
    const double scale = scales[j / format.sub_block];
    const double min = format.has_min ? mins[j / kLegacyBlock] : 0.0;
    sum += std::abs(scale * (static_cast<int>(codes[j]) - format.offset) - min);
  }
  return std::nextafter(static_cast<float>(sum), std::numeric_limits<float>::infinity());
}

// A panel from `rows` <= 16 weight rows into codes, scales and mins (sized for one panel; mins
// only written, and may be null, where the format has none), through the scratch's row buffers
// (sized by size_scratch).
STAR_AVX512 Panel pack_panel_into(const PanelRowFormat& format, const std::byte* w, size_t w_row_bytes, int64_t rows,
                                  int64_t k, PanelScratch& s, uint8_t* codes, float* scales, float* mins,
                                  float* row_l1 = nullptr) {
  const int64_t subs = k / format.sub_block, blocks = k / kLegacyBlock;
  for (int64_t r = 0; r < kLanes; ++r) {
    uint8_t* row_codes = s.row_codes.data() + r * k;
    float* row_scales = s.row_scales.data() + r * subs;
    float* row_mins = s.row_mins.data() + r * blocks;
    if (r < rows) {
      format.unpack(w + r * w_row_bytes, k, row_codes, row_scales, row_mins);
      if (row_l1 != nullptr) row_l1[r] = weight_row_l1(format, k, row_codes, row_scales, row_mins);
    } else {  // zero scales (and mins) make the lanes past the last row sum to 0
      std::fill(row_codes, row_codes + k, uint8_t{0});
      std::fill(row_scales, row_scales + subs, 0.f);
      std::fill(row_mins, row_mins + blocks, 0.f);
    }
  }
  const __m512i row_starts = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                                _mm512_set1_epi32(static_cast<int>(k / 4)));
  for (int64_t g = 0; g < k / 4; ++g) {
    _mm512_storeu_si512(codes + g * 64, _mm512_i32gather_epi32(row_starts, s.row_codes.data() + 4 * g, 4));
  }
  for (int64_t j = 0; j < subs; ++j) {
    for (int r = 0; r < kLanes; ++r) scales[j * kLanes + r] = s.row_scales[static_cast<size_t>(r * subs + j)];
  }
  if (format.has_min) {
    for (int64_t j = 0; j < blocks; ++j) {
      for (int r = 0; r < kLanes; ++r) mins[j * kLanes + r] = s.row_mins[static_cast<size_t>(r * blocks + j)];
    }
  }
  return {codes, scales, mins};
}

// Panel `index` of the scratch (sized by size_scratch) from `rows` <= 16 weight rows.
Panel pack_panel(const PanelRowFormat& format, const std::byte* w, size_t w_row_bytes, int64_t rows, int64_t k,
                 PanelScratch& s, int index) {
  const int64_t subs = k / format.sub_block, blocks = k / kLegacyBlock;
  return pack_panel_into(format, w, w_row_bytes, rows, k, s, s.codes.data() + index * kLanes * k,
                         s.scales.data() + index * kLanes * subs, s.mins.data() + index * kLanes * blocks);
}

STAR_AVX512_INLINE __m512i broadcast_dword(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof(v));
  return _mm512_set1_epi32(v);
}

// R activation rows from x_row by P panels (the last one's lanes up to `last_lanes` stored).
template <int S, bool kOffset, bool kMin, int R, int P>
STAR_AVX512 void panel_tile(const Panel* panels, const Activations& a, int64_t x_row, int64_t k, float* y,
                            int64_t ldy, bool accumulate, __mmask16 last_lanes) {
  constexpr int kGroups = S / 4;
  const int64_t subs = k / S, blocks = k / kLegacyBlock;
  __m512 acc[R][P];
  for (int r = 0; r < R; ++r) {
    for (int p = 0; p < P; ++p) acc[r][p] = _mm512_setzero_ps();
  }
  const int8_t* xs[R];
  for (int r = 0; r < R; ++r) xs[r] = a.codes.data() + (x_row + r) * k;
  for (int64_t sub = 0; sub < subs; ++sub) {
    __m512i sum[R][P];
    for (int r = 0; r < R; ++r) {
      const __m512i start =
          kOffset ? _mm512_set1_epi32(a.offset_sums[static_cast<size_t>((x_row + r) * subs + sub)]) : _mm512_setzero_si512();
      for (int p = 0; p < P; ++p) sum[r][p] = start;
    }
#pragma GCC unroll 8
    for (int g = 0; g < kGroups; ++g) {
      __m512i w[P];
      for (int p = 0; p < P; ++p) w[p] = _mm512_loadu_si512(panels[p].codes + (sub * kGroups + g) * 64);
      for (int r = 0; r < R; ++r) {
        const __m512i q = broadcast_dword(xs[r] + sub * S + 4 * g);
        for (int p = 0; p < P; ++p) sum[r][p] = _mm512_dpbusd_epi32(sum[r][p], w[p], q);
      }
    }
    const int64_t block = sub * S / kLegacyBlock;
    __m512 scale[P];
    for (int p = 0; p < P; ++p) scale[p] = _mm512_loadu_ps(panels[p].scales + sub * kLanes);
    for (int r = 0; r < R; ++r) {
      const __m512 d = _mm512_set1_ps(a.d[static_cast<size_t>((x_row + r) * blocks + block)]);
      for (int p = 0; p < P; ++p) {
        acc[r][p] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum[r][p]), _mm512_mul_ps(scale[p], d), acc[r][p]);
      }
    }
    if constexpr (kMin) {
      __m512 min[P];
      for (int p = 0; p < P; ++p) min[p] = _mm512_loadu_ps(panels[p].mins + block * kLanes);
      for (int r = 0; r < R; ++r) {
        const __m512 d_sum = _mm512_set1_ps(a.d_sums[static_cast<size_t>((x_row + r) * blocks + block)]);
        for (int p = 0; p < P; ++p) acc[r][p] = _mm512_fnmadd_ps(min[p], d_sum, acc[r][p]);
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int p = 0; p < P; ++p) {
      float* out = y + (x_row + r) * ldy + p * kLanes;
      const __mmask16 lanes = p == P - 1 ? last_lanes : __mmask16{0xFFFF};
      __m512 v = acc[r][p];
      if (accumulate) v = _mm512_add_ps(_mm512_maskz_loadu_ps(lanes, out), v);
      _mm512_mask_storeu_ps(out, lanes, v);
    }
  }
}

using TileFn = void (*)(const Panel*, const Activations&, int64_t, int64_t, float*, int64_t, bool, __mmask16);

// panel_tile for P = 1..kMaxPanels by R = 1..kMaxXRows, index (P − 1)·kMaxXRows + R − 1.
template <int S, bool kOffset, bool kMin>
constexpr auto kTiles = []<size_t... I>(std::index_sequence<I...>) {
  return std::array<TileFn, sizeof...(I)>{
      panel_tile<S, kOffset, kMin, static_cast<int>(I) % kMaxXRows + 1, static_cast<int>(I) / kMaxXRows + 1>...};
}(std::make_index_sequence<kMaxPanels * kMaxXRows>());

const TileFn* tiles_for(const PanelRowFormat& format) {
  if (format.sub_block == 16) return kTiles<16, true, false>.data();
  if (format.has_min) return kTiles<32, false, true>.data();
  return kTiles<32, true, false>.data();
}

// Every activation row against one unit of `count` panels holding `rows` weight rows, into
// y's columns from the unit's first row.
void multiply_unit(const TileFn* tiles, const Panel* panels, int64_t rows, const Activations& a, int64_t n, int64_t k,
                   float* y, int64_t ldy, bool accumulate) {
  const int count = static_cast<int>((rows + kLanes - 1) / kLanes);
  const int last = static_cast<int>(rows - (count - 1) * kLanes);
  const auto last_lanes = static_cast<__mmask16>((1u << last) - 1);
  for (int64_t i = 0; i < n; i += kMaxXRows) {
    const int r = static_cast<int>(std::min<int64_t>(kMaxXRows, n - i));
    tiles[(count - 1) * kMaxXRows + r - 1](panels, a, i, k, y, ldy, accumulate, last_lanes);
  }
}

// How far ahead of the line it reads q16_panel_tile asks for the next (row_dots'
// kWeightPrefetchBytes).
constexpr int kPrefetchBytes = row_dots::kWeightPrefetchBytes;

// Q16 activation rows as q16_panel_tile reads them: the two code planes, d per block, and the
// start of each block's sums, −offset·Σhi (the high plane meets the codes as stored, offset in).
struct Q16Activations {
  std::vector<int8_t> hi;            // [n][k]
  std::vector<uint8_t> lo;           // [n][k]
  std::vector<float> d;              // [n][k / 32]
  std::vector<int32_t> offset_sums;  // [n][k / 32]
};

void relay_q16_activations(int offset, const float* x, int64_t n, int64_t k, Q16Activations& a) {
  const int64_t blocks = k / kLegacyBlock;
  a.hi.resize(static_cast<size_t>(n * k));
  a.lo.resize(static_cast<size_t>(n * k));
  a.d.resize(static_cast<size_t>(n * blocks));
  a.offset_sums.resize(static_cast<size_t>(n * blocks));
#pragma omp parallel
  {
    std::vector<BlockQ16> row(static_cast<size_t>(blocks));
#pragma omp for schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      quantize_activation_row(ActivationType::kQ16, x + i * k, k, reinterpret_cast<std::byte*>(row.data()));
      for (int64_t b = 0; b < blocks; ++b) {
        const BlockQ16& block = row[static_cast<size_t>(b)];
        std::memcpy(a.hi.data() + i * k + b * kLegacyBlock, block.hi, kLegacyBlock);
        std::memcpy(a.lo.data() + i * k + b * kLegacyBlock, block.lo, kLegacyBlock);
        a.d[static_cast<size_t>(i * blocks + b)] = block.d;
        int32_t sum = 0;
        for (int j = 0; j < kLegacyBlock; ++j) sum += block.hi[j];
        a.offset_sums[static_cast<size_t>(i * blocks + b)] = -offset * sum;
      }
    }
  }
}

// R Q16 activation rows from x_row by one panel of a 32-element sub-block format without min.
template <int R>
STAR_AVX512 void q16_panel_tile(const Panel* panel, const Q16Activations& a, int64_t x_row, int64_t k, int offset,
                                float* y, int64_t ldy, __mmask16 lanes) {
  constexpr int kGroups = kLegacyBlock / 4;
  const int64_t blocks = k / kLegacyBlock;
  const __m512i offsets = _mm512_set1_epi8(static_cast<char>(offset));
  __m512 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
  const int8_t* his[R];
  const int8_t* los[R];
  for (int r = 0; r < R; ++r) {
    his[r] = a.hi.data() + (x_row + r) * k;
    los[r] = reinterpret_cast<const int8_t*>(a.lo.data() + (x_row + r) * k);
  }
  for (int64_t b = 0; b < blocks; ++b) {
    __m512i sum[R];
    for (int r = 0; r < R; ++r) {
      sum[r] = _mm512_set1_epi32(a.offset_sums[static_cast<size_t>((x_row + r) * blocks + b)]);
    }
    // Σ (code − offset)·hi: the unsigned codes against the signed plane, the offset's part started in.
    // A decode step reads the panels once, from memory: each line is asked for ahead, as the row tiles
    // ask for theirs (weight_prefetch.h), on the first of its two passes.
    _mm_prefetch(reinterpret_cast<const char*>(panel->scales + b * kLanes) + kPrefetchBytes, _MM_HINT_T0);
#pragma GCC unroll 8
    for (int g = 0; g < kGroups; ++g) {
      const uint8_t* line = panel->codes + (b * kGroups + g) * 64;
      _mm_prefetch(reinterpret_cast<const char*>(line) + kPrefetchBytes, _MM_HINT_T0);
      const __m512i w = _mm512_loadu_si512(line);
      for (int r = 0; r < R; ++r) {
        sum[r] = _mm512_dpbusd_epi32(sum[r], w, broadcast_dword(his[r] + b * kLegacyBlock + 4 * g));
      }
    }
    for (int r = 0; r < R; ++r) sum[r] = _mm512_slli_epi32(sum[r], 8);
    // + Σ lo·(code − offset): the unsigned plane against the codes made signed.
#pragma GCC unroll 8
    for (int g = 0; g < kGroups; ++g) {
      const __m512i w = _mm512_sub_epi8(_mm512_loadu_si512(panel->codes + (b * kGroups + g) * 64), offsets);
      for (int r = 0; r < R; ++r) {
        sum[r] = _mm512_dpbusd_epi32(sum[r], broadcast_dword(los[r] + b * kLegacyBlock + 4 * g), w);
      }
    }
    const __m512 scale = _mm512_loadu_ps(panel->scales + b * kLanes);
    for (int r = 0; r < R; ++r) {
      const __m512 d = _mm512_set1_ps(a.d[static_cast<size_t>((x_row + r) * blocks + b)]);
      acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum[r]), _mm512_mul_ps(scale, d), acc[r]);
    }
  }
  for (int r = 0; r < R; ++r) _mm512_mask_storeu_ps(y + (x_row + r) * ldy, lanes, acc[r]);
}

using Q16TileFn = void (*)(const Panel*, const Q16Activations&, int64_t, int64_t, int, float*, int64_t, __mmask16);

// q16_panel_tile of one panel for R = 1..kMaxXRows, index R − 1.
constexpr auto kQ16Tiles = []<size_t... I>(std::index_sequence<I...>) {
  return std::array<Q16TileFn, sizeof...(I)>{q16_panel_tile<static_cast<int>(I) + 1>...};
}(std::make_index_sequence<kMaxXRows>());

}  // namespace

void int8_panel_matmul(DType dtype, const std::byte* w, size_t w_row_bytes, int64_t m, int64_t k, const float* x,
                       int64_t n, float* y, int64_t ldy, bool accumulate) {
  const PanelRowFormat& format = *find_panel_row_format(dtype);
  // Reused across calls like matmul's other scratch; the OpenMP workers see it by reference.
  thread_local Activations activations;
  relay_activations(format, x, n, k, activations);
  const Activations& a = activations;
  const TileFn* tiles = tiles_for(format);
  constexpr int64_t kTileRows = kMaxPanels * kLanes;
  const int64_t units = (m + kTileRows - 1) / kTileRows;
#pragma omp parallel
  {
    thread_local PanelScratch scratch;
    size_scratch(format, k, scratch);
    Panel panels[kMaxPanels];
#pragma omp for schedule(static)
    for (int64_t u = 0; u < units; ++u) {
      const int64_t first = u * kTileRows, rows = std::min(kTileRows, m - first);
      const int count = static_cast<int>((rows + kLanes - 1) / kLanes);
      for (int p = 0; p < count; ++p) {
        panels[p] = pack_panel(format, w + (first + p * kLanes) * w_row_bytes, w_row_bytes,
                               std::min<int64_t>(kLanes, rows - p * kLanes), k, scratch, p);
      }
      multiply_unit(tiles, panels, rows, a, n, k, y + first, ldy, accumulate);
    }
  }
}

std::shared_ptr<const PrelaidPanels> prelay_int8_panels(DType dtype, const std::byte* w, size_t w_row_bytes,
                                                        int64_t m, int64_t k, bool row_l1) {
  const PanelRowFormat& format = *find_panel_row_format(dtype);
  auto out = std::make_shared<PrelaidPanels>();
  out->format = &format;
  out->m = m;
  out->k = k;
  const int64_t count = (m + kLanes - 1) / kLanes, subs = k / format.sub_block, blocks = k / kLegacyBlock;
  out->codes.resize(static_cast<size_t>(count * kLanes * k));
  out->scales.resize(static_cast<size_t>(count * kLanes * subs));
  out->mins.resize(format.has_min ? static_cast<size_t>(count * kLanes * blocks) : 0);
  out->row_l1.resize(row_l1 ? static_cast<size_t>(count * kLanes) : 0);
  PrelaidPanels& p = *out;
#pragma omp parallel
  {
    PanelScratch scratch;
    size_scratch(format, k, scratch);
#pragma omp for schedule(static)
    for (int64_t i = 0; i < count; ++i) {
      pack_panel_into(format, w + i * kLanes * w_row_bytes, w_row_bytes, std::min<int64_t>(kLanes, m - i * kLanes), k,
                      scratch, p.codes.data() + i * kLanes * k, p.scales.data() + i * kLanes * subs,
                      format.has_min ? p.mins.data() + i * kLanes * blocks : nullptr,
                      row_l1 ? p.row_l1.data() + i * kLanes : nullptr);
    }
  }
  return out;
}

namespace {

// The products of int8_prelaid_panel_matmul once its activations are relayed.
void multiply_prelaid(const Activations& a, int64_t n, std::span<const PrelaidPanelOutput> outputs, bool accumulate) {
  const PanelRowFormat& format = *outputs.front().panels->format;
  const int64_t k = outputs.front().panels->k;
  const TileFn* tiles = tiles_for(format);
  constexpr int64_t kTileRows = kMaxPanels * kLanes;
  const int64_t subs = k / format.sub_block, blocks = k / kLegacyBlock;
  const auto rows_of = [](const PrelaidPanelOutput& o) { return o.rows < 0 ? o.panels->m - o.first : o.rows; };
  const auto units_of = [&](const PrelaidPanelOutput& o) { return (rows_of(o) + kTileRows - 1) / kTileRows; };
  int64_t total_units = 0;
  for (const PrelaidPanelOutput& o : outputs) {
    assert(o.first % kLanes == 0 && o.first + rows_of(o) <= o.panels->m);
    total_units += units_of(o);
  }
  // Dynamic, as matmul's row dots: each output is computed the same way whichever thread takes it.
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t g = 0; g < total_units; ++g) {
    int64_t u = g;
    size_t t = 0;
    while (u >= units_of(outputs[t])) u -= units_of(outputs[t++]);
    const PrelaidPanelOutput& o = outputs[t];
    const PrelaidPanels& p = *o.panels;
    const int64_t ldy = rows_of(o);
    const int64_t first = u * kTileRows, rows = std::min(kTileRows, ldy - first);
    Panel panels[kMaxPanels];
    for (int q = 0; q < (rows + kLanes - 1) / kLanes; ++q) {
      const int64_t index = (o.first + first) / kLanes + q;
      panels[q] = {p.codes.data() + index * kLanes * k, p.scales.data() + index * kLanes * subs,
                   format.has_min ? p.mins.data() + index * kLanes * blocks : nullptr};
    }
    multiply_unit(tiles, panels, rows, a, n, k, o.y + first, ldy, accumulate);
  }
}

}  // namespace

void int8_prelaid_panel_matmul(const float* x, int64_t n, std::span<const PrelaidPanelOutput> outputs,
                               bool accumulate) {
  thread_local Activations activations;
  relay_activations(*outputs.front().panels->format, x, n, outputs.front().panels->k, activations);
  multiply_prelaid(activations, n, outputs, accumulate);
}

void int8_prelaid_panel_matmul_q8_0(const quant::BlockQ8_0* x, int64_t n, std::span<const PrelaidPanelOutput> outputs,
                                    bool accumulate) {
  thread_local Activations activations;
  relay_blocks(*outputs.front().panels->format, x, n, outputs.front().panels->k, activations);
  multiply_prelaid(activations, n, outputs, accumulate);
}

void int8_prelaid_panel_matmul_q16(const float* x, int64_t n, const PrelaidPanelOutput& output) {
  const PrelaidPanels& p = *output.panels;
  const PanelRowFormat& format = *p.format;
  assert(format.sub_block == kLegacyBlock && !format.has_min);
  const int64_t k = p.k, blocks = k / kLegacyBlock;
  thread_local Q16Activations activations;
  relay_q16_activations(format.offset, x, n, k, activations);
  const Q16Activations& a = activations;
  const int64_t ldy = output.rows < 0 ? p.m - output.first : output.rows;
  assert(output.first % kLanes == 0 && output.first + ldy <= p.m);
  const int64_t count = (ldy + kLanes - 1) / kLanes;
  // One panel a tile: read from memory, a tile of two panels streams from two places at once and
  // ran 6-55% slower here (one row 9.1 against 5.9 ms on a 131072x768 weight, 16 rows 22.9 against
  // 21.5); the activation rows of a tile still share each of its loads.
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t q = 0; q < count; ++q) {
    const int64_t index = output.first / kLanes + q;
    const Panel panel{p.codes.data() + index * kLanes * k, p.scales.data() + index * kLanes * blocks, nullptr};
    const int rows = static_cast<int>(std::min<int64_t>(kLanes, ldy - q * kLanes));
    const auto lanes = static_cast<__mmask16>((1u << rows) - 1);
    for (int64_t i = 0; i < n; i += kMaxXRows) {
      const int r = static_cast<int>(std::min<int64_t>(kMaxXRows, n - i));
      kQ16Tiles[r - 1](&panel, a, i, k, format.offset, output.y + q * kLanes, ldy, lanes);
    }
  }
}

namespace {

// The Q8 and Q16 roundings of activation row i: the largest difference between them and each
// one's largest magnitude, in double (each value d·code is exact there).
struct RoundingGap {
  double difference = 0, q8 = 0, q16 = 0;
};

RoundingGap rounding_gap(const Activations& a8, const Q16Activations& a16, int64_t i, int64_t k) {
  const int64_t blocks = k / kLegacyBlock;
  RoundingGap gap;
  for (int64_t b = 0; b < blocks; ++b) {
    const double d8 = a8.d[static_cast<size_t>(i * blocks + b)];
    const double d16 = a16.d[static_cast<size_t>(i * blocks + b)];
    for (int64_t j = b * kLegacyBlock; j < (b + 1) * kLegacyBlock; ++j) {
      const double v8 = d8 * a8.codes[static_cast<size_t>(i * k + j)];
      const double v16 = d16 * (256.0 * a16.hi[static_cast<size_t>(i * k + j)] + a16.lo[static_cast<size_t>(i * k + j)]);
      gap.difference = std::max(gap.difference, std::abs(v8 - v16));
      gap.q8 = std::max(gap.q8, std::abs(v8));
      gap.q16 = std::max(gap.q16, std::abs(v16));
    }
  }
  return gap;
}

// Row i of int8_prelaid_panel_q16_maxima, its Q8 outputs in place: each differs from its Q16 value
// by at most spread·row_l1. The panels holding an output whose upper end reaches the largest lower
// end are multiplied in Q16; the others' outputs become −inf. The bounds are float, each within
// two roundings of its value, so the cut sits 2⁻²⁰·(largest |output| + largest spread·row_l1)
// lower. Not finite anywhere: every panel again.
STAR_AVX512 void multiply_again_where_largest(const PrelaidPanels& p, const PrelaidPanelOutput& output, int64_t ldy,
                                              int64_t i, const Q16Activations& a16, double spread) {
  const int64_t k = p.k, blocks = k / kLegacyBlock;
  const int64_t count = (ldy + kLanes - 1) / kLanes;
  float* row = output.y + i * ldy;
  const float* l1 = p.row_l1.data() + output.first;
  const auto lanes_of = [&](int64_t q) {
    return static_cast<__mmask16>((1u << std::min<int64_t>(kLanes, ldy - q * kLanes)) - 1);
  };
  const float s = std::nextafter(static_cast<float>(spread), std::numeric_limits<float>::infinity());
  const __m512 vs = _mm512_set1_ps(s);
  __m512 lower = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  __m512 magnitude = _mm512_setzero_ps();
  __mmask16 unordered = std::isfinite(s) ? 0 : 1;
  for (int64_t q = 0; q < count; ++q) {
    const __mmask16 lanes = lanes_of(q);
    const __m512 y = _mm512_maskz_loadu_ps(lanes, row + q * kLanes);
    const __m512 bound = _mm512_mul_ps(vs, _mm512_maskz_loadu_ps(lanes, l1 + q * kLanes));
    const __m512 zero = _mm512_mul_ps(y, _mm512_setzero_ps());  // NaN where y is not finite
    unordered |= _mm512_cmp_ps_mask(zero, zero, _CMP_UNORD_Q);
    lower = _mm512_mask_max_ps(lower, lanes, lower, _mm512_sub_ps(y, bound));
    magnitude = _mm512_max_ps(magnitude, _mm512_add_ps(_mm512_abs_ps(y), bound));
  }
  const float cut = _mm512_reduce_max_ps(lower) - 0x1p-20f * _mm512_reduce_max_ps(magnitude);
  for (int64_t q = 0; q < count; ++q) {
    const __mmask16 lanes = lanes_of(q);
    const __m512 y = _mm512_maskz_loadu_ps(lanes, row + q * kLanes);
    const __m512 upper = _mm512_fmadd_ps(vs, _mm512_maskz_loadu_ps(lanes, l1 + q * kLanes), y);
    if (unordered == 0 && (_mm512_cmp_ps_mask(upper, _mm512_set1_ps(cut), _CMP_GE_OQ) & lanes) == 0) {
      _mm512_mask_storeu_ps(row + q * kLanes, lanes, _mm512_set1_ps(-std::numeric_limits<float>::infinity()));
      continue;
    }
    const int64_t index = output.first / kLanes + q;
    const Panel panel{p.codes.data() + index * kLanes * k, p.scales.data() + index * kLanes * blocks, nullptr};
    kQ16Tiles[0](&panel, a16, i, k, p.format->offset, output.y + q * kLanes, ldy, lanes);
  }
}

}  // namespace

void int8_prelaid_panel_q16_maxima(const float* x, int64_t n, const PrelaidPanelOutput& output) {
  const PrelaidPanels& p = *output.panels;
  const PanelRowFormat& format = *p.format;
  assert(format.sub_block == kLegacyBlock && !format.has_min && static_cast<int64_t>(p.row_l1.size()) >= p.m);
  const int64_t k = p.k, blocks = k / kLegacyBlock;
  const int64_t ldy = output.rows < 0 ? p.m - output.first : output.rows;
  assert(output.first % kLanes == 0 && output.first + ldy <= p.m);
  if (n <= 0 || ldy <= 0) return;
  // The OpenMP workers see the calling thread's activations by reference.
  thread_local Activations q8_activations;
  relay_activations(format, x, n, k, q8_activations);
  const Activations& a8 = q8_activations;
  multiply_prelaid(a8, n, {&output, 1}, /*accumulate=*/false);
  thread_local Q16Activations q16_activations;
  relay_q16_activations(format.offset, x, n, k, q16_activations);
  const Q16Activations& a16 = q16_activations;
  // Each output is Σ over `blocks` of float(block sum)·(scale·d): the block sums are exact in int32
  // (Q8: below 2¹⁹, exact in float too; Q16: below 2²⁷, rounded once to float), scale·d rounds once
  // and each fused multiply-add once, so the output is within (blocks + 3)·2⁻²⁴·Σ|w·x̂| of its
  // exact value; (blocks + 4)·2⁻²³ leaves room.
  const double rounding = static_cast<double>(blocks + 4) * 0x1p-23;
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t i = 0; i < n; ++i) {
    const RoundingGap gap = rounding_gap(a8, a16, i, k);
    multiply_again_where_largest(p, output, ldy, i, a16, gap.difference + rounding * (gap.q8 + gap.q16));
  }
}

}  // namespace star::cpu
