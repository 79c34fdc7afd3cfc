#include "star/model/kv_dtype.h"

#include <algorithm>
#include <cstring>

#include "star/model/dtype.h"
#include "star/quant/blocks.h"
#include "star/quant/dequantize.h"

namespace star {
namespace {

constexpr int64_t kQ8Block = quant::kLegacyBlock;

// The KV cache stores rows in the project's one encoding of each type (ggml's Q8_0 for q8_0).
DType storage_dtype(KvDType dtype) {
  switch (dtype) {
    case KvDType::kF32: return DType::kF32;
    case KvDType::kBF16: return DType::kBF16;
    case KvDType::kQ8_0: return DType::kQ8_0;
  }
  return DType::kF32;
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
  quant::quantize_rows_into(storage_dtype(dtype), src, 1, count, dst);
}

void decode_kv(KvDType dtype, const std::byte* src, int64_t count, float* dst) {
  quant::dequantize_rows(storage_dtype(dtype), src, 1, count, dst);
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
