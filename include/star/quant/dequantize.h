// Stored rows -> float32 and back, for every DType (plain and block-quantized).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "star/model/dtype.h"

namespace star::quant {

// out[rows · k] = the values of `rows` rows of k elements stored back to back as `dtype`
// (dtype_row_bytes(dtype, k) bytes a row; k a whole number of blocks). Bit for bit what ggml's
// dequantize_row_* (and the gguf Python package) give. Rows that are not whole blocks (or
// rows < 0) are a caller's bug, since the GGUF reader refuses such tensors: std::invalid_argument.
void dequantize_rows(DType dtype, const std::byte* src, int64_t rows, int64_t k, float* out);

// The inverse, for writers (star-mkmodel, tests): rows of k floats -> stored rows. Deterministic.
// Legacy types byte for byte as ggml's quantize_row_*_ref; K-quants by a range-covering quantizer
// with a stated error bound (src/quant/quantize_kquants.cpp, docs/model-formats.md).
std::vector<std::byte> quantize_rows(DType dtype, const float* values, int64_t rows, int64_t k);

// The same into `out` (rows · dtype_row_bytes(dtype, k) bytes), for writers on a hot path (the KV
// cache quantizes every appended row).
void quantize_rows_into(DType dtype, const float* values, int64_t rows, int64_t k, std::byte* out);

}  // namespace star::quant
