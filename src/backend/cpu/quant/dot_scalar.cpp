// The reference row dots: integer sums exact per block, float accumulation in block order.
#include <cstring>

#include "q16_block.h"
#include "q6_k_dot.h"
#include "row_dots.h"
#include "star/model/dtype.h"
#include "star/quant/blocks.h"

namespace star::cpu::row_dots {
namespace {

using quant::BlockQ4_0;
using quant::BlockQ8_0;
using quant::kLegacyBlock;

// Blocks are only 2-byte aligned in the file: copy each one out rather than cast.
template <typename Block>
Block block_at(const std::byte* row, int64_t b) {
  Block block;
  std::memcpy(&block, row + b * static_cast<int64_t>(sizeof(Block)), sizeof(Block));
  return block;
}

uint16_t u16_at(const std::byte* p, int64_t i) {
  uint16_t v;
  std::memcpy(&v, p + 2 * i, 2);
  return v;
}

}  // namespace

float q4_0_q8_0_scalar(const std::byte* w, const std::byte* x, int64_t k) {
  float sum = 0.f;
  for (int64_t b = 0; b < k / kLegacyBlock; ++b) {
    const auto wb = block_at<BlockQ4_0>(w, b);
    const auto xb = block_at<BlockQ8_0>(x, b);
    int32_t sumi = 0;
    for (int64_t j = 0; j < kLegacyBlock / 2; ++j) {
      sumi += ((wb.qs[j] & 0x0f) - 8) * xb.qs[j];
      sumi += ((wb.qs[j] >> 4) - 8) * xb.qs[j + kLegacyBlock / 2];
    }
    sum += static_cast<float>(sumi) * (f16_to_f32(wb.d) * f16_to_f32(xb.d));
  }
  return sum;
}

float q8_0_q8_0_scalar(const std::byte* w, const std::byte* x, int64_t k) {
  float sum = 0.f;
  for (int64_t b = 0; b < k / kLegacyBlock; ++b) {
    const auto wb = block_at<BlockQ8_0>(w, b);
    const auto xb = block_at<BlockQ8_0>(x, b);
    int32_t sumi = 0;
    for (int64_t j = 0; j < kLegacyBlock; ++j) sumi += wb.qs[j] * xb.qs[j];
    sum += static_cast<float>(sumi) * (f16_to_f32(wb.d) * f16_to_f32(xb.d));
  }
  return sum;
}

float f16_f32_scalar(const std::byte* w, const std::byte* x, int64_t k) {
  float sum = 0.f;
  for (int64_t i = 0; i < k; ++i) {
    float xi;
    std::memcpy(&xi, x + 4 * i, 4);
    sum += f16_to_f32(u16_at(w, i)) * xi;
  }
  return sum;
}

float bf16_bf16_scalar(const std::byte* w, const std::byte* x, int64_t k) {
  float sum = 0.f;
  for (int64_t i = 0; i < k; ++i) sum += bf16_to_f32(u16_at(w, i)) * bf16_to_f32(u16_at(x, i));
  return sum;
}

float q6_k_q8_0_scalar(const std::byte* w, const std::byte* x, int64_t k) {
  return q6_k_q8_0_dot(w, x, k, f16_to_f32);
}

float q8_0_q16_scalar(const std::byte* w, const std::byte* x, int64_t k) {
  float sum = 0.f;
  for (int64_t b = 0; b < k / kLegacyBlock; ++b) {
    const auto wb = block_at<BlockQ8_0>(w, b);
    const auto xb = block_at<BlockQ16>(x, b);
    int32_t sumi = 0;
    for (int64_t j = 0; j < kLegacyBlock; ++j) sumi += wb.qs[j] * q16_code(xb, j);
    sum += static_cast<float>(sumi) * (f16_to_f32(wb.d) * xb.d);
  }
  return sum;
}

// Per 16-element sub-block the exact Σ q·x (|q| <= 32 against 16-bit codes fits int32), then
// (d·scale·d_x) times it in float.
float q6_k_q16_scalar(const std::byte* w, const std::byte* x, int64_t k) {
  float sum = 0.f;
  for (int64_t b = 0; b < k / quant::kSuperBlock; ++b) {
    const auto block = block_at<quant::BlockQ6_K>(w, b);
    int8_t q[quant::kSuperBlock];
    unpack_q6_k_codes(block, q);
    const float d = f16_to_f32(block.d);
    for (int g = 0; g < quant::kSuperBlock / 16; ++g) {
      const auto xb = block_at<BlockQ16>(x, b * (quant::kSuperBlock / kLegacyBlock) + g / 2);
      int32_t sumi = 0;
      for (int j = 0; j < 16; ++j) sumi += q[16 * g + j] * q16_code(xb, 16 * (g % 2) + j);
      sum += (d * static_cast<float>(block.scales[g]) * xb.d) * static_cast<float>(sumi);
    }
  }
  return sum;
}

}  // namespace star::cpu::row_dots
