#include "star/model/dtype.h"

#include <bit>
#include <cstring>

#include "star/quant/blocks.h"

namespace star {

static_assert(std::endian::native == std::endian::little, "starserve reads little-endian files in place");

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "F32";
    case DType::kF16: return "F16";
    case DType::kBF16: return "BF16";
    case DType::kQ4_0: return "Q4_0";
    case DType::kQ4_1: return "Q4_1";
    case DType::kQ5_0: return "Q5_0";
    case DType::kQ5_1: return "Q5_1";
    case DType::kQ8_0: return "Q8_0";
    case DType::kQ4_K: return "Q4_K";
    case DType::kQ5_K: return "Q5_K";
    case DType::kQ6_K: return "Q6_K";
  }
  return "?";
}

bool dtype_is_quantized(DType dtype) { return dtype_block_elements(dtype) > 1; }

int64_t dtype_block_elements(DType dtype) {
  switch (dtype) {
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16: return 1;
    case DType::kQ4_0:
    case DType::kQ4_1:
    case DType::kQ5_0:
    case DType::kQ5_1:
    case DType::kQ8_0: return quant::kLegacyBlock;
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K: return quant::kSuperBlock;
  }
  return 1;
}

size_t dtype_block_bytes(DType dtype) {
  switch (dtype) {
    case DType::kF32: return 4;
    case DType::kF16:
    case DType::kBF16: return 2;
    case DType::kQ4_0: return sizeof(quant::BlockQ4_0);
    case DType::kQ4_1: return sizeof(quant::BlockQ4_1);
    case DType::kQ5_0: return sizeof(quant::BlockQ5_0);
    case DType::kQ5_1: return sizeof(quant::BlockQ5_1);
    case DType::kQ8_0: return sizeof(quant::BlockQ8_0);
    case DType::kQ4_K: return sizeof(quant::BlockQ4_K);
    case DType::kQ5_K: return sizeof(quant::BlockQ5_K);
    case DType::kQ6_K: return sizeof(quant::BlockQ6_K);
  }
  return 0;
}

size_t dtype_size(DType dtype) { return dtype_block_bytes(dtype); }

int64_t dtype_row_bytes(DType dtype, int64_t k) {
  const int64_t block = dtype_block_elements(dtype);
  if (k < 0 || k % block != 0) return -1;
  return k / block * static_cast<int64_t>(dtype_block_bytes(dtype));
}

float f16_to_f32(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;
    } else {  // subnormal half: renormalise into a normal float
      uint32_t e = 127 - 15 + 1;
      while ((mantissa & 0x400u) == 0) {
        mantissa <<= 1;
        --e;
      }
      bits = sign | (e << 23) | ((mantissa & 0x3ffu) << 13);
    }
  } else if (exponent == 31) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else {
    bits = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  }
  return std::bit_cast<float>(bits);
}

float bf16_to_f32(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

// Keeps the bits above `shift`, rounding the dropped ones to nearest, ties to even.
static uint32_t round_shift_right(uint32_t value, int shift) {
  uint32_t kept = value >> shift;
  uint32_t dropped = value & ((1u << shift) - 1);
  uint32_t halfway = 1u << (shift - 1);
  if (dropped > halfway || (dropped == halfway && (kept & 1u))) ++kept;
  return kept;
}

uint16_t f32_to_f16(float value) {
  uint32_t x = std::bit_cast<uint32_t>(value);
  uint32_t sign = (x >> 16) & 0x8000u;
  int32_t exponent = static_cast<int32_t>((x >> 23) & 0xffu);
  uint32_t mantissa = x & 0x7fffffu;
  if (exponent == 255) {
    return static_cast<uint16_t>(sign | 0x7c00u | (mantissa ? 0x200u | (mantissa >> 13) : 0u));
  }
  int32_t e = exponent - 127 + 15;
  if (e >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
  if (e <= 0) {  // subnormal half (or zero); a carry out of the mantissa lands on the smallest normal
    if (e < -10) return static_cast<uint16_t>(sign);
    uint32_t full = mantissa | 0x800000u;
    return static_cast<uint16_t>(sign | round_shift_right(full, 14 - e));
  }
  // A carry out of the mantissa bumps the exponent, and past the largest finite value gives inf.
  uint32_t half = (static_cast<uint32_t>(e) << 10) | (mantissa >> 13);
  uint32_t dropped = mantissa & 0x1fffu;
  if (dropped > 0x1000u || (dropped == 0x1000u && (half & 1u))) ++half;
  return static_cast<uint16_t>(sign | half);
}

uint16_t f32_to_bf16(float value) {
  uint32_t x = std::bit_cast<uint32_t>(value);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

void convert_to_f32(DType dtype, const std::byte* src, size_t count, float* out) {
  if (dtype == DType::kF32) {
    std::memcpy(out, src, count * sizeof(float));
    return;
  }
  for (size_t i = 0; i < count; ++i) {
    uint16_t bits;
    std::memcpy(&bits, src + 2 * i, 2);
    out[i] = dtype == DType::kF16 ? f16_to_f32(bits) : bf16_to_f32(bits);
  }
}

std::vector<std::byte> encode_from_f32(std::span<const float> values, DType dtype) {
  std::vector<std::byte> bytes(values.size() * dtype_size(dtype));
  if (dtype == DType::kF32) {
    if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
    return bytes;
  }
  for (size_t i = 0; i < values.size(); ++i) {
    uint16_t bits = dtype == DType::kF16 ? f32_to_f16(values[i]) : f32_to_bf16(values[i]);
    std::memcpy(bytes.data() + 2 * i, &bits, 2);
  }
  return bytes;
}

}  // namespace star
