// Matrix products against a weight in its stored type (F32, F16, BF16, GGUF blocks).
#pragma once

#include <cstdint>
#include <initializer_list>

#include "star/backend/cpu/dot_kernels.h"
#include "star/model/weight_tensor.h"
#include "star/quant/blocks.h"

namespace star::cpu {

// Up to this many activation rows a product reads each weight row once, in its stored form: the
// row-dot kernels of star/backend/cpu/dot_kernels.h where the type has one, else the row widened
// in L1 and dotted in float32. Past it, where the arithmetic, not the weight bytes, is the cost:
// BF16 weights on CPUs with AVX512-BF16, activations rounded to bf16 and multiplied by oneDNN;
// Q4_0, Q5_0, Q8_0 and the K-quants on AVX-512 VNNI, activations rounded to Q8_0 blocks and
// multiplied in int8 panels (quant/int8_panels.h); elsewhere, or with best_isa() capped below
// AVX-512, tiles widened to float32 and multiplied with sgemm. Measured on one thread (AVX-512
// VNNI; Q4_0, Q4_1, Q8_0; 1536x576 and 576x1536): the row dots take 0.65-0.98x the widened
// tiles' time at 16 rows and 0.8-1.25x at 24, so 16 is where they stop winning.
inline constexpr int64_t kRowDotMaxRows = 16;

// The same limit for kernels with a register tile (DotKernel::tile): a weight block is unpacked
// once for several activation rows and an activation block once for several weight rows, so the
// row dots keep winning over widened tiles + sgemm further. Measured with `star-bench matmul`
// (Q8_0 and Q4_0 on AVX2, 2048x768, 768x2048, 768x768, and the Q8_0 float-activation 8192x768;
// one and two threads, minimum of 15 calls on a loaded machine): the tiles are faster up to 32
// rows (0.5-0.9x the widened path's time at 24, 0.7-1.05x at 32) and lose from 40-48 (up to 2x).
// Against the int8 panels (AVX-512, 2 threads, 2048x768 and 768x2048): at 32 rows the Q4_0 and
// Q8_0 tiles take 0.6-1.0x the panels' time, Q4_K and Q6_K 0.9-1.6x; at 64 the panels win on all.
inline constexpr int64_t kRowTileMaxRows = 32;

// kRowTileMaxRows for a kernel with a tile, else kRowDotMaxRows.
int64_t row_dot_max_rows(const DotKernel& kernel);

// The most activation rows for which matmul(x, n, w) gives every row the bits it gets alone or
// beside any other rows up to this count: the row dots and their tiles (each output is its row
// pair's dot, dot_kernels.h) and rows widened in L1 up to their limit, prelaid panels at every
// count. 0 for F32 weights, which BLAS multiplies with no such promise.
int64_t rows_multiplied_alike(const WeightTensor& w);

// The row-dot kernel matmul uses for up to kRowDotMaxRows rows of a `dtype` weight on `isa`, or
// nullptr (rows widened in L1): find_dot_kernel's, except where rounding the activations to int8
// blocks costs measured accuracy (Q4_1), wide_activation_kernel's.
const DotKernel* few_rows_kernel(DType dtype, Isa isa);

// Whether a `dtype` weight is packed once into int8 panels (quant/int8_panels.h) on `isa`, and
// then multiplied in them at every row count: Q8_0 on AVX-512 VNNI, whose panels hold one code a
// byte as its blocks do (36 bytes per 32 elements against 34), so one activation row reads about
// the bytes the stored row dot reads, while many rows skip packing 16 weight rows every call (16
// rows of a 2048x768 matrix, one thread: 0.19 ms of products after 0.67 ms of packing). One kernel
// for every row count also makes a row's result independent of the rows beside it. The 4- and
// 5-bit types would double their bytes, which one-row decode pays: they stay as stored.
bool prelays_int8_panels(DType dtype, Isa isa);

// Packs w into w.panels where prelays_int8_panels(w.dtype, best_isa()); returns whether it did.
// `row_l1`: with each row's Σ|w| too, for matmul_wide_activations_maxima (an output projection).
bool prelay_weight(WeightTensor& w, bool row_l1 = false);

// y[n, m] = x[n, k] · w[m, k]^T, or y += ... when `accumulate`, where w is [m, k] of any DType.
// Weights with panels (prelay_weight) are multiplied in them.
// x and y are row-major float32 and must not overlap. F32 weights go straight to BLAS.
void matmul(const float* x, int64_t n, const WeightTensor& w, float* y, bool accumulate = false);

// Whether matmul(x, n, w) reads x only as its rows rounded to Q8_0 activation blocks, at every n:
// weights with panels (prelay_weight). matmul_q8_0_rows then takes those blocks in place of x.
bool matmul_reads_q8_0_blocks(const WeightTensor& w);

// matmul of rows already rounded to Q8_0 activation blocks, x [n][w.cols() / 32] as
// quantize_activation_row(kQ8_0) writes them: y is bit for bit matmul's of the float32 rows. Each
// block is rounded alone, so a row may have been rounded in pieces of whole blocks (column sharing
// hands the ranks' pieces over as blocks, a quarter of their float bytes). Requires
// matmul_reads_q8_0_blocks(w).
void matmul_q8_0_rows(const quant::BlockQ8_0* x, int64_t n, const WeightTensor& w, float* y, bool accumulate = false);

// One product of matmul_shared_input: y = x · w^T.
struct MatmulOutput {
  const WeightTensor* w;
  float* y;
};

// matmul (not accumulating) of one x against several weights of the same row length: Q, K and V,
// or gate and up. With few rows and one row-dot kernel for them all (the same stored type), x is
// converted once and all their rows share one OpenMP region: a decode step otherwise pays a
// thread start-up and join per matrix, as long as the work on a small K or V projection itself.
// Weights that all have panels of one format (prelay_weight) share one call of them. Any other
// case runs one matmul per output.
void matmul_shared_input(const float* x, int64_t n, std::initializer_list<MatmulOutput> outputs);

// The kernel matmul_wide_activations uses for few rows of a `dtype` weight on `isa`, or nullptr
// (rows widened in L1): find_q16_dot_kernel's where there is one (Q4_1 and Q8_0 on AVX2 and
// AVX-512, Q6_K on AVX-512), else find_float_dot_kernel's.
const DotKernel* wide_activation_kernel(DType dtype, Isa isa);

// matmul (not accumulating) with x never rounded to 8 bits whatever w's type: few rows take
// wide_activation_kernel's kernel (16-bit codes or float32), the other types and more rows widened
// weights against float32 x. For the output projection, where 8-bit rounding flips the top token:
// SmolLM2's tied Q8_0 embedding with Q8_0 activations agrees with float32 transformers on the top
// token at 98.2% of positions, against float32 (and Q16) on every other product. A weight with
// panels (prelay_weight) takes its few rows in them with the same Q16 codes
// (int8_prelaid_panel_matmul_q16).
void matmul_wide_activations(const float* x, int64_t n, const WeightTensor& w, float* y);
// matmul_wide_activations where only each row's largest outputs matter (greedy decoding): those
// that may be a row's largest come out with the same bits, others may come out −inf, so every row's
// first largest output is the same. Weights packed with their row norms (prelay_weight's row_l1)
// skip most of the Q16 work (int8_prelaid_panel_q16_maxima); the others take
// matmul_wide_activations whole.
void matmul_wide_activations_maxima(const float* x, int64_t n, const WeightTensor& w, float* y);

// The ways matmul can multiply, forced (not accumulating), for `star-bench matmul`, which measures
// where they cross: the row dots one (weight row, activation row) pair at a time, the same with the
// kernel's register tile, float32 tiles widened and multiplied with sgemm, and int8 panels
// (Q8_0 activations; the block types of quant/int8_panels.h on AVX-512 VNNI), packed per call or
// once (kPrelaidPanels needs w.panels; with wide_activations, Q16 activations in them). The
// row-dot paths need a kernel for w's type: few_rows_kernel's, or wide_activation_kernel's with wide_activations.
enum class MatmulPath { kRowDots, kRowTiles, kWidenedTiles, kInt8Panels, kPrelaidPanels };
void matmul_forced(MatmulPath path, const float* x, int64_t n, const WeightTensor& w, float* y, bool wide_activations);
// Whether matmul takes the int8 panels for many rows of a `dtype` weight on `isa`.
bool int8_panels_for(DType dtype, Isa isa);

// out[count, cols] = rows [first, first + count) of w as float32 (exact for every stored type).
void dequantize_weight_rows(const WeightTensor& w, int64_t first, int64_t count, float* out);

}  // namespace star::cpu
