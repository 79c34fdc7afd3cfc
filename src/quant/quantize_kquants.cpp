// Quantizers for the K-quants. Simpler than ggml's (no weighted search for the best scale and
// min): each sub-block's range is covered exactly, so every element is rounded to its nearest code
// and the error has a bound that holds for every input of normal-half magnitude:
//
//   Q4_K / Q5_K (nmax 15 / 31), sub-block j of 32, lo_j = min(0, min x), range_j = max x − lo_j:
//     Dmin ≤ (1 + 2^-10) · max_j(−lo_j) / 63               (half rounded up: one ulp at most)
//     m_j  = Dmin · ceil(−lo_j / Dmin)  ∈ [−lo_j, −lo_j + Dmin]
//     s_j  = (max x + m_j) / nmax ≤ (range_j + Dmin) / nmax
//     D    ≤ (1 + 2^-10) · max_j s_j / 63,   d_j = D · ceil(s_j / D) ∈ [s_j, s_j + D]
//     so [−m_j, nmax·d_j − m_j] holds the sub-block and |x − x̂| ≤ d_j / 2 ≤ (s_j + D) / 2.
//   Q6_K, sub-block j of 16, codes −32..31 used symmetrically (−31..31):
//     s_j = max|x| / 31,  D ≤ (1 + 2^-10) · max_j s_j / 127,  d_j ∈ [s_j, s_j + D],
//     |x − x̂| ≤ d_j / 2 ≤ (s_j + D) / 2.
// (plus float32 rounding of the products, a few ulps of the values involved). Rounding the
// sub-scales up costs at most one step in 63 (127) of the largest; ggml's search gains more
// accuracy on real weights but gives no such bound.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "block_codecs.h"
#include "star/model/dtype.h"

namespace star::quant {
namespace {

constexpr int kSubBlocksK4 = 8;  // Q4_K, Q5_K: 8 sub-blocks of 32
constexpr int kSubBlockK4 = 32;
constexpr int kSubBlocksQ6 = 16;  // Q6_K: 16 sub-blocks of 16
constexpr int kSubBlockQ6 = 16;

// The smallest half not below `value` (value ≥ 0 and finite in half range): scales rounded up
// keep every sub-block inside the range its codes can reach.
uint16_t half_at_least(float value) {
  uint16_t half = f32_to_f16(value);
  if (f16_to_f32(half) < value) ++half;
  return half;
}

// ceil(value / step) capped at `top`; 0 when the step is 0 (a sub-block of zeros).
int steps_covering(float value, float step, int top) {
  if (step <= 0.0f) return 0;
  return std::min(top, static_cast<int>(std::ceil(value / step)));
}

int nearest_code(float value, float step, int lowest, int highest) {
  if (step == 0.0f) return 0;
  const long code = std::lrint(value / step);
  return static_cast<int>(std::clamp<long>(code, lowest, highest));
}

// Codes 0..nmax of a 256-element super-block with 8 sub-blocks (Q4_K nmax 15, Q5_K nmax 31),
// and the packed scales: d, dmin and 12 bytes of 6-bit sub-scales and mins.
struct AffineSuperBlock {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kScaleBytesK];
  uint8_t codes[kSuperBlock];
};

// ggml's packing: sub-blocks 0..3 in the low 6 bits of bytes 0..3 (scale) and 4..7 (min);
// sub-blocks 4..7 in the nibbles of bytes 8..11, their top 2 bits in the spare bits of 0..7.
void pack_scales_mins(const int* scale, const int* min, uint8_t* packed) {
  std::memset(packed, 0, kScaleBytesK);
  for (int j = 0; j < kSubBlocksK4; ++j) {
    if (j < 4) {
      packed[j] = static_cast<uint8_t>(scale[j]);
      packed[j + 4] = static_cast<uint8_t>(min[j]);
    } else {
      packed[j + 4] = static_cast<uint8_t>((scale[j] & 0x0F) | ((min[j] & 0x0F) << 4));
      packed[j - 4] |= static_cast<uint8_t>((scale[j] >> 4) << 6);
      packed[j] |= static_cast<uint8_t>((min[j] >> 4) << 6);
    }
  }
}

AffineSuperBlock quantize_affine(const float* x, int nmax) {
  float low[kSubBlocksK4], high[kSubBlocksK4];
  float largest_min = 0.0f;
  for (int j = 0; j < kSubBlocksK4; ++j) {
    const float* sub = x + j * kSubBlockK4;
    low[j] = std::min(0.0f, *std::min_element(sub, sub + kSubBlockK4));
    high[j] = *std::max_element(sub, sub + kSubBlockK4);
    largest_min = std::max(largest_min, -low[j]);
  }
  AffineSuperBlock out{};
  out.dmin = half_at_least(largest_min / 63.0f);
  const float dmin = f16_to_f32(out.dmin);
  int min_steps[kSubBlocksK4], scale_steps[kSubBlocksK4];
  float sub_min[kSubBlocksK4], wanted_scale[kSubBlocksK4];
  float largest_scale = 0.0f;
  for (int j = 0; j < kSubBlocksK4; ++j) {
    min_steps[j] = steps_covering(-low[j], dmin, 63);
    sub_min[j] = dmin * static_cast<float>(min_steps[j]);
    wanted_scale[j] = (high[j] + sub_min[j]) / static_cast<float>(nmax);
    largest_scale = std::max(largest_scale, wanted_scale[j]);
  }
  out.d = half_at_least(largest_scale / 63.0f);
  const float d = f16_to_f32(out.d);
  for (int j = 0; j < kSubBlocksK4; ++j) {
    scale_steps[j] = steps_covering(wanted_scale[j], d, 63);
    const float sub_scale = d * static_cast<float>(scale_steps[j]);
    for (int l = 0; l < kSubBlockK4; ++l) {
      const int i = j * kSubBlockK4 + l;
      out.codes[i] = static_cast<uint8_t>(nearest_code(x[i] + sub_min[j], sub_scale, 0, nmax));
    }
  }
  pack_scales_mins(scale_steps, min_steps, out.scales);
  return out;
}

}  // namespace

// Codes of sub-blocks 2i and 2i+1 share the 32 bytes qs[32i..32i+31]: low and high nibbles.
void quantize_block(const float* x, BlockQ4_K& block) {
  const AffineSuperBlock q = quantize_affine(x, 15);
  block.d = q.d;
  block.dmin = q.dmin;
  std::memcpy(block.scales, q.scales, kScaleBytesK);
  for (int pair = 0; pair < 4; ++pair) {
    const uint8_t* codes = q.codes + 64 * pair;
    for (int l = 0; l < 32; ++l) block.qs[32 * pair + l] = static_cast<uint8_t>(codes[l] | (codes[l + 32] << 4));
  }
}

// As Q4_K; the fifth bit of element l of sub-block s goes to bit s of qh[l].
void quantize_block(const float* x, BlockQ5_K& block) {
  const AffineSuperBlock q = quantize_affine(x, 31);
  block.d = q.d;
  block.dmin = q.dmin;
  std::memcpy(block.scales, q.scales, kScaleBytesK);
  std::memset(block.qh, 0, sizeof block.qh);
  for (int pair = 0; pair < 4; ++pair) {
    const uint8_t* codes = q.codes + 64 * pair;
    for (int l = 0; l < 32; ++l) {
      block.qs[32 * pair + l] = static_cast<uint8_t>((codes[l] & 0x0F) | ((codes[l + 32] & 0x0F) << 4));
      block.qh[l] |= static_cast<uint8_t>(((codes[l] >> 4) << (2 * pair)) | ((codes[l + 32] >> 4) << (2 * pair + 1)));
    }
  }
}

void quantize_block(const float* x, BlockQ6_K& block) {
  float wanted_scale[kSubBlocksQ6];
  float largest_scale = 0.0f;
  for (int j = 0; j < kSubBlocksQ6; ++j) {
    float amax = 0.0f;
    for (int l = 0; l < kSubBlockQ6; ++l) amax = std::max(amax, std::fabs(x[j * kSubBlockQ6 + l]));
    wanted_scale[j] = amax / 31.0f;
    largest_scale = std::max(largest_scale, wanted_scale[j]);
  }
  block.d = half_at_least(largest_scale / 127.0f);
  const float d = f16_to_f32(block.d);
  uint8_t codes[kSuperBlock];  // signed code + 32, 0..63
  for (int j = 0; j < kSubBlocksQ6; ++j) {
    const int steps = steps_covering(wanted_scale[j], d, 127);
    block.scales[j] = static_cast<int8_t>(steps);
    const float sub_scale = d * static_cast<float>(steps);
    for (int l = 0; l < kSubBlockQ6; ++l) {
      const int i = j * kSubBlockQ6 + l;
      codes[i] = static_cast<uint8_t>(nearest_code(x[i], sub_scale, -32, 31) + 32);
    }
  }
  // Element l + 32·s of a half (s = 0..3): low 4 bits in ql (s = 0, 1 low nibbles of bytes l and
  // l + 32; s = 2, 3 their high nibbles), top 2 bits in bits 2s..2s+1 of qh[l].
  for (int half = 0; half < 2; ++half) {
    const uint8_t* c = codes + 128 * half;
    uint8_t* ql = block.ql + 64 * half;
    uint8_t* qh = block.qh + 32 * half;
    for (int l = 0; l < 32; ++l) {
      ql[l] = static_cast<uint8_t>((c[l] & 0x0F) | ((c[l + 64] & 0x0F) << 4));
      ql[l + 32] = static_cast<uint8_t>((c[l + 32] & 0x0F) | ((c[l + 96] & 0x0F) << 4));
      qh[l] = static_cast<uint8_t>((c[l] >> 4) | ((c[l + 32] >> 4) << 2) | ((c[l + 64] >> 4) << 4) |
                                   ((c[l + 96] >> 4) << 6));
    }
  }
}

}  // namespace star::quant
