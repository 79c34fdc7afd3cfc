// Stored rows -> float32 and back, for every DType (plain and block-quantized).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "star/model/dtype.h"

namespace star::quant {

// out[rows · k] = the values of `rows` rows of k elements stored back to back as `dtype`
// (dtype_row_bytes(dtype, k) bytes a row; k a whole number of blocks). Bit for bit what ggml's
// dequantize_row_* (and the gguf Python package) give.
void dequantize_rows(DType dtype, const std::byte* src, int64_t rows, int64_t k, float* out);

// The inverse, for writers (star-mkmodel, tests): rows of k floats -> stored rows. Deterministic.
std::vector<std::byte> quantize_rows(DType dtype, const float* values, int64_t rows, int64_t k);

}  // namespace star::quant
