// GgufWriter: builds a GGUF v3 file (the layout star/model/gguf.h describes) from metadata and
// tensors, for star-mkmodel. Tensors are laid out in the order added, each at the next multiple of
// the default alignment (32), as llama.cpp's gguf writer does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "star/common/status.h"
#include "star/model/dtype.h"

namespace star {

class GgufWriter {
 public:
  void add_uint32(std::string_view key, uint32_t value);
  void add_float32(std::string_view key, float value);
  void add_bool(std::string_view key, bool value);
  void add_string(std::string_view key, std::string_view value);
  void add_string_array(std::string_view key, const std::vector<std::string>& values);
  void add_int32_array(std::string_view key, const std::vector<int32_t>& values);

  // shape: row-major (outermost first); bytes: the rows stored as `dtype`, dtype_row_bytes each.
  // kInvalidArgument, naming the tensor, when the byte count does not match the shape.
  Status add_tensor(std::string name, std::vector<int64_t> shape, DType dtype, std::vector<std::byte> bytes);

  Status write(const std::filesystem::path& path) const;

 private:
  struct Tensor {
    std::string name;
    std::vector<int64_t> shape;
    DType dtype;
    std::vector<std::byte> bytes;
  };
  void begin_entry(std::string_view key, uint32_t value_type);

  std::string metadata_;  // encoded entries
  uint64_t metadata_count_ = 0;
  std::vector<Tensor> tensors_;
};

}  // namespace star
