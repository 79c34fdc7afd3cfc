// Activation rows in the form a row-dot kernel multiplies in (star/backend/cpu/dot_kernels.h).
#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>

#include "star/backend/cpu/dot_kernels.h"
#include "star/quant/blocks.h"

namespace star::cpu {
namespace {

using quant::kLegacyBlock;

// roundf's halves away from zero without its library call, in a form the compiler vectorizes
// (every matmul quantizes its activations): v − trunc(v) is exact.
inline float round_half_away(float v) {
  const float t = std::trunc(v);
  return std::fabs(v - t) >= 0.5f ? t + std::copysign(1.f, v) : t;
}

// One 32-element block: q = round(x / d), d = max|x| / 127 (unrounded); returns Σq.
int32_t quantize_int8_block(const float* x, float d, int8_t* q) {
  const float inverse = d != 0.f ? 1.f / d : 0.f;
  int32_t sum = 0;
  for (int64_t j = 0; j < kLegacyBlock; ++j) {
    q[j] = static_cast<int8_t>(round_half_away(x[j] * inverse));
    sum += q[j];
  }
  return sum;
}

float block_scale(const float* x) {
  float amax = 0.f;
  for (int64_t j = 0; j < kLegacyBlock; ++j) amax = std::max(amax, std::fabs(x[j]));
  return amax / 127.f;
}

void quantize_q8_0(const float* x, int64_t k, std::byte* out) {
  for (int64_t b = 0; b < k / kLegacyBlock; ++b) {
    const float* block = x + b * kLegacyBlock;
    const float d = block_scale(block);
    quant::BlockQ8_0 q;
    q.d = f32_to_f16(d);
    quantize_int8_block(block, d, q.qs);
    std::memcpy(out + b * static_cast<int64_t>(sizeof q), &q, sizeof q);
  }
}

void quantize_q8_1(const float* x, int64_t k, std::byte* out) {
  for (int64_t b = 0; b < k / kLegacyBlock; ++b) {
    const float* block = x + b * kLegacyBlock;
    const float d = block_scale(block);
    quant::BlockQ8_1 q;
    q.d = f32_to_f16(d);
    q.s = f32_to_f16(static_cast<float>(quantize_int8_block(block, d, q.qs)) * d);
    std::memcpy(out + b * static_cast<int64_t>(sizeof q), &q, sizeof q);
  }
}

template <typename Block>
void dequantize_int8_blocks(const std::byte* row, int64_t k, float* out) {
  for (int64_t b = 0; b < k / kLegacyBlock; ++b) {
    Block q;
    std::memcpy(&q, row + b * static_cast<int64_t>(sizeof q), sizeof q);
    const float d = f16_to_f32(q.d);
    for (int64_t j = 0; j < kLegacyBlock; ++j) out[b * kLegacyBlock + j] = d * q.qs[j];
  }
}

}  // namespace

const char* activation_type_name(ActivationType type) {
  switch (type) {
    case ActivationType::kF32: return "F32";
    case ActivationType::kBF16: return "BF16";
    case ActivationType::kQ8_0: return "Q8_0";
    case ActivationType::kQ8_1: return "Q8_1";
  }
  return "?";
}

size_t activation_row_bytes(ActivationType type, int64_t k) {
  switch (type) {
    case ActivationType::kF32: return static_cast<size_t>(k) * sizeof(float);
    case ActivationType::kBF16: return static_cast<size_t>(k) * sizeof(uint16_t);
    case ActivationType::kQ8_0: return static_cast<size_t>(k / kLegacyBlock) * sizeof(quant::BlockQ8_0);
    case ActivationType::kQ8_1: return static_cast<size_t>(k / kLegacyBlock) * sizeof(quant::BlockQ8_1);
  }
  return 0;
}

void quantize_activation_row(ActivationType type, const float* x, int64_t k, std::byte* out) {
  assert((type != ActivationType::kQ8_0 && type != ActivationType::kQ8_1) || k % kLegacyBlock == 0);
  switch (type) {
    case ActivationType::kQ8_0: quantize_q8_0(x, k, out); return;
    case ActivationType::kQ8_1: quantize_q8_1(x, k, out); return;
    case ActivationType::kF32: std::memcpy(out, x, static_cast<size_t>(k) * sizeof(float)); return;
    case ActivationType::kBF16:
      for (int64_t i = 0; i < k; ++i) {
        const uint16_t bits = f32_to_bf16(x[i]);
        std::memcpy(out + 2 * i, &bits, 2);
      }
      return;
  }
}

void dequantize_activation_row(ActivationType type, const std::byte* row, int64_t k, float* out) {
  switch (type) {
    case ActivationType::kQ8_0: dequantize_int8_blocks<quant::BlockQ8_0>(row, k, out); return;
    case ActivationType::kQ8_1: dequantize_int8_blocks<quant::BlockQ8_1>(row, k, out); return;
    case ActivationType::kF32: convert_to_f32(DType::kF32, row, static_cast<size_t>(k), out); return;
    case ActivationType::kBF16: convert_to_f32(DType::kBF16, row, static_cast<size_t>(k), out); return;
  }
}

}  // namespace star::cpu
