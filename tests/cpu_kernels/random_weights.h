// Stored weight rows with random contents, for the kernel tests: every bit pattern of the quants
// (Q8_0's −128 included) under small random half-float scales.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "star/model/dtype.h"
#include "star/model/weight_tensor.h"

namespace star::testing {

// rows × k elements of `dtype`, any type.
inline std::vector<std::byte> random_weight_rows(DType dtype, int64_t rows, int64_t k, std::mt19937& rng) {
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> value(-1.f, 1.f);
  const auto row_bytes = static_cast<size_t>(dtype_row_bytes(dtype, k));
  std::vector<std::byte> bytes(static_cast<size_t>(rows) * row_bytes);
  if (!dtype_is_quantized(dtype)) {
    std::vector<float> values(static_cast<size_t>(rows * k));
    for (float& v : values) v = value(rng);
    return encode_from_f32(values, dtype);
  }
  for (std::byte& b : bytes) b = static_cast<std::byte>(byte(rng));
  // The f16 scales sit at the start of legacy and Q4_K/Q5_K blocks (d, then m or dmin for the
  // types that have one) and at the end of Q6_K's; every other byte may hold anything.
  const bool has_second = dtype == DType::kQ4_1 || dtype == DType::kQ5_1 || dtype == DType::kQ4_K ||
                          dtype == DType::kQ5_K;
  const size_t block_bytes = dtype_block_bytes(dtype);
  const size_t d_offset = dtype == DType::kQ6_K ? block_bytes - 2 : 0;
  const float d_range = dtype_block_elements(dtype) == 32 ? 1.f / 64 : 1.f / 1024;
  for (size_t at = 0; at < bytes.size(); at += block_bytes) {
    const uint16_t d = f32_to_f16(value(rng) * d_range);
    std::memcpy(bytes.data() + at + d_offset, &d, 2);
    if (has_second) {
      const uint16_t m = f32_to_f16(value(rng) * (dtype_block_elements(dtype) == 32 ? 1.f / 4 : 1.f / 256));
      std::memcpy(bytes.data() + at + 2, &m, 2);
    }
  }
  return bytes;
}

// A WeightTensor over bytes the caller keeps alive.
inline WeightTensor weight_over(DType dtype, const std::vector<std::byte>& bytes, int64_t rows, int64_t k) {
  WeightTensor t;
  t.dtype = dtype;
  t.shape = {rows, k};
  t.data = bytes.data();
  return t;
}

}  // namespace star::testing
