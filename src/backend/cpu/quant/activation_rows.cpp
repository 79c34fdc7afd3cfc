// Activation rows in the form a row-dot kernel multiplies in (star/backend/cpu/dot_kernels.h).
#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>

#include "star/backend/cpu/dot_kernels.h"
#include "q16_block.h"
#include "star/quant/blocks.h"
#include "../simd.h"

namespace star::cpu {
namespace {

using quant::kLegacyBlock;

using simd::IVec;
using simd::kLanes;
using simd::Vec;
using CodeVec = int8_t __attribute__((vector_size(kLanes)));

// round(v) with roundf's halves away from zero, for |v| < 2^23 (libm's roundf is a call per
// element, and every matmul quantizes its activations): the conversion truncates, v − trunc(v) is
// exact, and |v − trunc(v)| >= 1/2 steps once away from zero.
IVec round_half_away(Vec v) {
  const IVec truncated = __builtin_convertvector(v, IVec);
  const Vec fraction = v - __builtin_convertvector(truncated, Vec);
  const IVec away = simd::as_float(simd::as_int(fraction) & 0x7fffffff) >= simd::splat(0.5f);
  const IVec step = v < simd::splat(0.f) ? IVec{} - 1 : IVec{} + 1;
  return truncated + (away & step);
}

// max|x| over one 32-element block.
float block_max(const float* x) {
  Vec amax{};
  for (int64_t j = 0; j < kLegacyBlock; j += kLanes) {
    amax = simd::max(amax, simd::as_float(simd::as_int(simd::load(x + j)) & 0x7fffffff));
  }
  return simd::reduce_max(amax);
}

// d = max|x| / 127 over one 32-element block.
float block_scale(const float* x) { return block_max(x) / 127.f; }

// One block: q = round(x / d) with d unrounded; returns Σq.
int32_t quantize_int8_block(const float* x, float d, int8_t* q) {
  const Vec inverse = simd::splat(d != 0.f ? 1.f / d : 0.f);
  IVec sum{};
  for (int64_t j = 0; j < kLegacyBlock; j += kLanes) {
    const IVec rounded = round_half_away(simd::load(x + j) * inverse);
    // Narrowed as one vector (|rounded| <= 127): a store per lane was most of a decode step's
    // rounding of its 16 rows.
    const CodeVec codes = __builtin_convertvector(rounded, CodeVec);
    std::memcpy(q + j, &codes, sizeof(codes));
    sum += rounded;
  }
  int32_t total = 0;
  for (int i = 0; i < kLanes; ++i) total += sum[i];
  return total;
}

void quantize_q8_0(const float* x, int64_t k, std::byte* out) {
  for (int64_t b = 0; b < k / kLegacyBlock; ++b) {
    const float* block = x + b * kLegacyBlock;
    const float d = block_scale(block);
    quant::BlockQ8_0 q;
    q.d = f32_to_f16(d);
    quantize_int8_block(block, d, q.qs);
    std::memcpy(out + b * static_cast<int64_t>(sizeof q), &q, sizeof q);
  }
}

void quantize_q8_1(const float* x, int64_t k, std::byte* out) {
  for (int64_t b = 0; b < k / kLegacyBlock; ++b) {
    const float* block = x + b * kLegacyBlock;
    const float d = block_scale(block);
    quant::BlockQ8_1 q;
    q.d = f32_to_f16(d);
    q.s = f32_to_f16(static_cast<float>(quantize_int8_block(block, d, q.qs)) * d);
    std::memcpy(out + b * static_cast<int64_t>(sizeof q), &q, sizeof q);
  }
}

// Q16: as Q8_0 with d = max|x| / 32767 kept in float32; |x·(1/d)| exceeds 32767 by at most a few
// ulps, which round back to 32767.
void quantize_q16(const float* x, int64_t k, std::byte* out) {
  for (int64_t b = 0; b < k / kLegacyBlock; ++b) {
    const float* block = x + b * kLegacyBlock;
    BlockQ16 q;
    q.d = block_max(block) / 32767.f;
    const Vec inverse = simd::splat(q.d != 0.f ? 1.f / q.d : 0.f);
    IVec sum{};
    for (int64_t j = 0; j < kLegacyBlock; j += kLanes) {
      const IVec code = round_half_away(simd::load(block + j) * inverse);
      const IVec low = code & 0xff;
      for (int i = 0; i < kLanes; ++i) {
        q.lo[j + i] = static_cast<uint8_t>(low[i]);
        q.hi[j + i] = static_cast<int8_t>((code[i] - low[i]) / 256);
      }
      sum += code;
    }
    int32_t total = 0;
    for (int i = 0; i < kLanes; ++i) total += sum[i];
    q.s = q.d * static_cast<float>(total);
    std::memcpy(out + b * static_cast<int64_t>(sizeof q), &q, sizeof q);
  }
}

void dequantize_q16(const std::byte* row, int64_t k, float* out) {
  for (int64_t b = 0; b < k / kLegacyBlock; ++b) {
    BlockQ16 q;
    std::memcpy(&q, row + b * static_cast<int64_t>(sizeof q), sizeof q);
    for (int64_t j = 0; j < kLegacyBlock; ++j) out[b * kLegacyBlock + j] = q.d * static_cast<float>(q16_code(q, j));
  }
}

template <typename Block>
void dequantize_int8_blocks(const std::byte* row, int64_t k, float* out) {
  for (int64_t b = 0; b < k / kLegacyBlock; ++b) {
    Block q;
    std::memcpy(&q, row + b * static_cast<int64_t>(sizeof q), sizeof q);
    const float d = f16_to_f32(q.d);
    for (int64_t j = 0; j < kLegacyBlock; ++j) out[b * kLegacyBlock + j] = d * q.qs[j];
  }
}

}  // namespace

const char* activation_type_name(ActivationType type) {
  switch (type) {
    case ActivationType::kF32: return "F32";
    case ActivationType::kBF16: return "BF16";
    case ActivationType::kQ8_0: return "Q8_0";
    case ActivationType::kQ8_1: return "Q8_1";
    case ActivationType::kQ16: return "Q16";
  }
  return "?";
}

size_t activation_row_bytes(ActivationType type, int64_t k) {
  switch (type) {
    case ActivationType::kF32: return static_cast<size_t>(k) * sizeof(float);
    case ActivationType::kBF16: return static_cast<size_t>(k) * sizeof(uint16_t);
    case ActivationType::kQ8_0: return static_cast<size_t>(k / kLegacyBlock) * sizeof(quant::BlockQ8_0);
    case ActivationType::kQ8_1: return static_cast<size_t>(k / kLegacyBlock) * sizeof(quant::BlockQ8_1);
    case ActivationType::kQ16: return static_cast<size_t>(k / kLegacyBlock) * sizeof(BlockQ16);
  }
  return 0;
}

void quantize_activation_row(ActivationType type, const float* x, int64_t k, std::byte* out) {
  assert((type != ActivationType::kQ8_0 && type != ActivationType::kQ8_1 && type != ActivationType::kQ16) ||
         k % kLegacyBlock == 0);
  switch (type) {
    case ActivationType::kQ8_0: quantize_q8_0(x, k, out); return;
    case ActivationType::kQ16: quantize_q16(x, k, out); return;
    case ActivationType::kQ8_1: quantize_q8_1(x, k, out); return;
    case ActivationType::kF32: std::memcpy(out, x, static_cast<size_t>(k) * sizeof(float)); return;
    case ActivationType::kBF16:
      for (int64_t i = 0; i < k; ++i) {
        const uint16_t bits = f32_to_bf16(x[i]);
        std::memcpy(out + 2 * i, &bits, 2);
      }
      return;
  }
}

void dequantize_activation_row(ActivationType type, const std::byte* row, int64_t k, float* out) {
  switch (type) {
    case ActivationType::kQ8_0: dequantize_int8_blocks<quant::BlockQ8_0>(row, k, out); return;
    case ActivationType::kQ8_1: dequantize_int8_blocks<quant::BlockQ8_1>(row, k, out); return;
    case ActivationType::kQ16: dequantize_q16(row, k, out); return;
    case ActivationType::kF32: convert_to_f32(DType::kF32, row, static_cast<size_t>(k), out); return;
    case ActivationType::kBF16: convert_to_f32(DType::kBF16, row, static_cast<size_t>(k), out); return;
  }
}

}  // namespace star::cpu
