// GGUF v3 (llama.cpp's model file), memory-mapped, zero copy.
//   file = "GGUF" | u32 version (3) | u64 tensor_count | u64 metadata_count
//          | metadata: (string key, u32 type, value)* | tensor infos: (string name, u32 n_dims,
//          u64 ne[n_dims], u32 ggml_type, u64 offset)* | padding to general.alignment (default 32)
//          | data section (tensor offsets are relative to its start)
//   string = u64 length | UTF-8 bytes;  array = u32 element type | u64 count | elements
// GGUF lists dimensions innermost first (ne[0] is the row length); GgufTensorInfo::shape and
// TensorView::shape are row-major ([rows, cols]), like safetensors.
//
// Tensors of F32, F16, BF16 and the block types Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K
// are read (a block type's rows must be whole blocks: star/quant/blocks.h). Every offset, length and count is checked against the
// file size before it is used, so a malformed file gives an error, never a crash or a huge
// allocation. Errors: kNotFound (no such file / key / tensor), kDataLoss (malformed or truncated),
// kUnimplemented (another GGUF version or ggml type), kInvalidArgument (a key of the wrong type).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "star/common/status.h"
#include "star/model/dtype.h"
#include "star/model/mapped_file.h"
#include "star/model/tensor_view.h"

namespace star {

enum class GgufType : uint32_t {
  kUint8 = 0, kInt8 = 1, kUint16 = 2, kInt16 = 3, kUint32 = 4, kInt32 = 5, kFloat32 = 6,
  kBool = 7, kString = 8, kArray = 9, kUint64 = 10, kInt64 = 11, kFloat64 = 12,
};
const char* gguf_type_name(GgufType type);  // "uint32", "string", ...

// ggml's tensor type ids (ggml.h's enum ggml_type: F32 0, F16 1, Q4_0 2, ..., BF16 30) of the
// DTypes starserve reads and writes; nullopt for any other id.
std::optional<DType> dtype_from_ggml_type(uint32_t ggml_type);
uint32_t ggml_type_of(DType dtype);

// One metadata value. Unsigned integers are held as uint64_t, signed as int64_t, floats as double;
// `type` (and GgufArray::element_type) keeps the stored width. Arrays hold their elements in one
// typed vector, so memory stays within a small factor of the file's bytes.
struct GgufArray {
  GgufType element_type = GgufType::kUint8;
  std::variant<std::vector<uint64_t>, std::vector<int64_t>, std::vector<double>, std::vector<bool>,
               std::vector<std::string>, std::vector<GgufArray>>
      items;
  size_t size() const;
};
struct GgufValue {
  GgufType type = GgufType::kUint8;
  std::variant<uint64_t, int64_t, double, bool, std::string, GgufArray> value;
};

struct GgufTensorInfo {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;  // row-major: the reverse of GGUF's ne[]
  uint64_t offset = 0;         // from the start of the data section
  size_t bytes = 0;
};

class GgufFile {
 public:
  static Result<GgufFile> open(const std::filesystem::path& path);

  const std::filesystem::path& path() const { return mapping_->path(); }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }  // from the start of the file

  // Metadata. The typed accessors give kNotFound for an absent key and kInvalidArgument for a
  // value of another type, naming the file and the key.
  const std::map<std::string, GgufValue, std::less<>>& metadata() const { return metadata_; }
  const GgufValue* find_metadata(std::string_view key) const;
  bool has(std::string_view key) const { return find_metadata(key) != nullptr; }
  Result<int64_t> get_int(std::string_view key) const;      // any integer type that fits int64
  Result<double> get_float(std::string_view key) const;     // float32 or float64
  Result<bool> get_bool(std::string_view key) const;
  Result<std::string> get_string(std::string_view key) const;
  Result<std::vector<std::string>> get_string_array(std::string_view key) const;
  Result<std::vector<double>> get_float_array(std::string_view key) const;   // float elements
  Result<std::vector<int64_t>> get_int_array(std::string_view key) const;    // integer elements

  // Tensors, in file order.
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  bool contains_tensor(std::string_view name) const { return tensor_index_.find(name) != tensor_index_.end(); }
  Result<TensorView> find_tensor(std::string_view name) const;

 private:
  friend class GgufParser;

  std::shared_ptr<const MappedFile> mapping_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::map<std::string, GgufValue, std::less<>> metadata_;
  std::vector<GgufTensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;
};

}  // namespace star
