// Q6_K's 256 six-bit codes of one block as signed integers in [−32, 31], element order. Both the
// row dot and the row widening decode into a local array first: the compiler vectorizes that,
// where stores straight through the block's byte pointers may alias them and stay scalar.
#pragma once

#include <cstdint>

#include "star/quant/blocks.h"

namespace star::cpu {

inline void unpack_q6_k_codes(const quant::BlockQ6_K& block, int8_t q[quant::kSuperBlock]) {
  for (int half = 0; half < 2; ++half) {
    const uint8_t* ql = block.ql + 64 * half;
    const uint8_t* qh = block.qh + 32 * half;
    int8_t* qo = q + 128 * half;
    for (int l = 0; l < 32; ++l) {
      qo[l] = static_cast<int8_t>(((ql[l] & 0x0F) | ((qh[l] & 3) << 4)) - 32);
      qo[l + 32] = static_cast<int8_t>(((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32);
      qo[l + 64] = static_cast<int8_t>(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
      qo[l + 96] = static_cast<int8_t>(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
    }
  }
}

}  // namespace star::cpu
