#include "star/model/kv_dtype.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "star/model/dtype.h"
#include "star/quant/blocks.h"

namespace star {
namespace {

using quant::BlockQ8_0;
constexpr int64_t kQ8Block = quant::kLegacyBlock;
static_assert(sizeof(BlockQ8_0) == 34, "kv_bytes counts Q8_0 blocks as 34 bytes");

// ggml's quantize_row_q8_0_ref: d = max|x| / 127, q = round(x / d), the scale stored as f16.
void quantize_q8_0(const float* x, int64_t count, std::byte* dst) {
  for (int64_t b = 0; b < count / kQ8Block; ++b) {
    const float* xb = x + b * kQ8Block;
    float amax = 0.f;
    for (int64_t j = 0; j < kQ8Block; ++j) amax = std::max(amax, std::fabs(xb[j]));
    const float d = amax / 127.f;
    const float id = d != 0.f ? 1.f / d : 0.f;
    BlockQ8_0 block;
    block.d = f32_to_f16(d);
    for (int64_t j = 0; j < kQ8Block; ++j) block.qs[j] = static_cast<int8_t>(std::round(xb[j] * id));
    std::memcpy(dst + b * sizeof(BlockQ8_0), &block, sizeof(block));
  }
}

void dequantize_q8_0(const std::byte* src, int64_t count, float* y) {
  for (int64_t b = 0; b < count / kQ8Block; ++b) {
    BlockQ8_0 block;
    std::memcpy(&block, src + b * sizeof(BlockQ8_0), sizeof(block));
    const float d = f16_to_f32(block.d);
    for (int64_t j = 0; j < kQ8Block; ++j) y[b * kQ8Block + j] = static_cast<float>(block.qs[j]) * d;
  }
}

}  // namespace

const char* kv_dtype_name(KvDType dtype) {
  switch (dtype) {
    case KvDType::kF32: return "f32";
    case KvDType::kBF16: return "bf16";
    case KvDType::kQ8_0: return "q8_0";
  }
  return "?";
}

std::vector<std::string> kv_dtype_names() { return {"f32", "bf16", "q8_0"}; }

Result<KvDType> parse_kv_dtype(std::string_view name) {
  for (KvDType dtype : {KvDType::kF32, KvDType::kBF16, KvDType::kQ8_0}) {
    if (name == kv_dtype_name(dtype)) return dtype;
  }
  return invalid_argument("--kv-dtype: '" + std::string(name) + "' (f32, bf16 or q8_0)");
}

Result<KvDType> resolve_kv_dtype(std::string_view backend, std::string_view kv_dtype) {
  const bool cuda = backend == "cuda";
  if (kv_dtype.empty()) return cuda ? KvDType::kBF16 : KvDType::kF32;
  Result<KvDType> dtype = parse_kv_dtype(kv_dtype);
  if (!dtype.ok()) return dtype.status();
  if (cuda && *dtype != KvDType::kBF16) {
    return invalid_argument("--kv-dtype " + std::string(kv_dtype) + ": the cuda backend keeps its KV in bf16 only");
  }
  return *dtype;
}

Status check_kv_dtype(KvDType dtype, int64_t head_dim) {
  if (dtype == KvDType::kQ8_0 && head_dim % kQ8Block != 0) {
    return invalid_argument("--kv-dtype q8_0 stores each head's row in blocks of 32, but this model's head_dim is " +
                            std::to_string(head_dim) + " (use f32 or bf16)");
  }
  return ok_status();
}

void encode_kv(KvDType dtype, const float* src, int64_t count, std::byte* dst) {
  switch (dtype) {
    case KvDType::kF32:
      std::memcpy(dst, src, static_cast<size_t>(count) * sizeof(float));
      return;
    case KvDType::kBF16:
      for (int64_t i = 0; i < count; ++i) {
        const uint16_t bits = f32_to_bf16(src[i]);
        std::memcpy(dst + 2 * i, &bits, 2);
      }
      return;
    case KvDType::kQ8_0:
      quantize_q8_0(src, count, dst);
      return;
  }
}

void decode_kv(KvDType dtype, const std::byte* src, int64_t count, float* dst) {
  switch (dtype) {
    case KvDType::kF32:
      std::memcpy(dst, src, static_cast<size_t>(count) * sizeof(float));
      return;
    case KvDType::kBF16:
      for (int64_t i = 0; i < count; ++i) {
        uint16_t bits;
        std::memcpy(&bits, src + 2 * i, 2);
        dst[i] = bf16_to_f32(bits);
      }
      return;
    case KvDType::kQ8_0:
      dequantize_q8_0(src, count, dst);
      return;
  }
}

void round_kv(KvDType dtype, float* values, int64_t count) {
  if (dtype == KvDType::kF32) return;
  // A chunk of whole Q8_0 blocks at a time keeps the scratch on the stack.
  constexpr int64_t kChunk = 8 * kQ8Block;
  std::byte stored[kChunk * 4];
  for (int64_t first = 0; first < count; first += kChunk) {
    const int64_t n = std::min(kChunk, count - first);
    encode_kv(dtype, values + first, n, stored);
    decode_kv(dtype, stored, n, values + first);
  }
}

}  // namespace star
