// Stored rows widened to float32 by the matmul where quant::dequantize_rows is slower; the values
// are the same bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>

namespace star::cpu {

// One row of k Q6_K elements (k a multiple of 256).
void widen_q6_k_row(const std::byte* src, int64_t k, float* out);

}  // namespace star::cpu
