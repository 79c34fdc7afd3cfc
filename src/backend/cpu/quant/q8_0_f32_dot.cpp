// Q8_0 weight rows against float32 activations: the output projection's product, where rounding
// the activations to int8 flips the top token (see matmul_float_activations). Each block's codes
// are widened to float and dotted with x in float32, then scaled by d once; no weight row is
// written back widened, so the product streams the stored bytes at memory speed. The AVX2 and
// AVX-512 kernels are the 1x1 case of their register tiles (tile_avx2.cpp, tile_avx512.cpp).
#include <cstring>

#include "row_dots.h"
#include "star/model/dtype.h"
#include "star/quant/blocks.h"

namespace star::cpu::row_dots {
namespace {

using quant::BlockQ8_0;
using quant::kLegacyBlock;

}  // namespace

float q8_0_f32_scalar(const std::byte* w, const std::byte* x, int64_t k) {
  float sum = 0.f;
  for (int64_t b = 0; b < k / kLegacyBlock; ++b) {
    BlockQ8_0 block;
    std::memcpy(&block, w + b * static_cast<int64_t>(sizeof block), sizeof block);
    float partial = 0.f;
    for (int64_t j = 0; j < kLegacyBlock; ++j) {
      float xj;
      std::memcpy(&xj, x + 4 * (b * kLegacyBlock + j), 4);
      partial += static_cast<float>(block.qs[j]) * xj;
    }
    sum += f16_to_f32(block.d) * partial;
  }
  return sum;
}

}  // namespace star::cpu::row_dots
