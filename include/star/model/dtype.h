// DType: the element types of stored tensors that starserve reads: F32, F16, BF16 and GGUF's block
// quantized types (star/quant/blocks.h), and the conversions between the plain ones and float32.
// Everything is little-endian, as in safetensors and GGUF.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace star {

enum class DType { kF32, kF16, kBF16, kQ4_0, kQ4_1, kQ5_0, kQ5_1, kQ8_0, kQ4_K, kQ5_K, kQ6_K };

// "F32", "F16", "BF16" (the safetensors spelling), "Q4_0", ..., "Q6_K" (ggml's).
const char* dtype_name(DType dtype);
// A block type stores elements in groups of dtype_block_elements (32 or 256) taking
// dtype_block_bytes; a plain type is a block of one element.
bool dtype_is_quantized(DType dtype);
int64_t dtype_block_elements(DType dtype);
size_t dtype_block_bytes(DType dtype);
// Bytes per element of a plain type (4 or 2); only defined for plain types.
size_t dtype_size(DType dtype);
// Bytes of a row of k elements, or -1 when k is not a whole number of blocks.
int64_t dtype_row_bytes(DType dtype, int64_t k);

float f16_to_f32(uint16_t bits);   // exact (every half is a float)
float bf16_to_f32(uint16_t bits);  // exact
uint16_t f32_to_f16(float value);  // round to nearest even; overflow -> inf, NaN stays NaN
uint16_t f32_to_bf16(float value); // round to nearest even; NaN stays NaN

// out[i] = element i of `src` as float32. src: count elements of a plain `dtype`, any alignment.
void convert_to_f32(DType dtype, const std::byte* src, size_t count, float* out);

// values as little-endian elements of a plain `dtype`: values.size() * dtype_size(dtype) bytes.
std::vector<std::byte> encode_from_f32(std::span<const float> values, DType dtype);

}  // namespace star
