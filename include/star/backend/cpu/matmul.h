// Matrix products against a weight in its stored type (F32, F16, BF16, GGUF blocks).
#pragma once

#include <cstdint>

#include "star/model/weight_tensor.h"

namespace star::cpu {

// Up to this many activation rows a product reads each weight row once, in its stored form: the
// row-dot kernels of star/backend/cpu/dot_kernels.h where the type has one, else the row widened
// in L1 and dotted in float32. Past it, tiles of the weight are widened to float32 and multiplied
// with sgemm, where the arithmetic, not the weight bytes, is the cost.
inline constexpr int64_t kRowDotMaxRows = 8;

// y[n, m] = x[n, k] · w[m, k]^T, or y += ... when `accumulate`, where w is [m, k] of any DType.
// x and y are row-major float32 and must not overlap. F32 weights go straight to BLAS.
void matmul(const float* x, int64_t n, const WeightTensor& w, float* y, bool accumulate = false);

// matmul (not accumulating) with x kept in float32 whatever w's type: never a row-dot kernel that
// rounds the activations (to Q8_0 or BF16); few rows of Q8_0 and F16 take the float-activation
// kernels (find_float_dot_kernel), the other types widened rows. For the output projection, where that rounding flips
// the top token: SmolLM2's tied Q8_0 embedding with Q8_0 activations agrees with float32
// transformers on the top token at 98.2% of positions, against float32 on every other product.
void matmul_float_activations(const float* x, int64_t n, const WeightTensor& w, float* y);

// out[count, cols] = rows [first, first + count) of w as float32 (exact for every stored type).
void dequantize_weight_rows(const WeightTensor& w, int64_t first, int64_t count, float* out);

}  // namespace star::cpu
