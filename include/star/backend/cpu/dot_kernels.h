// Row dot products between one stored weight row and one activation row, per weight type and
// instruction set. The activation row is first converted to the type the kernel multiplies in:
//
//   weight        activations   arithmetic
//   Q4_0, Q5_0,   Q8_0 blocks   int8 products summed exactly per block, then d_w·d_x·Σ in float
//   Q8_0
//   Q4_1, Q5_1    Q8_1 blocks   the same plus the offset's m_w·s_x per block
//   Q4_1          Q16 blocks    16-bit codes as two int8 planes, each summed exactly per block:
//                               d_w·d_x·Σ q_w·q_x plus m_w·(d_x·Σq_x) (Q8_1 loses too much, below)
//   Q6_K          Q8_0 blocks   the same, with Q6_K's 16-element sub-block scales inside the sum
//   Q4_K, Q5_K    Q8_0 blocks   per 32-element sub-block Σ q·a and Σ a exact, then
//                               d·scale·d_x·Σ q·a − dmin·min·d_x·Σ a in float
//   F16           float32       F16C widening + FMA
//   BF16          BF16          bf16 pair products (vdpbf16ps), float sums
//
// Every kernel has a plain scalar version, the reference the vector ones are tested against.
// Every stored block type has a row-dot kernel; F32 weights go to sgemm.
#pragma once

#include <cstddef>
#include <cstdint>

#include "star/model/dtype.h"

namespace star::cpu {

enum class Isa {
  kScalar,
  kAvx2,    // AVX2 + FMA + F16C
  kAvx512,  // AVX-512 F/BW/VL with VNNI (BF16 weights: also AVX512-BF16, else their AVX2 kernel)
};
const char* isa_name(Isa isa);
// The widest of the above that this CPU runs (read once from cpuid), capped by limit_isa.
Isa best_isa();
// Caps what best_isa() returns from now on, process-wide; kAvx512 lifts the cap. Tests force
// kScalar to run whole models on the scalar reference kernels.
void limit_isa(Isa isa);
// Whether best_isa() is kAvx512 and the CPU multiplies bf16 pairs (AVX512-BF16).
bool has_bf16_products();

using RowDot = float (*)(const std::byte* weight_row, const std::byte* activation_row, int64_t k);

// y[i·ldy + r] = dot(weight row r, activation row i) for r < m, i < n (y += ... when `accumulate`),
// weight rows w_row_bytes apart, activation rows x_row_bytes apart. Each output is bit for bit the
// kernel's `dot` of the same two rows, whatever m, n and the output's place among them.
using RowTile = void (*)(const std::byte* weight_rows, size_t w_row_bytes, int64_t m, const std::byte* activation_rows,
                         size_t x_row_bytes, int64_t n, int64_t k, float* y, int64_t ldy, bool accumulate);

// The form an activation row takes for a row-dot kernel. The int8 forms are ggml's activation
// blocks: 32 elements q_j = round(x_j / d) with d = max|x_j| / 127, d stored as an f16.
enum class ActivationType {
  kF32,
  kBF16,
  kQ8_0,  // quant::BlockQ8_0
  kQ8_1,  // quant::BlockQ8_1: Q8_0 plus s = f16(d·Σq), for weights with an offset (w = d·q + m),
          // whose products carry m·Σx ≈ m·s
  kQ16,   // 32 elements q_j = round(x_j / d) with d = max|x_j| / 32767 kept in float32, as the
          // planes lo_j = q_j mod 256 (unsigned) and hi_j = (q_j − lo_j) / 256 (signed), so int8
          // products sum them exactly (q = 256·hi + lo), and s = d·Σq: 72 bytes a block
};
const char* activation_type_name(ActivationType type);

struct DotKernel {
  ActivationType activation_type;
  RowDot dot;
  // Several weight rows by several activation rows in registers, for the kernels that have one
  // (AVX2 and AVX-512: Q8_0 and Q4_0 with Q8_0 activations, Q8_0 with float32 ones, every Q16
  // kernel; AVX-512 also Q4_K and Q6_K with Q8_0 activations); else nullptr.
  RowTile tile = nullptr;
};

// The kernel for `weight_type` on `isa`, or nullptr when there is none (the type has no row-dot
// kernel, or the CPU lacks `isa`).
const DotKernel* find_dot_kernel(DType weight_type, Isa isa);

// A kernel for `weight_type` with Q16 activations, or nullptr: Q4_1, the type whose Q8_1 products
// cost SmolLM2 its accuracy (see matmul.cpp), and Q6_K and Q8_0, the output projections of
// llama.cpp's files (matmul_wide_activations); scalar and AVX-512 VNNI all three, AVX2 Q4_1 and
// Q8_0.
const DotKernel* find_q16_dot_kernel(DType weight_type, Isa isa);

// A kernel for `weight_type` whose activations stay float32 (activation_type kF32), or nullptr:
// Q4_1, Q8_0 and Q6_K (codes widened to float in registers), F16 and BF16. For products where
// rounding the activations costs accuracy (the output projection; every Q4_1 product, see
// matmul.cpp).
const DotKernel* find_float_dot_kernel(DType weight_type, Isa isa);

// Bytes of one activation row of k elements (k a multiple of 32 for the int8 forms).
size_t activation_row_bytes(ActivationType type, int64_t k);
// x[k] -> one activation row. Q8_0 and Q8_1 as ggml's quantize_row_q8_0_ref / q8_1_ref (q rounds
// halves away from zero; Q8_1's s is d·Σq before either is rounded to f16); Q16 rounds the same
// way; BF16 rounds to nearest even; F32 copies.
void quantize_activation_row(ActivationType type, const float* x, int64_t k, std::byte* out);
// out[k] = the values the kernels multiply: f16(d)·q for the int8 forms (Q8_1's s aside), d·q for
// Q16 (its s aside), the exact widening otherwise. For tests that bound what the rounding costs.
void dequantize_activation_row(ActivationType type, const std::byte* row, int64_t k, float* out);

}  // namespace star::cpu
