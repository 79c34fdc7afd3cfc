// safetensors: reading (memory-mapped, zero copy) and writing HF's tensor file format.
//   file = u64 header_length (little-endian) | header: JSON | data
//   header = {"__metadata__": {...}, "<name>": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...}
// Offsets are relative to the start of the data section. Only F32, F16 and BF16 tensors are read.
//
// Errors: kNotFound (no such file / tensor), kDataLoss (malformed or truncated file),
// kUnimplemented (a dtype other than F32/F16/BF16). Every message names the file and the tensor.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "star/common/status.h"
#include "star/model/dtype.h"
#include "star/model/mapped_file.h"
#include "star/model/tensor_view.h"

namespace star {

// One .safetensors file.
class SafetensorsFile {
 public:
  static Result<SafetensorsFile> open(const std::filesystem::path& path);

  const std::filesystem::path& path() const { return mapping_->path(); }
  std::vector<std::string> names() const;  // sorted
  bool contains(std::string_view name) const { return entries_.find(name) != entries_.end(); }
  Result<TensorView> find(std::string_view name) const;

 private:
  struct Entry {
    DType dtype;
    std::vector<int64_t> shape;
    size_t offset;  // from the start of the file
    size_t bytes;
  };

  std::shared_ptr<const MappedFile> mapping_;
  std::map<std::string, Entry, std::less<>> entries_;
};

// The weights of an HF model directory: model.safetensors, or the shards that
// model.safetensors.index.json lists in its "weight_map" (tensor name -> file name).
class SafetensorsCheckpoint {
 public:
  static Result<SafetensorsCheckpoint> open(const std::filesystem::path& model_dir);

  const std::filesystem::path& directory() const { return directory_; }
  // model.safetensors or model.safetensors.index.json: what errors about the whole set name.
  const std::filesystem::path& source() const { return source_; }
  std::vector<std::string> names() const;  // sorted
  bool contains(std::string_view name) const { return shard_of_.find(name) != shard_of_.end(); }
  Result<TensorView> find(std::string_view name) const;

 private:
  std::filesystem::path directory_;
  std::filesystem::path source_;
  std::vector<SafetensorsFile> shards_;
  std::map<std::string, size_t, std::less<>> shard_of_;  // tensor name -> index into shards_
};

// One tensor to write. `bytes` holds numel(shape) little-endian elements of `dtype`.
struct SafetensorsTensor {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  std::span<const std::byte> bytes;
};

// Writes `tensors` in the given order with {"__metadata__": {"format": "pt"}} (transformers
// requires it), the header padded with spaces to a multiple of 8 bytes. kInvalidArgument for a
// duplicate name or a byte count that does not match the shape.
Status write_safetensors(const std::filesystem::path& path, std::span<const SafetensorsTensor> tensors);

}  // namespace star
