// The 32-element types: one half-float scale (and for _1 types an offset m) per block.
#include <cstdint>
#include <cstring>

#include "block_codecs.h"
#include "star/model/dtype.h"

namespace star::quant {
namespace {

constexpr int kHalf = kLegacyBlock / 2;

// Bit j of qh is the fifth bit of element j (the little-endian u32 ggml reads).
uint32_t fifth_bits(const uint8_t* qh) {
  uint32_t bits;
  std::memcpy(&bits, qh, sizeof bits);
  return bits;
}

}  // namespace

void dequantize_block(const BlockQ4_0& block, float* out) {
  const float d = f16_to_f32(block.d);
  for (int j = 0; j < kHalf; ++j) {
    out[j] = static_cast<float>((block.qs[j] & 0x0F) - 8) * d;
    out[j + kHalf] = static_cast<float>((block.qs[j] >> 4) - 8) * d;
  }
}

void dequantize_block(const BlockQ4_1& block, float* out) {
  const float d = f16_to_f32(block.d);
  const float m = f16_to_f32(block.m);
  for (int j = 0; j < kHalf; ++j) {
    out[j] = static_cast<float>(block.qs[j] & 0x0F) * d + m;
    out[j + kHalf] = static_cast<float>(block.qs[j] >> 4) * d + m;
  }
}

void dequantize_block(const BlockQ5_0& block, float* out) {
  const float d = f16_to_f32(block.d);
  const uint32_t qh = fifth_bits(block.qh);
  for (int j = 0; j < kHalf; ++j) {
    const int high_lo = static_cast<int>((qh >> j) & 1u) << 4;
    const int high_hi = static_cast<int>((qh >> (j + kHalf)) & 1u) << 4;
    out[j] = static_cast<float>(((block.qs[j] & 0x0F) | high_lo) - 16) * d;
    out[j + kHalf] = static_cast<float>(((block.qs[j] >> 4) | high_hi) - 16) * d;
  }
}

void dequantize_block(const BlockQ5_1& block, float* out) {
  const float d = f16_to_f32(block.d);
  const float m = f16_to_f32(block.m);
  const uint32_t qh = fifth_bits(block.qh);
  for (int j = 0; j < kHalf; ++j) {
    const int high_lo = static_cast<int>((qh >> j) & 1u) << 4;
    const int high_hi = static_cast<int>((qh >> (j + kHalf)) & 1u) << 4;
    out[j] = static_cast<float>((block.qs[j] & 0x0F) | high_lo) * d + m;
    out[j + kHalf] = static_cast<float>((block.qs[j] >> 4) | high_hi) * d + m;
  }
}

void dequantize_block(const BlockQ8_0& block, float* out) {
  const float d = f16_to_f32(block.d);
  for (int j = 0; j < kLegacyBlock; ++j) out[j] = static_cast<float>(block.qs[j]) * d;
}

}  // namespace star::quant
