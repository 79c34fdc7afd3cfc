#include <array>
#include <utility>

#include "star/model/gguf.h"

namespace star {
namespace {

constexpr std::array<std::pair<DType, uint32_t>, 11> kGgmlTypes = {{
    {DType::kF32, 0},
    {DType::kF16, 1},
    {DType::kQ4_0, 2},
    {DType::kQ4_1, 3},
    {DType::kQ5_0, 6},
    {DType::kQ5_1, 7},
    {DType::kQ8_0, 8},
    {DType::kQ4_K, 12},
    {DType::kQ5_K, 13},
    {DType::kQ6_K, 14},
    {DType::kBF16, 30},
}};

}  // namespace

std::optional<DType> dtype_from_ggml_type(uint32_t ggml_type) {
  for (const auto& [dtype, id] : kGgmlTypes) {
    if (id == ggml_type) return dtype;
  }
  return std::nullopt;
}

uint32_t ggml_type_of(DType dtype) {
  for (const auto& [d, id] : kGgmlTypes) {
    if (d == dtype) return id;
  }
  return 0;  // unreachable: every DType is listed
}

}  // namespace star
