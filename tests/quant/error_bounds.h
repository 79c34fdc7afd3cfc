// How far a value may move when a block of values is stored as a DType and read back
// (quant::quantize_rows then quant::dequantize_rows), from the block's values alone. Derived in
// src/quant/quantize_kquants.cpp (K-quants) and docs/model-formats.md (all types).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "star/model/dtype.h"

namespace star::testing {

// Bounds for a block of x stored as `dtype` (for a plain type the rounding to it is exact and
// checked separately: 0). Half a step of the block's grid; one more step where ggml's Q4_0 / Q5_0
// clamp the extreme opposite the block's scale; the scales' rounding to half (2^-11 relative,
// times the largest code, or an absolute 2^-25 per code for subnormal halves: the 1e-5 term);
// float32 rounding (1e-6 relative).
inline double block_error_bound(DType dtype, const float* x, int64_t n) {
  const auto [lo, hi] = std::minmax_element(x, x + n);
  const double amax = std::max(std::fabs(*lo), std::fabs(*hi));
  const double range = static_cast<double>(*hi) - *lo;
  const double range0 = static_cast<double>(*hi) - std::min(0.0f, *lo);  // K-quants: the min is never positive
  const double rounding = 1e-6 * amax + 1e-5;
  switch (dtype) {
    case DType::kQ4_0: return amax * (1.0 / 8 + 1.0 / 256) + rounding;
    case DType::kQ5_0: return amax * (1.0 / 16 + 1.0 / 256) + rounding;
    case DType::kQ8_0: return amax * (1.0 / 254 + 1.0 / 512) + rounding;
    case DType::kQ4_1: return range * (1.0 / 30 + 1.0 / 1024) + std::fabs(*lo) / 1024 + rounding;
    case DType::kQ5_1: return range * (1.0 / 62 + 1.0 / 1024) + std::fabs(*lo) / 1024 + rounding;
    case DType::kQ4_K: return range0 * (1 + 2.1 / 63) / 30 + rounding;
    case DType::kQ5_K: return range0 * (1 + 2.1 / 63) / 62 + rounding;
    case DType::kQ6_K: return amax * (1 + 1.1 / 127) / 62 + rounding;
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16: return 0.0;
  }
  return 0.0;
}

}  // namespace star::testing
