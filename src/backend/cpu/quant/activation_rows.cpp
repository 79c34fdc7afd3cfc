// Activation rows in the type a row-dot kernel multiplies in (star/backend/cpu/dot_kernels.h).
#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>

#include "star/backend/cpu/dot_kernels.h"
#include "star/quant/blocks.h"

namespace star::cpu {
namespace {

void quantize_q8_0(const float* x, int64_t k, std::byte* out) {
  for (int64_t b = 0; b < k / quant::kLegacyBlock; ++b) {
    const float* block = x + b * quant::kLegacyBlock;
    float amax = 0.f;
    for (int64_t j = 0; j < quant::kLegacyBlock; ++j) amax = std::max(amax, std::fabs(block[j]));
    const float d = amax / 127.f;
    const float inverse = d != 0.f ? 1.f / d : 0.f;
    quant::BlockQ8_0 q;
    q.d = f32_to_f16(d);
    for (int64_t j = 0; j < quant::kLegacyBlock; ++j) {
      q.qs[j] = static_cast<int8_t>(std::lround(block[j] * inverse));
    }
    std::memcpy(out + b * static_cast<int64_t>(sizeof q), &q, sizeof q);
  }
}

}  // namespace

size_t activation_row_bytes(DType activation_type, int64_t k) {
  return static_cast<size_t>(dtype_row_bytes(activation_type, k));
}

void quantize_activation_row(DType activation_type, const float* x, int64_t k, std::byte* out) {
  switch (activation_type) {
    case DType::kQ8_0: quantize_q8_0(x, k, out); return;
    case DType::kF32: std::memcpy(out, x, static_cast<size_t>(k) * sizeof(float)); return;
    case DType::kBF16:
      for (int64_t i = 0; i < k; ++i) {
        const uint16_t bits = f32_to_bf16(x[i]);
        std::memcpy(out + 2 * i, &bits, 2);
      }
      return;
    default: assert(false && "no row-dot kernel takes this activation type");
  }
}

}  // namespace star::cpu
