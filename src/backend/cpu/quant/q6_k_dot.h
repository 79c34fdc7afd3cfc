// Q6_K weight rows against Q8_0 activations. A Q8_0 block of 32 covers two Q6_K sub-blocks of 16,
// so a block's integer sum Σ scale_s · Σ_j q6_j · q8_j is exact, and one float multiply-add by
// d_w · d_x per 32 elements follows (finer activation scales than llama.cpp's Q8_K, same cost).
// The scalar reference; the vector kernels (q6_k_dot_body.h) unpack the codes in registers.
#pragma once

#include <cstddef>
#include <cstdint>

#include "q6_k_codes.h"
#include "star/model/dtype.h"
#include "star/quant/blocks.h"

namespace star::cpu::row_dots {

// HalfToFloat: f16 bits -> float (F16C's _cvtsh_ss where the target has it; the software
// conversion costs as much as the integer work of a block).
template <typename HalfToFloat>
inline float q6_k_q8_0_dot(const std::byte* w, const std::byte* x, int64_t k, HalfToFloat half_to_float) {
  using quant::BlockQ6_K;
  using quant::BlockQ8_0;
  const auto* xb = reinterpret_cast<const BlockQ8_0*>(x);
  float sum = 0.f;
  for (int64_t b = 0; b < k / quant::kSuperBlock; ++b) {
    const BlockQ6_K& block = reinterpret_cast<const BlockQ6_K*>(w)[b];
    int8_t q[quant::kSuperBlock];
    unpack_q6_k_codes(block, q);
    const float d = half_to_float(block.d);
    for (int s = 0; s < quant::kSuperBlock / quant::kLegacyBlock; ++s) {
      const BlockQ8_0& a = xb[b * (quant::kSuperBlock / quant::kLegacyBlock) + s];
      int32_t low = 0, high = 0;
      for (int j = 0; j < 16; ++j) low += q[32 * s + j] * a.qs[j];
      for (int j = 16; j < 32; ++j) high += q[32 * s + j] * a.qs[j];
      const int32_t block_sum = block.scales[2 * s] * low + block.scales[2 * s + 1] * high;
      sum += static_cast<float>(block_sum) * (d * half_to_float(a.d));
    }
  }
  return sum;
}

}  // namespace star::cpu::row_dots
