#include "star/backend/cpu/matmul.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cassert>
#include <limits>
#include <span>
#include <vector>

#include "bf16_gemm.h"
#include "star/backend/cpu/dot_kernels.h"
#include "star/backend/cpu/gemm.h"
#include "star/quant/dequantize.h"
#include "quant/int8_panels.h"
#include "quant/widen_rows.h"
#include "simd.h"

namespace star::cpu {
namespace {

// Float32 bytes of one widened weight tile. sgemm packs its operands itself, so the tile only
// bounds the scratch memory; a large one keeps the number of sgemm calls (each with its thread
// start-up) to one per matrix, the output projection aside.
constexpr int64_t kTileBytes = int64_t{8} << 20;

// Weight rows per unit of work when the kernel has a register tile: a multiple of its 4 rows, at
// least kTileChunkRows, else about a quarter of a thread's share, so that a K or V projection still
// splits across the threads while a tile that re-lays the activations (every AVX-512 one, once
// per call) does so for many rows: at 16 rows a call, Q4_K's re-laying took a fifth of its decode
// time.
constexpr int64_t kTileChunkRows = 16;
constexpr int64_t kTileChunkRowsMax = 256;

int64_t tile_chunk_rows(int64_t total_rows) {
  const int64_t share = total_rows / (4 * static_cast<int64_t>(omp_get_max_threads()));
  return std::clamp<int64_t>(share / 4 * 4, kTileChunkRows, kTileChunkRowsMax);
}

// Few activation rows: each weight row is read once, in its stored form, and dotted with every
// activation row while it is in L1; with a register tile (`use_tile` and the kernel has one),
// several weight rows against several activation rows at a time. x is converted once for every
// output (all share `kernel` and the row length k); the rows of all outputs are split across the
// OpenMP threads in one region.
void matmul_row_dots(const float* x, int64_t n, std::span<const MatmulOutput> outputs, const DotKernel& kernel,
                     bool accumulate, bool use_tile = true) {
  const int64_t k = outputs.front().w->cols();
  const size_t x_row_bytes = activation_row_bytes(kernel.activation_type, k);
  std::vector<std::byte> xq(static_cast<size_t>(n) * x_row_bytes);
  for (int64_t i = 0; i < n; ++i) {
    quantize_activation_row(kernel.activation_type, x + i * k, k, xq.data() + i * x_row_bytes);
  }
  // The shapes read once here: WeightTensor's rows() and row_bytes() walk its shape, per row they
  // cost a few percent of a decode step.
  struct Target {
    const std::byte* data;
    size_t row_bytes;
    int64_t m;
    float* y;
  };
  const RowTile tile = use_tile ? kernel.tile : nullptr;
  std::vector<Target> targets;
  int64_t total_rows = 0;
  for (const MatmulOutput& o : outputs) {
    targets.push_back({o.w->data, o.w->row_bytes(), o.w->rows(), o.y});
    total_rows += targets.back().m;
  }
  const int64_t unit_rows = tile != nullptr ? tile_chunk_rows(total_rows) : 1;
  int64_t total_units = 0;
  for (const Target& target : targets) total_units += (target.m + unit_rows - 1) / unit_rows;
  // Dynamic: a worker that enters the region late (waking) takes fewer units instead of keeping
  // the others waiting at its end (small Q4_0 decode: 148 -> 160 tokens/s, medians of 4 alternated
  // runs; each output is computed the same way whichever thread takes its unit).
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t g = 0; g < total_units; ++g) {
    int64_t u = g;
    size_t t = 0;
    while (u >= (targets[t].m + unit_rows - 1) / unit_rows) u -= (targets[t++].m + unit_rows - 1) / unit_rows;
    const Target& target = targets[t];
    const int64_t r = u * unit_rows;
    const std::byte* row = target.data + r * target.row_bytes;
    if (tile != nullptr) {
      tile(row, target.row_bytes, std::min(unit_rows, target.m - r), xq.data(), x_row_bytes, n, k, target.y + r,
           target.m, accumulate);
      continue;
    }
    for (int64_t i = 0; i < n; ++i) {
      const float v = kernel.dot(row, xq.data() + i * x_row_bytes, k);
      float& out = target.y[i * target.m + r];
      out = accumulate ? out + v : v;
    }
  }
}

float dot_f32(const float* a, const float* b, int64_t k) {
  simd::Vec acc0{}, acc1{};
  int64_t i = 0;
  for (; i + 2 * simd::kLanes <= k; i += 2 * simd::kLanes) {
    acc0 += simd::load(a + i) * simd::load(b + i);
    acc1 += simd::load(a + i + simd::kLanes) * simd::load(b + i + simd::kLanes);
  }
  float sum = simd::reduce_add(acc0 + acc1);
  for (; i < k; ++i) sum += a[i] * b[i];
  return sum;
}

// Few activation rows and a type without a row-dot kernel (Q4_1, Q5_x, the K-quants): each weight
// row is widened into an L1-sized buffer and dotted with the float32 activations, so the weight
// is still read once in its stored form and never written back widened.
void matmul_widened_rows(const float* x, int64_t n, const WeightTensor& w, float* y, bool accumulate) {
  const int64_t k = w.cols(), m = w.rows();
#pragma omp parallel
  {
    std::vector<float> row(static_cast<size_t>(k));
#pragma omp for schedule(static)
    for (int64_t r = 0; r < m; ++r) {
      dequantize_weight_rows(w, r, 1, row.data());
      for (int64_t i = 0; i < n; ++i) {
        const float v = dot_f32(row.data(), x + i * k, k);
        float& out = y[i * m + r];
        out = accumulate ? out + v : v;
      }
    }
  }
}

// Many activation rows: widen a tile of weight rows to float32, multiply it with sgemm into the
// tile's columns of y, next tile.
void matmul_widened_tiles(const float* x, int64_t n, const WeightTensor& w, float* y, bool accumulate) {
  const int64_t k = w.cols(), m = w.rows();
  const int64_t tile_rows = std::clamp<int64_t>(kTileBytes / (k * static_cast<int64_t>(sizeof(float))), 16, m);
  // Reused across calls: a fresh allocation this size is a fresh mapping, page-faulted in each time.
  thread_local std::vector<float> scratch;
  scratch.resize(static_cast<size_t>(tile_rows * k));
  float* const tile = scratch.data();  // the OpenMP workers' own thread_local would be empty
  const float beta = accumulate ? 1.f : 0.f;
  for (int64_t first = 0; first < m; first += tile_rows) {
    const int64_t rows = std::min(tile_rows, m - first);
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) dequantize_weight_rows(w, first + r, 1, tile + r * k);
    if (n == 1) {
      cblas_sgemv(CblasRowMajor, CblasNoTrans, static_cast<blasint>(rows), static_cast<blasint>(k), 1.f,
                  tile, static_cast<blasint>(k), x, 1, beta, y + first, 1);
    } else {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<blasint>(n), static_cast<blasint>(rows),
                  static_cast<blasint>(k), 1.f, x, static_cast<blasint>(k), tile,
                  static_cast<blasint>(k), beta, y + first, static_cast<blasint>(m));
    }
  }
}

// Many activation rows and BF16 weights on a CPU that multiplies bf16 pairs (bf16_gemm.h): the
// weights in place, at about twice sgemm's rate, with the activations rounded to bf16 once (as
// llama.cpp does for BF16 weights). Quantized weights are not rounded to bf16 on the way: that
// moved SmolLM2's KV enough to change 2 of 8 greedy continuations; they go to sgemm in float32.
// False when oneDNN failed.
bool matmul_bf16_weights(const float* x, int64_t n, const WeightTensor& w, float* y, bool accumulate) {
  const int64_t k = w.cols(), m = w.rows();
  // Reused across calls, as matmul_widened_tiles' scratch; the OpenMP workers see a raw pointer.
  thread_local std::vector<uint16_t> x_scratch;
  x_scratch.resize(static_cast<size_t>(n * k));
  uint16_t* const x_bf16 = x_scratch.data();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n * k; ++i) x_bf16[i] = f32_to_bf16(x[i]);
  return bf16_gemm_nt(x_bf16, n, k, reinterpret_cast<const uint16_t*>(w.data), m, y, m, accumulate);
}

}  // namespace

// Q4_1: SmolLM2-135M's Q4_1 file agrees with float32 transformers on the top token at 96.9% of
// positions with Q8_1 activations, at 100% with float32 ones (the model tests need 99%). Q16
// activations keep 16 bits a code and still multiply in int8 instructions; where the instruction
// set has no Q16 kernel, float32 ones.
const DotKernel* few_rows_kernel(DType dtype, Isa isa) {
  if (dtype == DType::kQ4_1) return wide_activation_kernel(dtype, isa);
  return find_dot_kernel(dtype, isa);
}

void dequantize_weight_rows(const WeightTensor& w, int64_t first, int64_t count, float* out) {
  const std::byte* src = w.data + static_cast<size_t>(first) * w.row_bytes();
  if (w.dtype == DType::kQ6_K) {
    for (int64_t r = 0; r < count; ++r) widen_q6_k_row(src + r * w.row_bytes(), w.cols(), out + r * w.cols());
  } else if (dtype_is_quantized(w.dtype)) {
    quant::dequantize_rows(w.dtype, src, count, w.cols(), out);
  } else {
    convert_to_f32(w.dtype, src, static_cast<size_t>(count * w.cols()), out);
  }
}

void matmul(const float* x, int64_t n, const WeightTensor& w, float* y, bool accumulate) {
  assert(w.shape.size() == 2);
  const int64_t k = w.cols(), m = w.rows();
  if (w.dtype == DType::kF32) {
    matmul_nt(x, n, k, w.f32(), m, y, accumulate);
    return;
  }
  if (n == 0 || m == 0) return;
  if (k == 0) {
    if (!accumulate) std::fill(y, y + n * m, 0.f);
    return;
  }
  if (w.panels != nullptr) {
    const PrelaidPanelOutput output{w.panels.get(), y, w.panel_first, m};
    int8_prelaid_panel_matmul(x, n, {&output, 1}, accumulate);
    return;
  }
  const DotKernel* kernel = few_rows_kernel(w.dtype, best_isa());
  if (kernel != nullptr && n <= row_dot_max_rows(*kernel)) {
    const MatmulOutput output{&w, y};
    matmul_row_dots(x, n, {&output, 1}, *kernel, accumulate);
    return;
  }
  if (kernel == nullptr && n <= kRowDotMaxRows) {
    matmul_widened_rows(x, n, w, y, accumulate);
    return;
  }
  if (w.dtype == DType::kBF16 && bf16_gemm_fast() && matmul_bf16_weights(x, n, w, y, accumulate)) return;
  if (int8_panels_for(w.dtype, best_isa())) {
    int8_panel_matmul(w.dtype, w.data, w.row_bytes(), m, k, x, n, y, m, accumulate);
    return;
  }
  matmul_widened_tiles(x, n, w, y, accumulate);
}

bool matmul_reads_q8_0_blocks(const WeightTensor& w) { return w.panels != nullptr; }

void matmul_q8_0_rows(const quant::BlockQ8_0* x, int64_t n, const WeightTensor& w, float* y, bool accumulate) {
  assert(matmul_reads_q8_0_blocks(w));
  if (n == 0 || w.rows() == 0) return;
  const PrelaidPanelOutput output{w.panels.get(), y, w.panel_first, w.rows()};
  int8_prelaid_panel_matmul_q8_0(x, n, {&output, 1}, accumulate);
}

void matmul_shared_input(const float* x, int64_t n, std::initializer_list<MatmulOutput> outputs) {
  const MatmulOutput& first = *outputs.begin();
  const bool prelaid = n > 0 && std::all_of(outputs.begin(), outputs.end(), [&](const MatmulOutput& o) {
    return o.w->panels != nullptr && first.w->panels != nullptr && o.w->panels->format == first.w->panels->format &&
           o.w->cols() == first.w->cols();
  });
  if (prelaid) {
    std::vector<PrelaidPanelOutput> panels;
    for (const MatmulOutput& o : outputs) panels.push_back({o.w->panels.get(), o.y, o.w->panel_first, o.w->rows()});
    int8_prelaid_panel_matmul(x, n, panels, /*accumulate=*/false);
    return;
  }
  const DotKernel* kernel = n >= 1 && first.w->cols() > 0 ? few_rows_kernel(first.w->dtype, best_isa()) : nullptr;
  if (kernel != nullptr && n > row_dot_max_rows(*kernel)) kernel = nullptr;
  for (const MatmulOutput& o : outputs) {
    assert(o.w->shape.size() == 2);
    if (o.w->dtype != first.w->dtype || o.w->cols() != first.w->cols()) kernel = nullptr;
  }
  if (kernel == nullptr) {
    for (const MatmulOutput& o : outputs) matmul(x, n, *o.w, o.y);
    return;
  }
  matmul_row_dots(x, n, {outputs.begin(), outputs.size()}, *kernel, /*accumulate=*/false);
}

const DotKernel* wide_activation_kernel(DType dtype, Isa isa) {
  const DotKernel* q16 = find_q16_dot_kernel(dtype, isa);
  return q16 != nullptr ? q16 : find_float_dot_kernel(dtype, isa);
}

namespace {

// Whether matmul_wide_activations takes n rows of w in its prelaid panels. They take the few rows
// in place of the Q16 row tiles: the same Q16 codes and exact block sums, each load of 16 weight
// rows' codes serving up to 6 activation rows, where a row tile loads 2 weight rows per 4 (16 rows
// against half of `small`'s vocabulary: 5.3 -> 2.3 ms).
bool wide_activations_in_panels(const WeightTensor& w, int64_t n) {
  if (w.panels == nullptr || n <= 0 || w.rows() == 0) return false;
  const DotKernel* kernel = wide_activation_kernel(w.dtype, best_isa());
  return kernel != nullptr && n <= row_dot_max_rows(*kernel);
}

}  // namespace

void matmul_wide_activations(const float* x, int64_t n, const WeightTensor& w, float* y) {
  if (w.dtype == DType::kF32 || n == 0 || w.rows() == 0 || w.cols() == 0) {
    matmul(x, n, w, y);
    return;
  }
  if (wide_activations_in_panels(w, n)) {
    int8_prelaid_panel_matmul_q16(x, n, {w.panels.get(), y, w.panel_first, w.rows()});
    return;
  }
  const DotKernel* kernel = wide_activation_kernel(w.dtype, best_isa());
  if (kernel != nullptr && n <= row_dot_max_rows(*kernel)) {
    const MatmulOutput output{&w, y};
    matmul_row_dots(x, n, {&output, 1}, *kernel, /*accumulate=*/false);
  } else if (kernel == nullptr && n <= kRowDotMaxRows) {
    matmul_widened_rows(x, n, w, y, /*accumulate=*/false);
  } else {
    matmul_widened_tiles(x, n, w, y, /*accumulate=*/false);
  }
}

void matmul_wide_activations_maxima(const float* x, int64_t n, const WeightTensor& w, float* y) {
  // Only where the whole product would take the panels: the maxima keep those bits.
  if (wide_activations_in_panels(w, n) && !w.panels->row_l1.empty()) {
    int8_prelaid_panel_q16_maxima(x, n, {w.panels.get(), y, w.panel_first, w.rows()});
    return;
  }
  matmul_wide_activations(x, n, w, y);
}

int64_t row_dot_max_rows(const DotKernel& kernel) {
  return kernel.tile != nullptr ? kRowTileMaxRows : kRowDotMaxRows;
}

int64_t rows_multiplied_alike(const WeightTensor& w) {
  if (w.dtype == DType::kF32) return 0;
  if (w.panels != nullptr) return std::numeric_limits<int64_t>::max();
  const DotKernel* kernel = few_rows_kernel(w.dtype, best_isa());
  return kernel != nullptr ? row_dot_max_rows(*kernel) : kRowDotMaxRows;
}

bool int8_panels_for(DType dtype, Isa isa) {
  return isa == Isa::kAvx512 && find_panel_row_format(dtype) != nullptr;
}

bool prelays_int8_panels(DType dtype, Isa isa) { return dtype == DType::kQ8_0 && int8_panels_for(dtype, isa); }

bool prelay_weight(WeightTensor& w, bool row_l1) {
  if (w.shape.size() != 2 || w.rows() == 0 || w.cols() == 0 || !prelays_int8_panels(w.dtype, best_isa())) return false;
  w.panels = prelay_int8_panels(w.dtype, w.data, w.row_bytes(), w.rows(), w.cols(), row_l1);
  return true;
}

void matmul_forced(MatmulPath path, const float* x, int64_t n, const WeightTensor& w, float* y, bool wide_activations) {
  const DotKernel* kernel = wide_activations ? wide_activation_kernel(w.dtype, best_isa())
                                             : few_rows_kernel(w.dtype, best_isa());
  const MatmulOutput output{&w, y};
  switch (path) {
    case MatmulPath::kRowTiles:
    case MatmulPath::kRowDots:
      assert(kernel != nullptr);
      matmul_row_dots(x, n, {&output, 1}, *kernel, /*accumulate=*/false, path == MatmulPath::kRowTiles);
      return;
    case MatmulPath::kWidenedTiles:
      matmul_widened_tiles(x, n, w, y, /*accumulate=*/false);
      return;
    case MatmulPath::kInt8Panels:
      assert(int8_panels_for(w.dtype, best_isa()));
      int8_panel_matmul(w.dtype, w.data, w.row_bytes(), w.rows(), w.cols(), x, n, y, w.rows(), /*accumulate=*/false);
      return;
    case MatmulPath::kPrelaidPanels: {
      assert(w.panels != nullptr);
      const PrelaidPanelOutput prelaid{w.panels.get(), y, w.panel_first, w.rows()};
      if (wide_activations) {
        int8_prelaid_panel_matmul_q16(x, n, prelaid);
      } else {
        int8_prelaid_panel_matmul(x, n, {&prelaid, 1}, /*accumulate=*/false);
      }
      return;
    }
  }
}

}  // namespace star::cpu
