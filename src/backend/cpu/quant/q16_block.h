// One block of ActivationType::kQ16 (star/backend/cpu/dot_kernels.h): 32 sixteen-bit codes kept as
// an unsigned low and a signed high byte plane, so that int8 dot-product instructions multiply
// them (q = 256·hi + lo, each plane's sum exact in int32).
#pragma once

#include <cstdint>

#include "star/quant/blocks.h"

namespace star::cpu {

struct BlockQ16 {
  float d;  // max|x| / 32767
  float s;  // d·Σq
  uint8_t lo[quant::kLegacyBlock];
  int8_t hi[quant::kLegacyBlock];
};
static_assert(sizeof(BlockQ16) == 72);

inline int32_t q16_code(const BlockQ16& b, int64_t j) { return 256 * b.hi[j] + b.lo[j]; }

}  // namespace star::cpu
