// GgufFile's typed metadata accessors and tensor lookup.
#include <optional>

#include "star/model/gguf.h"

namespace star {

const char* gguf_type_name(GgufType type) {
  switch (type) {
    case GgufType::kUint8: return "uint8";
    case GgufType::kInt8: return "int8";
    case GgufType::kUint16: return "uint16";
    case GgufType::kInt16: return "int16";
    case GgufType::kUint32: return "uint32";
    case GgufType::kInt32: return "int32";
    case GgufType::kFloat32: return "float32";
    case GgufType::kBool: return "bool";
    case GgufType::kString: return "string";
    case GgufType::kArray: return "array";
    case GgufType::kUint64: return "uint64";
    case GgufType::kInt64: return "int64";
    case GgufType::kFloat64: return "float64";
  }
  return "unknown";
}

const GgufValue* GgufFile::find_metadata(std::string_view key) const {
  auto it = metadata_.find(key);
  return it == metadata_.end() ? nullptr : &it->second;
}

namespace {

Status missing_key(const GgufFile& file, std::string_view key) {
  return not_found(file.path().string() + ": metadata key '" + std::string(key) + "' is missing");
}

Status wrong_type(const GgufFile& file, std::string_view key, GgufType type, std::string_view wanted) {
  return invalid_argument(file.path().string() + ": metadata key '" + std::string(key) + "' is " +
                          gguf_type_name(type) + ", expected " + std::string(wanted));
}

std::optional<int64_t> value_as_int(const GgufValue& v) {
  if (const auto* u = std::get_if<uint64_t>(&v.value)) {
    if (*u > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
    return static_cast<int64_t>(*u);
  }
  if (const auto* i = std::get_if<int64_t>(&v.value)) return *i;
  return std::nullopt;
}

bool is_integer_type(GgufType t) {
  return t != GgufType::kFloat32 && t != GgufType::kFloat64 && t != GgufType::kBool && t != GgufType::kString &&
         t != GgufType::kArray;
}

// The elements under `key` when it is an array held as vector<T>, or the error that explains why not.
template <typename T>
Result<const std::vector<T>*> find_array(const GgufFile& file, std::string_view key, std::string_view wanted) {
  const GgufValue* v = file.find_metadata(key);
  if (v == nullptr) return missing_key(file, key);
  const auto* array = std::get_if<GgufArray>(&v->value);
  const auto* items = array == nullptr ? nullptr : std::get_if<std::vector<T>>(&array->items);
  if (items == nullptr) {
    std::string actual = array == nullptr ? gguf_type_name(v->type)
                                          : std::string("array of ") + gguf_type_name(array->element_type);
    return invalid_argument(file.path().string() + ": metadata key '" + std::string(key) + "' is " + actual +
                            ", expected " + std::string(wanted));
  }
  return items;
}

}  // namespace

Result<int64_t> GgufFile::get_int(std::string_view key) const {
  const GgufValue* v = find_metadata(key);
  if (v == nullptr) return missing_key(*this, key);
  if (!is_integer_type(v->type)) return wrong_type(*this, key, v->type, "an integer");
  std::optional<int64_t> i = value_as_int(*v);
  if (!i) return out_of_range(path().string() + ": metadata key '" + std::string(key) + "' does not fit in int64");
  return *i;
}

Result<double> GgufFile::get_float(std::string_view key) const {
  const GgufValue* v = find_metadata(key);
  if (v == nullptr) return missing_key(*this, key);
  if (const auto* d = std::get_if<double>(&v->value)) return *d;
  return wrong_type(*this, key, v->type, "float32 or float64");
}

Result<bool> GgufFile::get_bool(std::string_view key) const {
  const GgufValue* v = find_metadata(key);
  if (v == nullptr) return missing_key(*this, key);
  if (const auto* b = std::get_if<bool>(&v->value)) return *b;
  return wrong_type(*this, key, v->type, "bool");
}

Result<std::string> GgufFile::get_string(std::string_view key) const {
  const GgufValue* v = find_metadata(key);
  if (v == nullptr) return missing_key(*this, key);
  if (const auto* s = std::get_if<std::string>(&v->value)) return *s;
  return wrong_type(*this, key, v->type, "string");
}

Result<std::vector<std::string>> GgufFile::get_string_array(std::string_view key) const {
  auto items = find_array<std::string>(*this, key, "array of string");
  if (!items.ok()) return items.status();
  return **items;
}

Result<std::vector<double>> GgufFile::get_float_array(std::string_view key) const {
  auto items = find_array<double>(*this, key, "array of float");
  if (!items.ok()) return items.status();
  return **items;
}

Result<std::vector<int64_t>> GgufFile::get_int_array(std::string_view key) const {
  if (auto items = find_array<int64_t>(*this, key, "array of integers"); items.ok()) return **items;
  auto items = find_array<uint64_t>(*this, key, "array of integers");
  if (!items.ok()) return items.status();
  std::vector<int64_t> out;
  out.reserve((*items)->size());
  for (uint64_t u : **items) {
    if (u > static_cast<uint64_t>(INT64_MAX)) {
      return out_of_range(path().string() + ": metadata key '" + std::string(key) + "' has an element past int64");
    }
    out.push_back(static_cast<int64_t>(u));
  }
  return out;
}

size_t GgufArray::size() const {
  return std::visit([](const auto& v) { return v.size(); }, items);
}

Result<TensorView> GgufFile::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  if (it == tensor_index_.end()) return not_found(path().string() + ": no tensor '" + std::string(name) + "'");
  const GgufTensorInfo& t = tensors_[it->second];
  return TensorView{t.name, t.dtype, t.shape, mapping_->data() + data_offset_ + t.offset, t.bytes, mapping_};
}

}  // namespace star
