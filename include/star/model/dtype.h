// DType: the element types of stored tensors that starserve reads (F32, F16, BF16), and the
// conversions between them and float32. Everything is little-endian, as in safetensors and GGUF.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace star {

enum class DType { kF32, kF16, kBF16 };

const char* dtype_name(DType dtype);  // "F32", "F16", "BF16" (the safetensors spelling)
size_t dtype_size(DType dtype);       // bytes per element

float f16_to_f32(uint16_t bits);   // exact (every half is a float)
float bf16_to_f32(uint16_t bits);  // exact
uint16_t f32_to_f16(float value);  // round to nearest even; overflow -> inf, NaN stays NaN
uint16_t f32_to_bf16(float value); // round to nearest even; NaN stays NaN

// out[i] = element i of `src` as float32. src: count elements of `dtype`, any alignment.
void convert_to_f32(DType dtype, const std::byte* src, size_t count, float* out);

// values as little-endian `dtype` elements: values.size() * dtype_size(dtype) bytes.
std::vector<std::byte> encode_from_f32(std::span<const float> values, DType dtype);

}  // namespace star
