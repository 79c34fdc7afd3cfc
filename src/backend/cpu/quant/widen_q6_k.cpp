// Q6_K rows widened to float32 for the matmul's row and tile paths. The formula and its order are
// quant::dequantize_rows' (the results are bit-identical), decoding the codes first
// (q6_k_codes.h) so that the loop vectorizes. Prefill widens every Q6_K matrix (the output
// projection of llama.cpp's K-quant files among them) tile by tile through it.
#include "star/model/dtype.h"
#include "star/quant/blocks.h"
#include "q6_k_codes.h"
#include "widen_rows.h"

namespace star::cpu {

void widen_q6_k_row(const std::byte* src, int64_t k, float* out) {
  for (int64_t b = 0; b < k / quant::kSuperBlock; ++b, out += quant::kSuperBlock) {
    // Weight rows are 2-byte aligned (the loader copies any that are not), all a block needs.
    const auto& block = reinterpret_cast<const quant::BlockQ6_K*>(src)[b];
    int8_t q[quant::kSuperBlock];
    unpack_q6_k_codes(block, q);
    const float d = f16_to_f32(block.d);
    // Element e has scale scales[e / 16]: d · scale · q, multiplied in that order.
    for (int g = 0; g < quant::kSuperBlock / 16; ++g) {
      const float scale = d * static_cast<float>(block.scales[g]);
      for (int j = 0; j < 16; ++j) out[16 * g + j] = scale * static_cast<float>(q[16 * g + j]);
    }
  }
}

}  // namespace star::cpu
