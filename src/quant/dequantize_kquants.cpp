// The 256-element super-block types: a half-float super-scale times small per-sub-block scales.
// Products are formed in ggml's order, (d · scale) · q − (dmin · min), never fused (see
// src/CMakeLists.txt: this folder compiles with -ffp-contract=off).
#include <cstdint>

#include "block_codecs.h"
#include "star/model/dtype.h"

namespace star::quant {

void unpack_scale_min_k4(const uint8_t* packed, int j, uint8_t& scale, uint8_t& min) {
  if (j < 4) {
    scale = packed[j] & 63;
    min = packed[j + 4] & 63;
  } else {  // low 4 bits in bytes 8..11, the top 2 bits in the spare bits of bytes 0..7
    scale = static_cast<uint8_t>((packed[j + 4] & 0x0F) | ((packed[j - 4] >> 6) << 4));
    min = static_cast<uint8_t>((packed[j + 4] >> 4) | ((packed[j] >> 6) << 4));
  }
}

namespace {

struct SubBlockAffine {
  float scale;   // d · scale_j
  float offset;  // dmin · min_j
};

SubBlockAffine sub_block_affine(float d, float dmin, const uint8_t* packed, int j) {
  uint8_t scale, min;
  unpack_scale_min_k4(packed, j, scale, min);
  return {d * static_cast<float>(scale), dmin * static_cast<float>(min)};
}

}  // namespace

// 64 elements per step: 32 low nibbles (sub-block 2i), then the same 32 bytes' high nibbles (2i+1).
void dequantize_block(const BlockQ4_K& block, float* out) {
  const float d = f16_to_f32(block.d);
  const float dmin = f16_to_f32(block.dmin);
  const uint8_t* q = block.qs;
  for (int pair = 0; pair < 4; ++pair, q += 32, out += 64) {
    const SubBlockAffine lo = sub_block_affine(d, dmin, block.scales, 2 * pair);
    const SubBlockAffine hi = sub_block_affine(d, dmin, block.scales, 2 * pair + 1);
    for (int l = 0; l < 32; ++l) out[l] = lo.scale * static_cast<float>(q[l] & 0x0F) - lo.offset;
    for (int l = 0; l < 32; ++l) out[l + 32] = hi.scale * static_cast<float>(q[l] >> 4) - hi.offset;
  }
}

// As Q4_K; bit 2i of qh[l] is the fifth bit of element l of sub-block 2i, bit 2i+1 of sub-block 2i+1.
void dequantize_block(const BlockQ5_K& block, float* out) {
  const float d = f16_to_f32(block.d);
  const float dmin = f16_to_f32(block.dmin);
  const uint8_t* q = block.qs;
  for (int pair = 0; pair < 4; ++pair, q += 32, out += 64) {
    const SubBlockAffine lo = sub_block_affine(d, dmin, block.scales, 2 * pair);
    const SubBlockAffine hi = sub_block_affine(d, dmin, block.scales, 2 * pair + 1);
    const uint8_t lo_bit = static_cast<uint8_t>(1u << (2 * pair));
    const uint8_t hi_bit = static_cast<uint8_t>(2u << (2 * pair));
    for (int l = 0; l < 32; ++l) {
      const int value = (q[l] & 0x0F) + ((block.qh[l] & lo_bit) ? 16 : 0);
      out[l] = lo.scale * static_cast<float>(value) - lo.offset;
    }
    for (int l = 0; l < 32; ++l) {
      const int value = (q[l] >> 4) + ((block.qh[l] & hi_bit) ? 16 : 0);
      out[l + 32] = hi.scale * static_cast<float>(value) - hi.offset;
    }
  }
}

// Two halves of 128: element l + 32·s (s = 0..3) takes ql's low nibble (s even) or high nibble
// (s odd) of byte l + 32·(s mod 2), and bits 2s..2s+1 of qh[l]; 16 elements share a scale.
void dequantize_block(const BlockQ6_K& block, float* out) {
  const float d = f16_to_f32(block.d);
  const uint8_t* ql = block.ql;
  const uint8_t* qh = block.qh;
  const int8_t* scales = block.scales;
  for (int half = 0; half < 2; ++half, ql += 64, qh += 32, scales += 8, out += 128) {
    for (int l = 0; l < 32; ++l) {
      const int sub = l / 16;
      const int q1 = ((ql[l] & 0x0F) | ((qh[l] & 3) << 4)) - 32;
      const int q2 = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
      const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      out[l] = d * static_cast<float>(scales[sub]) * static_cast<float>(q1);
      out[l + 32] = d * static_cast<float>(scales[sub + 2]) * static_cast<float>(q2);
      out[l + 64] = d * static_cast<float>(scales[sub + 4]) * static_cast<float>(q3);
      out[l + 96] = d * static_cast<float>(scales[sub + 6]) * static_cast<float>(q4);
    }
  }
}

}  // namespace star::quant
