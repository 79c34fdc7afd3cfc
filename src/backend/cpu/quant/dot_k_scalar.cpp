// The reference row dots of Q4_K and Q5_K weights against Q8_0 activations. A sub-block of 32
// weights, x = d·scale_s·q − dmin·min_s with q unsigned, lines up with one Q8_0 activation block
// (d_a, a[32]), so per sub-block
//   Σ_j x_j · d_a·a_j = (d·scale_s·d_a) · Σ_j q_j·a_j − (dmin·min_s·d_a) · Σ_j a_j
// with both integer sums exact; the float sums follow in sub-block order.
#include <cstring>

#include "q4_k_scales.h"
#include "row_dots.h"
#include "star/model/dtype.h"
#include "star/quant/blocks.h"

namespace star::cpu::row_dots {
namespace {

using quant::BlockQ4_K;
using quant::BlockQ5_K;
using quant::BlockQ8_0;
using quant::kLegacyBlock;
using quant::kSuperBlock;

// The unsigned code of element l (0..31) of sub-block s: its nibble, plus Q5_K's fifth bit.
int code(const BlockQ4_K& b, int s, int l) { return (b.qs[32 * (s / 2) + l] >> (4 * (s % 2))) & 0x0F; }
int code(const BlockQ5_K& b, int s, int l) {
  return ((b.qs[32 * (s / 2) + l] >> (4 * (s % 2))) & 0x0F) | (((b.qh[l] >> s) & 1) << 4);
}

template <typename Block>
float k_dot(const std::byte* w, const std::byte* x, int64_t k) {
  float sum = 0.f;
  for (int64_t b = 0; b < k / kSuperBlock; ++b) {
    Block block;  // blocks are 2-byte aligned in the file: copy out rather than cast
    std::memcpy(&block, w + b * static_cast<int64_t>(sizeof(Block)), sizeof(Block));
    const SubBlockScales scales = unpack_q4_k_scales(block.scales);
    const float d = f16_to_f32(block.d), dmin = f16_to_f32(block.dmin);
    for (int s = 0; s < kSuperBlock / kLegacyBlock; ++s) {
      BlockQ8_0 a;
      std::memcpy(&a, x + (b * (kSuperBlock / kLegacyBlock) + s) * static_cast<int64_t>(sizeof a), sizeof a);
      int32_t dot = 0, a_sum = 0;
      for (int l = 0; l < kLegacyBlock; ++l) {
        dot += code(block, s, l) * a.qs[l];
        a_sum += a.qs[l];
      }
      const float da = f16_to_f32(a.d);
      sum += d * static_cast<float>(scales.scale[s]) * da * static_cast<float>(dot) -
             dmin * static_cast<float>(scales.min[s]) * da * static_cast<float>(a_sum);
    }
  }
  return sum;
}

}  // namespace

float q4_k_q8_0_scalar(const std::byte* w, const std::byte* x, int64_t k) { return k_dot<BlockQ4_K>(w, x, k); }
float q5_k_q8_0_scalar(const std::byte* w, const std::byte* x, int64_t k) { return k_dot<BlockQ5_K>(w, x, k); }

}  // namespace star::cpu::row_dots
