// Reference row dots for Q4_1, Q5_0 and Q5_1 weights: integer sums exact per block, float
// accumulation in block order. The offset types (w = d·q + m) take Q8_1 activations, whose
// s = d_x·Σq_x turns the offset's share m·Σx̂ into one product per block, as in ggml; Q4_1 also
// takes Q16 activations, the same sums over 16-bit codes.
#include <cstring>

#include "q16_block.h"
#include "row_dots.h"
#include "star/model/dtype.h"
#include "star/quant/blocks.h"

namespace star::cpu::row_dots {
namespace {

using quant::kLegacyBlock;

template <typename Block>
Block block_at(const std::byte* row, int64_t b) {
  Block block;
  std::memcpy(&block, row + b * static_cast<int64_t>(sizeof(Block)), sizeof(Block));
  return block;
}

// Element j's 5-bit code: its nibble (low for j < 16, high after) and bit j of qh.
template <typename Block>
int32_t q5_code(const Block& w, int64_t j) {
  uint32_t qh;
  std::memcpy(&qh, w.qh, 4);
  const int32_t nibble = j < kLegacyBlock / 2 ? (w.qs[j] & 0x0f) : (w.qs[j - kLegacyBlock / 2] >> 4);
  return nibble | static_cast<int32_t>(((qh >> j) & 1u) << 4);
}

}  // namespace

float q4_1_q8_1_scalar(const std::byte* w, const std::byte* x, int64_t k) {
  float sum = 0.f;
  for (int64_t b = 0; b < k / kLegacyBlock; ++b) {
    const auto wb = block_at<quant::BlockQ4_1>(w, b);
    const auto xb = block_at<quant::BlockQ8_1>(x, b);
    int32_t sumi = 0;
    for (int64_t j = 0; j < kLegacyBlock / 2; ++j) {
      sumi += (wb.qs[j] & 0x0f) * xb.qs[j];
      sumi += (wb.qs[j] >> 4) * xb.qs[j + kLegacyBlock / 2];
    }
    sum += static_cast<float>(sumi) * (f16_to_f32(wb.d) * f16_to_f32(xb.d)) + f16_to_f32(wb.m) * f16_to_f32(xb.s);
  }
  return sum;
}

float q4_1_q16_scalar(const std::byte* w, const std::byte* x, int64_t k) {
  float sum = 0.f;
  for (int64_t b = 0; b < k / kLegacyBlock; ++b) {
    const auto wb = block_at<quant::BlockQ4_1>(w, b);
    const auto xb = block_at<BlockQ16>(x, b);
    int32_t sumi = 0;
    for (int64_t j = 0; j < kLegacyBlock / 2; ++j) {
      sumi += (wb.qs[j] & 0x0f) * q16_code(xb, j);
      sumi += (wb.qs[j] >> 4) * q16_code(xb, j + kLegacyBlock / 2);
    }
    sum += static_cast<float>(sumi) * (f16_to_f32(wb.d) * xb.d) + f16_to_f32(wb.m) * xb.s;
  }
  return sum;
}

float q5_0_q8_0_scalar(const std::byte* w, const std::byte* x, int64_t k) {
  float sum = 0.f;
  for (int64_t b = 0; b < k / kLegacyBlock; ++b) {
    const auto wb = block_at<quant::BlockQ5_0>(w, b);
    const auto xb = block_at<quant::BlockQ8_0>(x, b);
    int32_t sumi = 0;
    for (int64_t j = 0; j < kLegacyBlock; ++j) sumi += (q5_code(wb, j) - 16) * xb.qs[j];
    sum += static_cast<float>(sumi) * (f16_to_f32(wb.d) * f16_to_f32(xb.d));
  }
  return sum;
}

float q5_1_q8_1_scalar(const std::byte* w, const std::byte* x, int64_t k) {
  float sum = 0.f;
  for (int64_t b = 0; b < k / kLegacyBlock; ++b) {
    const auto wb = block_at<quant::BlockQ5_1>(w, b);
    const auto xb = block_at<quant::BlockQ8_1>(x, b);
    int32_t sumi = 0;
    for (int64_t j = 0; j < kLegacyBlock; ++j) sumi += q5_code(wb, j) * xb.qs[j];
    sum += static_cast<float>(sumi) * (f16_to_f32(wb.d) * f16_to_f32(xb.d)) + f16_to_f32(wb.m) * f16_to_f32(xb.s);
  }
  return sum;
}

}  // namespace star::cpu::row_dots
