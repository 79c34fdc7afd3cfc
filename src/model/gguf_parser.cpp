// GgufFile::open: parsing and validating a GGUF v3 file's header, metadata and tensor infos.
#include <algorithm>
#include <cstring>
#include <optional>
#include <span>

#include "star/model/gguf.h"

namespace star {
namespace {

constexpr uint32_t kGgufVersion = 3;
constexpr uint32_t kMaxDims = 4;         // GGML_MAX_DIMS
constexpr int kMaxArrayNesting = 4;      // arrays of arrays of ...: deeper is a corrupt file
constexpr uint64_t kMaxAlignment = uint64_t{1} << 30;

std::string ggml_type_name(uint32_t type) {
  static const char* const kNames[] = {
      "F32",     "F16",    "Q4_0",   "Q4_1",  "Q4_2",   "Q4_3",   "Q5_0",    "Q5_1",    "Q8_0",
      "Q8_1",    "Q2_K",   "Q3_K",   "Q4_K",  "Q5_K",   "Q6_K",   "Q8_K",    "IQ2_XXS", "IQ2_XS",
      "IQ3_XXS", "IQ1_S",  "IQ4_NL", "IQ3_S", "IQ2_S",  "IQ4_XS", "I8",      "I16",     "I32",
      "I64",     "F64",    "IQ1_M",  "BF16",  "Q4_0_4_4", "Q4_0_4_8", "Q4_0_8_8", "TQ1_0", "TQ2_0"};
  if (type < std::size(kNames)) return kNames[type];
  return "unknown";
}

constexpr const char* kSupportedTypes = "F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K and Q6_K";

// Bytes of a tensor of `shape` stored as rows of `dtype` (rows are the innermost dimension; a
// block type needs whole blocks a row), or -1 when the count of elements passes 2^62.
int64_t stored_tensor_bytes(std::span<const int64_t> shape, DType dtype) {
  constexpr int64_t kLimit = int64_t{1} << 62;
  const int64_t elements = checked_tensor_bytes(shape, 1);
  if (elements < 0) return -1;
  const int64_t blocks = elements / dtype_block_elements(dtype);
  const auto block_bytes = static_cast<int64_t>(dtype_block_bytes(dtype));
  if (blocks > kLimit / block_bytes) return -1;
  return blocks * block_bytes;
}

// Bytes one element of `type` takes at least, so a count can be checked before it is used.
size_t min_element_bytes(GgufType type) {
  switch (type) {
    case GgufType::kUint8: case GgufType::kInt8: case GgufType::kBool: return 1;
    case GgufType::kUint16: case GgufType::kInt16: return 2;
    case GgufType::kUint32: case GgufType::kInt32: case GgufType::kFloat32: return 4;
    case GgufType::kUint64: case GgufType::kInt64: case GgufType::kFloat64: case GgufType::kString: return 8;
    case GgufType::kArray: return 12;
  }
  return 1;
}

bool is_known_type(uint32_t type) { return type <= static_cast<uint32_t>(GgufType::kFloat64); }

}  // namespace

// Reads the header, metadata and tensor infos of a mapped file, checking every read against its size.
class GgufParser {
 public:
  explicit GgufParser(GgufFile& file)
      : file_(file), data_(file.mapping_->data()), size_(file.mapping_->size()), where_(file.path().string()) {}

  Status parse() {
    char magic[4];
    if (Status s = read_bytes(magic, 4, "the magic"); !s.ok()) return s;
    if (std::memcmp(magic, "GGUF", 4) != 0) return data_loss(where_ + ": not a GGUF file (bad magic)");
    if (Status s = read_pod(file_.version_, "the version"); !s.ok()) return s;
    if (file_.version_ != kGgufVersion) {
      return unimplemented(where_ + ": GGUF version " + std::to_string(file_.version_) +
                           " is not supported (only version 3)");
    }
    uint64_t tensor_count = 0, metadata_count = 0;
    if (Status s = read_pod(tensor_count, "the tensor count"); !s.ok()) return s;
    if (Status s = read_pod(metadata_count, "the metadata count"); !s.ok()) return s;
    if (metadata_count > remaining() / 13) {
      return data_loss(where_ + ": metadata count " + std::to_string(metadata_count) + " cannot fit in the file");
    }
    if (tensor_count > remaining() / 24) {
      return data_loss(where_ + ": tensor count " + std::to_string(tensor_count) + " cannot fit in the file");
    }
    for (uint64_t i = 0; i < metadata_count; ++i) {
      if (Status s = read_metadata_entry(i); !s.ok()) return s;
    }
    if (Status s = read_alignment(); !s.ok()) return s;
    file_.tensors_.reserve(tensor_count);
    for (uint64_t i = 0; i < tensor_count; ++i) {
      if (Status s = read_tensor_info(i); !s.ok()) return s;
    }
    file_.data_offset_ = (pos_ + file_.alignment_ - 1) / file_.alignment_ * file_.alignment_;
    return check_tensor_data();
  }

 private:
  size_t remaining() const { return size_ - pos_; }

  Status truncated(std::string_view what, size_t need) const {
    return data_loss(where_ + ": truncated: " + std::string(what) + " needs " + std::to_string(need) +
                     " bytes at offset " + std::to_string(pos_) + " but the file has " + std::to_string(size_) +
                     " bytes");
  }

  Status read_bytes(void* out, size_t n, std::string_view what) {
    if (n > remaining()) return truncated(what, n);
    if (n > 0) std::memcpy(out, data_ + pos_, n);
    pos_ += n;
    return ok_status();
  }

  template <typename T>
  Status read_pod(T& out, std::string_view what) {
    return read_bytes(&out, sizeof(T), what);
  }

  Status read_string(std::string& out, std::string_view what) {
    uint64_t length = 0;
    if (Status s = read_pod(length, what); !s.ok()) return s;
    if (length > remaining()) {
      return data_loss(where_ + ": " + std::string(what) + ": string length " + std::to_string(length) +
                       " at offset " + std::to_string(pos_ - 8) + " runs past the end of the file (" +
                       std::to_string(size_) + " bytes)");
    }
    out.assign(reinterpret_cast<const char*>(data_ + pos_), length);
    pos_ += length;
    return ok_status();
  }

  template <typename Stored, typename Held>
  Status read_scalar(GgufValue& out, std::string_view what) {
    Stored v{};
    if (Status s = read_pod(v, what); !s.ok()) return s;
    out.value = static_cast<Held>(v);
    return ok_status();
  }

  Status read_value(GgufType type, GgufValue& out, std::string_view what, int depth) {
    out.type = type;
    switch (type) {
      case GgufType::kUint8: return read_scalar<uint8_t, uint64_t>(out, what);
      case GgufType::kUint16: return read_scalar<uint16_t, uint64_t>(out, what);
      case GgufType::kUint32: return read_scalar<uint32_t, uint64_t>(out, what);
      case GgufType::kUint64: return read_scalar<uint64_t, uint64_t>(out, what);
      case GgufType::kInt8: return read_scalar<int8_t, int64_t>(out, what);
      case GgufType::kInt16: return read_scalar<int16_t, int64_t>(out, what);
      case GgufType::kInt32: return read_scalar<int32_t, int64_t>(out, what);
      case GgufType::kInt64: return read_scalar<int64_t, int64_t>(out, what);
      case GgufType::kFloat32: return read_scalar<float, double>(out, what);
      case GgufType::kFloat64: return read_scalar<double, double>(out, what);
      case GgufType::kBool: {
        uint8_t b = 0;
        if (Status s = read_pod(b, what); !s.ok()) return s;
        if (b > 1) return data_loss(where_ + ": " + std::string(what) + ": bool byte " + std::to_string(b));
        out.value = b == 1;
        return ok_status();
      }
      case GgufType::kString: {
        std::string text;
        if (Status s = read_string(text, what); !s.ok()) return s;
        out.value = std::move(text);
        return ok_status();
      }
      case GgufType::kArray: return read_array(out, what, depth);
    }
    return data_loss(where_ + ": " + std::string(what) + ": unknown value type");
  }

  // Elements of one scalar type, converted to the vector type that holds them.
  template <typename Stored, typename Held>
  Status read_elements(uint64_t count, GgufArray& array, std::string_view what) {
    std::vector<Held> items;
    items.reserve(count);
    for (uint64_t i = 0; i < count; ++i) {
      Stored v{};
      if (Status s = read_pod(v, what); !s.ok()) return s;
      items.push_back(static_cast<Held>(v));
    }
    array.items = std::move(items);
    return ok_status();
  }

  Status read_array(GgufValue& out, std::string_view what, int depth) {
    if (depth >= kMaxArrayNesting) {
      return data_loss(where_ + ": " + std::string(what) + ": arrays nested deeper than " +
                       std::to_string(kMaxArrayNesting));
    }
    uint32_t element_type = 0;
    uint64_t count = 0;
    if (Status s = read_pod(element_type, what); !s.ok()) return s;
    if (!is_known_type(element_type)) {
      return data_loss(where_ + ": " + std::string(what) + ": unknown array element type " + std::to_string(element_type));
    }
    if (Status s = read_pod(count, what); !s.ok()) return s;
    GgufArray array;
    array.element_type = static_cast<GgufType>(element_type);
    // Checked before anything is reserved: a corrupt count must not allocate more than the file holds.
    if (count > remaining() / min_element_bytes(array.element_type)) {
      return data_loss(where_ + ": " + std::string(what) + ": array of " + std::to_string(count) + " " +
                       gguf_type_name(array.element_type) + " runs past the end of the file (" +
                       std::to_string(size_) + " bytes)");
    }
    Status status;
    switch (array.element_type) {
      case GgufType::kUint8: status = read_elements<uint8_t, uint64_t>(count, array, what); break;
      case GgufType::kUint16: status = read_elements<uint16_t, uint64_t>(count, array, what); break;
      case GgufType::kUint32: status = read_elements<uint32_t, uint64_t>(count, array, what); break;
      case GgufType::kUint64: status = read_elements<uint64_t, uint64_t>(count, array, what); break;
      case GgufType::kInt8: status = read_elements<int8_t, int64_t>(count, array, what); break;
      case GgufType::kInt16: status = read_elements<int16_t, int64_t>(count, array, what); break;
      case GgufType::kInt32: status = read_elements<int32_t, int64_t>(count, array, what); break;
      case GgufType::kInt64: status = read_elements<int64_t, int64_t>(count, array, what); break;
      case GgufType::kFloat32: status = read_elements<float, double>(count, array, what); break;
      case GgufType::kFloat64: status = read_elements<double, double>(count, array, what); break;
      case GgufType::kBool: status = read_bool_elements(count, array, what); break;
      case GgufType::kString: status = read_string_elements(count, array, what); break;
      case GgufType::kArray: status = read_nested_arrays(count, array, what, depth); break;
    }
    if (!status.ok()) return status;
    out.value = std::move(array);
    return ok_status();
  }

  Status read_bool_elements(uint64_t count, GgufArray& array, std::string_view what) {
    std::vector<bool> items;
    items.reserve(count);
    for (uint64_t i = 0; i < count; ++i) {
      GgufValue v;
      if (Status s = read_value(GgufType::kBool, v, what, 0); !s.ok()) return s;
      items.push_back(std::get<bool>(v.value));
    }
    array.items = std::move(items);
    return ok_status();
  }

  Status read_string_elements(uint64_t count, GgufArray& array, std::string_view what) {
    std::vector<std::string> items(count);
    for (std::string& item : items) {
      if (Status s = read_string(item, what); !s.ok()) return s;
    }
    array.items = std::move(items);
    return ok_status();
  }

  Status read_nested_arrays(uint64_t count, GgufArray& array, std::string_view what, int depth) {
    std::vector<GgufArray> items;
    items.reserve(count);
    for (uint64_t i = 0; i < count; ++i) {
      GgufValue v;
      if (Status s = read_array(v, what, depth + 1); !s.ok()) return s;
      items.push_back(std::move(std::get<GgufArray>(v.value)));
    }
    array.items = std::move(items);
    return ok_status();
  }

  Status read_metadata_entry(uint64_t index) {
    std::string key;
    if (Status s = read_string(key, "metadata key #" + std::to_string(index)); !s.ok()) return s;
    const std::string what = "metadata '" + key + "'";
    uint32_t type = 0;
    if (Status s = read_pod(type, what); !s.ok()) return s;
    if (!is_known_type(type)) return data_loss(where_ + ": " + what + " has unknown value type " + std::to_string(type));
    GgufValue value;
    if (Status s = read_value(static_cast<GgufType>(type), value, what, 0); !s.ok()) return s;
    if (!file_.metadata_.emplace(key, std::move(value)).second) {
      return data_loss(where_ + ": " + what + " appears twice");
    }
    return ok_status();
  }

  Status read_alignment() {
    if (!file_.has("general.alignment")) return ok_status();
    auto alignment = file_.get_int("general.alignment");
    if (!alignment.ok()) return data_loss(alignment.status().message());
    uint64_t a = static_cast<uint64_t>(*alignment);
    if (*alignment <= 0 || a > kMaxAlignment || (a & (a - 1)) != 0) {
      return data_loss(where_ + ": general.alignment " + std::to_string(*alignment) + " is not a power of two");
    }
    file_.alignment_ = a;
    return ok_status();
  }

  Status read_tensor_info(uint64_t index) {
    GgufTensorInfo info;
    if (Status s = read_string(info.name, "tensor #" + std::to_string(index) + " name"); !s.ok()) return s;
    const std::string what = "tensor '" + info.name + "'";
    uint32_t n_dims = 0;
    if (Status s = read_pod(n_dims, what); !s.ok()) return s;
    if (n_dims > kMaxDims) {
      return data_loss(where_ + ": " + what + " has " + std::to_string(n_dims) + " dimensions (at most 4)");
    }
    std::vector<int64_t> ne(n_dims);
    for (int64_t& d : ne) {
      uint64_t v = 0;
      if (Status s = read_pod(v, what); !s.ok()) return s;
      if (v > static_cast<uint64_t>(INT64_MAX)) return data_loss(where_ + ": " + what + " has dimension " + std::to_string(v));
      d = static_cast<int64_t>(v);
    }
    uint32_t ggml_type = 0;
    if (Status s = read_pod(ggml_type, what); !s.ok()) return s;
    if (Status s = read_pod(info.offset, what); !s.ok()) return s;
    std::optional<DType> dtype = dtype_from_ggml_type(ggml_type);
    if (!dtype) {
      return unimplemented(where_ + ": " + what + " has ggml type " + ggml_type_name(ggml_type) + " (" +
                           std::to_string(ggml_type) + "); supported: " + kSupportedTypes);
    }
    info.dtype = *dtype;
    info.shape.assign(ne.rbegin(), ne.rend());
    const int64_t row_length = ne.empty() ? 1 : ne.front();
    if (row_length % dtype_block_elements(info.dtype) != 0) {
      return data_loss(where_ + ": " + what + " of type " + dtype_name(info.dtype) + " has shape " +
                       shape_to_string(info.shape) + ": its rows of " + std::to_string(row_length) +
                       " elements are not a whole number of " + std::to_string(dtype_block_elements(info.dtype)) +
                       "-element blocks");
    }
    int64_t bytes = stored_tensor_bytes(info.shape, info.dtype);
    if (bytes < 0) return data_loss(where_ + ": " + what + " shape " + shape_to_string(info.shape) + " is too large");
    info.bytes = static_cast<size_t>(bytes);
    if (!file_.tensor_index_.emplace(info.name, file_.tensors_.size()).second) {
      return data_loss(where_ + ": " + what + " appears twice");
    }
    file_.tensors_.push_back(std::move(info));
    return ok_status();
  }

  Status check_tensor_data() const {
    // Even a tensor of zero bytes points into the data section, so it must start inside the file.
    if (!file_.tensors_.empty() && file_.data_offset_ > size_) {
      return data_loss(where_ + ": the data section starts at offset " + std::to_string(file_.data_offset_) +
                       " (the tensor infos padded to the alignment " + std::to_string(file_.alignment_) +
                       "), past the end of the file (" + std::to_string(size_) + " bytes); the file is truncated");
    }
    const uint64_t data_size = file_.data_offset_ <= size_ ? size_ - file_.data_offset_ : 0;
    std::vector<const GgufTensorInfo*> by_offset;
    for (const GgufTensorInfo& t : file_.tensors_) {
      const std::string what = where_ + ": tensor '" + t.name + "'";
      if (t.offset % file_.alignment_ != 0) {
        return data_loss(what + " offset " + std::to_string(t.offset) + " is not a multiple of the alignment " +
                         std::to_string(file_.alignment_));
      }
      if (t.offset > data_size || t.bytes > data_size - t.offset) {
        return data_loss(what + " data [" + std::to_string(t.offset) + ", +" + std::to_string(t.bytes) +
                         ") runs past the end of the data section (" + std::to_string(data_size) +
                         " bytes); the file is truncated or corrupt");
      }
      if (t.bytes > 0) by_offset.push_back(&t);
    }
    std::sort(by_offset.begin(), by_offset.end(),
              [](const GgufTensorInfo* a, const GgufTensorInfo* b) { return a->offset < b->offset; });
    for (size_t i = 1; i < by_offset.size(); ++i) {
      if (by_offset[i]->offset < by_offset[i - 1]->offset + by_offset[i - 1]->bytes) {
        return data_loss(where_ + ": tensors '" + by_offset[i - 1]->name + "' and '" + by_offset[i]->name + "' overlap");
      }
    }
    return ok_status();
  }

  GgufFile& file_;
  const std::byte* data_;
  size_t size_;
  size_t pos_ = 0;
  std::string where_;
};

Result<GgufFile> GgufFile::open(const std::filesystem::path& path) {
  auto mapped = MappedFile::open(path);
  if (!mapped.ok()) return mapped.status();
  GgufFile file;
  file.mapping_ = std::move(mapped).value();
  if (Status s = GgufParser(file).parse(); !s.ok()) return s;
  return file;
}

}  // namespace star
