// KvDType: the element type the KV cache stores keys and values in (--kv-dtype). One spelling for
// the flags, the engine and ModelInfo:
//   f32   exact, 4 bytes an element (the default)
//   bf16  f32_to_bf16 (round to nearest even), 2 bytes an element
//   q8_0  GGUF's Q8_0 over each head's row of head_dim elements: blocks of 32 int8 with an f16
//         scale (quant::BlockQ8_0), 34 bytes per 32 elements; head_dim must be a multiple of 32
// Rows are quantized once, when they are stored; attention reads them as stored.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "star/common/status.h"

namespace star {

enum class KvDType { kF32, kBF16, kQ8_0 };

const char* kv_dtype_name(KvDType dtype);  // "f32", "bf16", "q8_0"
std::vector<std::string> kv_dtype_names();
// The inverse of kv_dtype_name; anything else is INVALID_ARGUMENT naming --kv-dtype.
Result<KvDType> parse_kv_dtype(std::string_view name);
// --kv-dtype beside --backend, for the tools: empty picks the backend's own (f32 on "cpu"; bf16 on
// "cuda", whose KV is bf16 only, so f32 and q8_0 are refused there). Cheap: call it before loading.
Result<KvDType> resolve_kv_dtype(std::string_view backend, std::string_view kv_dtype);
inline constexpr const char* kKvDTypeHelp =
    "KV cache element type: f32 (cpu default, exact), bf16 (cuda's only type), q8_0 (head_dim a multiple of 32)";

// Ok when head rows of head_dim elements can be stored as `dtype`; otherwise INVALID_ARGUMENT
// naming --kv-dtype and head_dim.
Status check_kv_dtype(KvDType dtype, int64_t head_dim);

// Bytes of `elements` consecutive stored elements; for q8_0 `elements` is a multiple of 32.
inline int64_t kv_bytes(KvDType dtype, int64_t elements) {
  switch (dtype) {
    case KvDType::kF32: return elements * 4;
    case KvDType::kBF16: return elements * 2;
    case KvDType::kQ8_0: return elements / 32 * 34;
  }
  return 0;
}

// Stored K or V rows [tokens, Hkv, d] of one layer, from some element on.
struct KvRows {
  const std::byte* data = nullptr;
  KvDType dtype = KvDType::kF32;

  static KvRows f32(const float* rows) { return {reinterpret_cast<const std::byte*>(rows), KvDType::kF32}; }
  // The rows from element `element` on (a multiple of 32 for q8_0, e.g. a row or head boundary).
  KvRows at(int64_t element) const { return {data + kv_bytes(dtype, element), dtype}; }
};

// dst = `count` elements of src stored as `dtype` (count a multiple of 32 for q8_0: the blocks run
// back to back, so a head's row of head_dim elements is head_dim / 32 blocks).
void encode_kv(KvDType dtype, const float* src, int64_t count, std::byte* dst);
// The stored elements as float32: exact for f32 and bf16, d · q for q8_0.
void decode_kv(KvDType dtype, const std::byte* src, int64_t count, float* dst);
// values <- decode_kv(encode_kv(values)): what attention reads after the values are stored.
void round_kv(KvDType dtype, float* values, int64_t count);

}  // namespace star
