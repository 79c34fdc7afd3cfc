// The block layouts of GGUF's quantized tensor types, as ggml's `ggml-common.h` specifies them.
// A row of k elements is k / block_elements consecutive blocks; blocks never straddle rows.
// Scales `d` / `dmin` / `m` are IEEE half floats stored as raw bits (f16_to_f32 reads them).
//
//   legacy (32 elements a block):  x = d·q (q signed) or x = d·q + m (q unsigned)
//   K-quants (256 elements a block, 8 or 16 sub-blocks with 6- or 8-bit sub-scales):
//     x = d·scale_j·q − dmin·min_j  (Q4_K, Q5_K)      x = d·scale_j·q (Q6_K, q in [−32, 31])
#pragma once

#include <cstddef>
#include <cstdint>

namespace star::quant {

inline constexpr int64_t kLegacyBlock = 32;  // QK4_0 = QK4_1 = QK5_0 = QK5_1 = QK8_0
inline constexpr int64_t kSuperBlock = 256;  // QK_K
inline constexpr int64_t kScaleBytesK = 12;  // K_SCALE_SIZE: 8 six-bit scales and 8 six-bit mins

struct BlockQ4_0 {  // x = d · (nibble − 8); element j in the low nibble of qs[j], j+16 in the high
  uint16_t d;
  uint8_t qs[kLegacyBlock / 2];
};
struct BlockQ4_1 {  // x = d · nibble + m
  uint16_t d;
  uint16_t m;
  uint8_t qs[kLegacyBlock / 2];
};
struct BlockQ5_0 {  // x = d · ((nibble | fifth bit << 4) − 16); fifth bit j of qh (little-endian u32)
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[kLegacyBlock / 2];
};
struct BlockQ5_1 {  // x = d · (nibble | fifth bit << 4) + m
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[kLegacyBlock / 2];
};
struct BlockQ8_0 {  // x = d · q
  uint16_t d;
  int8_t qs[kLegacyBlock];
};
struct BlockQ8_1 {  // x = d · q; s = d · Σq (activations of the Q4_1 / Q5_1 dot products)
  uint16_t d;
  uint16_t s;
  int8_t qs[kLegacyBlock];
};
struct BlockQ4_K {  // 8 sub-blocks of 32; scales/mins packed 6-bit (get_scale_min_k4)
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kScaleBytesK];
  uint8_t qs[kSuperBlock / 2];
};
struct BlockQ5_K {  // as Q4_K plus a fifth bit per element in qh
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kScaleBytesK];
  uint8_t qh[kSuperBlock / 8];
  uint8_t qs[kSuperBlock / 2];
};
struct BlockQ6_K {  // 16 sub-blocks of 16, signed 8-bit scales; q = (4 low | 2 high bits) − 32
  uint8_t ql[kSuperBlock / 2];
  uint8_t qh[kSuperBlock / 4];
  int8_t scales[kSuperBlock / 16];
  uint16_t d;
};
struct BlockQ8_K {  // activations of the K-quant dot products; bsums[j] = Σ of qs over 16 elements
  float d;
  int8_t qs[kSuperBlock];
  int16_t bsums[kSuperBlock / 16];
};

static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22 && sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ8_0) == 34 && sizeof(BlockQ8_1) == 36);
static_assert(sizeof(BlockQ4_K) == 144 && sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210 && sizeof(BlockQ8_K) == 292);
static_assert(alignof(BlockQ4_0) <= 2 && alignof(BlockQ6_K) <= 2,
              "GGUF packs blocks back to back: only 2-byte alignment is guaranteed");

}  // namespace star::quant
