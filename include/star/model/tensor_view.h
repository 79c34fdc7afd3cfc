// TensorView: one stored tensor inside a memory-mapped checkpoint (safetensors or GGUF), not yet
// converted. Shapes are row-major, outermost first: a Linear weight is [out_features, in_features].
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "star/model/dtype.h"
#include "star/model/mapped_file.h"

namespace star {

struct TensorView {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  const std::byte* data = nullptr;  // bytes of little-endian elements, any alignment
  size_t bytes = 0;                 // rows of dtype_row_bytes(dtype, shape.back()) each
  std::shared_ptr<const MappedFile> mapping;  // keeps `data` valid

  int64_t numel() const;
  const std::filesystem::path& file() const { return mapping->path(); }
};

// "[512, 64]"
std::string shape_to_string(std::span<const int64_t> shape);

// numel * element_size as bytes, or -1 when a dimension is negative or the product passes 2^62.
int64_t checked_tensor_bytes(std::span<const int64_t> shape, size_t element_size);

}  // namespace star
