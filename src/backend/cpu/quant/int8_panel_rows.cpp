// The per-type half of the int8 panels (int8_panels.h): one stored row -> codes and scales. The
// layouts are ggml's (star/quant/blocks.h); the dequantization tests pin the same reading of them.
#include <cstring>

#include "int8_panels.h"
#include "q4_k_scales.h"
#include "q6_k_codes.h"
#include "star/quant/blocks.h"

namespace star::cpu {
namespace {

using quant::kLegacyBlock;
using quant::kSuperBlock;

template <class Block>
const Block* blocks_of(const std::byte* row) {
  return reinterpret_cast<const Block*>(row);
}

void unpack_q4_0(const std::byte* row, int64_t k, uint8_t* codes, float* scales, float*) {
  const auto* b = blocks_of<quant::BlockQ4_0>(row);
  for (int64_t i = 0; i < k / kLegacyBlock; ++i, codes += kLegacyBlock) {
    scales[i] = f16_to_f32(b[i].d);
    for (int j = 0; j < 16; ++j) {
      codes[j] = b[i].qs[j] & 0x0F;
      codes[j + 16] = b[i].qs[j] >> 4;
    }
  }
}

void unpack_q5_0(const std::byte* row, int64_t k, uint8_t* codes, float* scales, float*) {
  const auto* b = blocks_of<quant::BlockQ5_0>(row);
  for (int64_t i = 0; i < k / kLegacyBlock; ++i, codes += kLegacyBlock) {
    scales[i] = f16_to_f32(b[i].d);
    uint32_t qh;
    std::memcpy(&qh, b[i].qh, sizeof(qh));
    for (int j = 0; j < 16; ++j) {
      codes[j] = static_cast<uint8_t>((b[i].qs[j] & 0x0F) | (((qh >> j) & 1) << 4));
      codes[j + 16] = static_cast<uint8_t>((b[i].qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4));
    }
  }
}

void unpack_q8_0(const std::byte* row, int64_t k, uint8_t* codes, float* scales, float*) {
  const auto* b = blocks_of<quant::BlockQ8_0>(row);
  for (int64_t i = 0; i < k / kLegacyBlock; ++i, codes += kLegacyBlock) {
    scales[i] = f16_to_f32(b[i].d);
    for (int j = 0; j < 32; ++j) codes[j] = static_cast<uint8_t>(b[i].qs[j] + 128);
  }
}

// Q4_K and Q5_K: element l of sub-block 2p (2p + 1) in the low (high) nibble of qs[32p + l], Q5_K's
// fifth bit in bit 2p (2p + 1) of qh[l].
template <bool kFifthBit>
void unpack_k(const std::byte* row, int64_t k, uint8_t* codes, float* scales, float* mins) {
  for (int64_t s = 0; s < k / kSuperBlock; ++s) {
    const uint8_t* qs;
    const uint8_t* qh = nullptr;
    float d, dmin;
    SubBlockScales sm;
    if constexpr (kFifthBit) {
      const auto& b = blocks_of<quant::BlockQ5_K>(row)[s];
      qs = b.qs;
      qh = b.qh;
      d = f16_to_f32(b.d);
      dmin = f16_to_f32(b.dmin);
      sm = unpack_q4_k_scales(b.scales);
    } else {
      const auto& b = blocks_of<quant::BlockQ4_K>(row)[s];
      qs = b.qs;
      d = f16_to_f32(b.d);
      dmin = f16_to_f32(b.dmin);
      sm = unpack_q4_k_scales(b.scales);
    }
    for (int j = 0; j < 8; ++j) {
      scales[8 * s + j] = d * static_cast<float>(sm.scale[j]);
      mins[8 * s + j] = dmin * static_cast<float>(sm.min[j]);
    }
    uint8_t* out = codes + s * kSuperBlock;
    for (int p = 0; p < 4; ++p, out += 64) {
      for (int l = 0; l < 32; ++l) {
        const uint8_t q = qs[32 * p + l];
        uint8_t lo = q & 0x0F, hi = q >> 4;
        if constexpr (kFifthBit) {
          lo = static_cast<uint8_t>(lo | (((qh[l] >> (2 * p)) & 1) << 4));
          hi = static_cast<uint8_t>(hi | (((qh[l] >> (2 * p + 1)) & 1) << 4));
        }
        out[l] = lo;
        out[l + 32] = hi;
      }
    }
  }
}

// Q6_K: codes in [0, 63] (the stored ones, before ggml's − 32), 16 sub-blocks of 16 in element order.
void unpack_q6_k(const std::byte* row, int64_t k, uint8_t* codes, float* scales, float*) {
  for (int64_t s = 0; s < k / kSuperBlock; ++s, codes += kSuperBlock) {
    const auto& b = blocks_of<quant::BlockQ6_K>(row)[s];
    const float d = f16_to_f32(b.d);
    for (int j = 0; j < 16; ++j) scales[16 * s + j] = d * static_cast<float>(b.scales[j]);
    int8_t q[kSuperBlock];
    unpack_q6_k_codes(b, q);
    for (int j = 0; j < kSuperBlock; ++j) codes[j] = static_cast<uint8_t>(q[j] + 32);
  }
}

constexpr PanelRowFormat kQ4_0{32, 8, false, unpack_q4_0};
constexpr PanelRowFormat kQ5_0{32, 16, false, unpack_q5_0};
constexpr PanelRowFormat kQ8_0{32, 128, false, unpack_q8_0};
constexpr PanelRowFormat kQ4_K{32, 0, true, unpack_k<false>};
constexpr PanelRowFormat kQ5_K{32, 0, true, unpack_k<true>};
constexpr PanelRowFormat kQ6_K{16, 32, false, unpack_q6_k};

}  // namespace

const PanelRowFormat* find_panel_row_format(DType dtype) {
  switch (dtype) {
    case DType::kQ4_0: return &kQ4_0;
    case DType::kQ5_0: return &kQ5_0;
    case DType::kQ8_0: return &kQ8_0;
    case DType::kQ4_K: return &kQ4_K;
    case DType::kQ5_K: return &kQ5_K;
    case DType::kQ6_K: return &kQ6_K;
    default: return nullptr;
  }
}

}  // namespace star::cpu
