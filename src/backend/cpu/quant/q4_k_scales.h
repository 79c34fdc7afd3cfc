// The 8 six-bit sub-block scales and mins that Q4_K and Q5_K pack into 12 bytes (ggml's
// get_scale_min_k4), unpacked all at once for the row dots. quant::dequantize_rows unpacks them
// one at a time through a function of its own; the row-dot tests compare the two.
#pragma once

#include <cstdint>

#include "star/quant/blocks.h"

namespace star::cpu {

struct SubBlockScales {
  uint8_t scale[8];
  uint8_t min[8];
};

inline SubBlockScales unpack_q4_k_scales(const uint8_t packed[quant::kScaleBytesK]) {
  SubBlockScales s;
  for (int j = 0; j < 4; ++j) {
    s.scale[j] = packed[j] & 63;
    s.min[j] = packed[j + 4] & 63;
    // Sub-blocks 4..7: low 4 bits in bytes 8..11, the top 2 bits in the spare bits of bytes 0..7.
    s.scale[j + 4] = static_cast<uint8_t>((packed[j + 8] & 0x0F) | ((packed[j] >> 6) << 4));
    s.min[j + 4] = static_cast<uint8_t>((packed[j + 8] >> 4) | ((packed[j + 4] >> 6) << 4));
  }
  return s;
}

}  // namespace star::cpu
