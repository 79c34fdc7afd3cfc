// Row dot products between one stored weight row and one activation row, per weight type and
// instruction set. The activation row is first converted to the type the kernel multiplies in:
//
//   weight        activations   arithmetic
//   Q4_0, Q8_0    Q8_0 blocks   int8 products summed exactly per block, then d_w·d_x·Σ in float
//   Q6_K          Q8_0 blocks   the same, with Q6_K's 16-element sub-block scales inside the sum
//   Q4_K, Q5_K    Q8_0 blocks   per 32-element sub-block Σ q·a and Σ a exact, then
//                               d·scale·d_x·Σ q·a − dmin·min·d_x·Σ a in float
//   F16           float32       F16C widening + FMA
//   BF16          BF16          bf16 pair products (vdpbf16ps), float sums
//
// Every kernel has a plain scalar version, the reference the vector ones are tested against.
// The other block types have no row-dot kernel: matmul widens their rows to float32.
#pragma once

#include <cstddef>
#include <cstdint>

#include "star/model/dtype.h"

namespace star::cpu {

enum class Isa {
  kScalar,
  kAvx2,    // AVX2 + FMA + F16C
  kAvx512,  // AVX-512 F/BW/VL with VNNI and BF16
};
const char* isa_name(Isa isa);
// The widest of the above that this CPU runs (read once from cpuid), capped by limit_isa.
Isa best_isa();
// Caps what best_isa() returns from now on, process-wide; kAvx512 lifts the cap. Tests force
// kScalar to run whole models on the scalar reference kernels.
void limit_isa(Isa isa);

using RowDot = float (*)(const std::byte* weight_row, const std::byte* activation_row, int64_t k);

struct DotKernel {
  DType activation_type;  // kQ8_0, kF32 or kBF16
  RowDot dot;
};

// The kernel for `weight_type` on `isa`, or nullptr when there is none (the type has no row-dot
// kernel, or the CPU lacks `isa`).
const DotKernel* find_dot_kernel(DType weight_type, Isa isa);

// Bytes of one activation row of k elements as `activation_type`.
size_t activation_row_bytes(DType activation_type, int64_t k);
// x[k] -> one activation row. Q8_0 as ggml's quantize_row_q8_0 (d = max|x|/127 stored as f16,
// q = round(x/d)); BF16 rounds to nearest even; F32 copies.
void quantize_activation_row(DType activation_type, const float* x, int64_t k, std::byte* out);

}  // namespace star::cpu
