// ggml's reference quantizers for the 32-element types (quantize_row_q*_ref): the same float32
// operations in the same order, so the blocks are the bytes ggml and the gguf package write.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "block_codecs.h"
#include "star/model/dtype.h"

namespace star::quant {
namespace {

constexpr int kHalf = kLegacyBlock / 2;

// The element of largest magnitude, with its sign (the first one on ties).
float signed_absmax(const float* x) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < kLegacyBlock; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

struct Range {
  float min;
  float max;
};

Range value_range(const float* x) {
  Range range{std::numeric_limits<float>::max(), -std::numeric_limits<float>::max()};
  for (int j = 0; j < kLegacyBlock; ++j) {
    range.min = std::fmin(range.min, x[j]);
    range.max = std::fmax(range.max, x[j]);
  }
  return range;
}

float inverse_or_zero(float d) { return d != 0.0f ? 1.0f / d : 0.0f; }

// ggml truncates toward zero after adding the rounding offset, then caps at the top code.
int truncated_code(float value, int top) { return std::min(top, static_cast<int>(value)); }

void store_fifth_bits(uint32_t bits, uint8_t* qh) { std::memcpy(qh, &bits, sizeof bits); }

}  // namespace

void quantize_block(const float* x, BlockQ4_0& block) {
  const float d = signed_absmax(x) / -8.0f;
  const float id = inverse_or_zero(d);
  block.d = f32_to_f16(d);
  for (int j = 0; j < kHalf; ++j) {
    const int lo = truncated_code(x[j] * id + 8.5f, 15);
    const int hi = truncated_code(x[j + kHalf] * id + 8.5f, 15);
    block.qs[j] = static_cast<uint8_t>(lo | (hi << 4));
  }
}

void quantize_block(const float* x, BlockQ4_1& block) {
  const Range range = value_range(x);
  const float d = (range.max - range.min) / 15.0f;
  const float id = inverse_or_zero(d);
  block.d = f32_to_f16(d);
  block.m = f32_to_f16(range.min);
  for (int j = 0; j < kHalf; ++j) {
    const int lo = truncated_code((x[j] - range.min) * id + 0.5f, 15);
    const int hi = truncated_code((x[j + kHalf] - range.min) * id + 0.5f, 15);
    block.qs[j] = static_cast<uint8_t>(lo | (hi << 4));
  }
}

void quantize_block(const float* x, BlockQ5_0& block) {
  const float d = signed_absmax(x) / -16.0f;
  const float id = inverse_or_zero(d);
  block.d = f32_to_f16(d);
  uint32_t qh = 0;
  for (int j = 0; j < kHalf; ++j) {
    const int lo = truncated_code(x[j] * id + 16.5f, 31);
    const int hi = truncated_code(x[j + kHalf] * id + 16.5f, 31);
    block.qs[j] = static_cast<uint8_t>((lo & 0x0F) | ((hi & 0x0F) << 4));
    qh |= static_cast<uint32_t>(lo >> 4) << j;
    qh |= static_cast<uint32_t>(hi >> 4) << (j + kHalf);
  }
  store_fifth_bits(qh, block.qh);
}

// ggml leaves this code uncapped; (max − min)·id + 0.5 stays below 32, so the cap (the gguf
// package's clip) never changes a code.
void quantize_block(const float* x, BlockQ5_1& block) {
  const Range range = value_range(x);
  const float d = (range.max - range.min) / 31.0f;
  const float id = inverse_or_zero(d);
  block.d = f32_to_f16(d);
  block.m = f32_to_f16(range.min);
  uint32_t qh = 0;
  for (int j = 0; j < kHalf; ++j) {
    const int lo = truncated_code((x[j] - range.min) * id + 0.5f, 31);
    const int hi = truncated_code((x[j + kHalf] - range.min) * id + 0.5f, 31);
    block.qs[j] = static_cast<uint8_t>((lo & 0x0F) | ((hi & 0x0F) << 4));
    qh |= static_cast<uint32_t>(lo >> 4) << j;
    qh |= static_cast<uint32_t>(hi >> 4) << (j + kHalf);
  }
  store_fifth_bits(qh, block.qh);
}

void quantize_block(const float* x, BlockQ8_0& block) {
  float amax = 0.0f;
  for (int j = 0; j < kLegacyBlock; ++j) amax = std::fmax(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float id = inverse_or_zero(d);
  block.d = f32_to_f16(d);
  for (int j = 0; j < kLegacyBlock; ++j) block.qs[j] = static_cast<int8_t>(std::round(x[j] * id));
}

}  // namespace star::quant
