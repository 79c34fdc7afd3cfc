#include <algorithm>
#include <cstring>
#include <optional>

#include "json_file.h"
#include "star/model/safetensors.h"

namespace star {
namespace {

// safetensors' own reference implementation refuses headers above 100 MB.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

std::optional<DType> dtype_from_name(std::string_view name) {
  if (name == "F32") return DType::kF32;
  if (name == "F16") return DType::kF16;
  if (name == "BF16") return DType::kBF16;
  return std::nullopt;
}

// A JSON number that is a non-negative integer fitting in int64.
std::optional<int64_t> as_count(const nlohmann::json& v) {
  if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  if (v.is_number_integer()) {
    int64_t i = v.get<int64_t>();
    if (i < 0) return std::nullopt;
    return i;
  }
  return std::nullopt;
}

}  // namespace

Result<SafetensorsFile> SafetensorsFile::open(const std::filesystem::path& path) {
  auto mapped = MappedFile::open(path);
  if (!mapped.ok()) return mapped.status();
  SafetensorsFile file;
  file.mapping_ = std::move(mapped).value();
  const std::string where = path.string();
  const size_t size = file.mapping_->size();
  if (size < 8) return data_loss(where + ": " + std::to_string(size) + " bytes, too short for a safetensors header");

  uint64_t header_length;
  std::memcpy(&header_length, file.mapping_->data(), 8);
  if (header_length > size - 8) {
    return data_loss(where + ": header length " + std::to_string(header_length) +
                     " runs past the end of the file (" + std::to_string(size) + " bytes)");
  }
  if (header_length > kMaxHeaderBytes) {
    return data_loss(where + ": header length " + std::to_string(header_length) + " exceeds 100 MB");
  }
  const size_t data_start = 8 + header_length;
  const size_t data_size = size - data_start;
  std::string_view header_text(reinterpret_cast<const char*>(file.mapping_->data()) + 8, header_length);
  auto header = parse_json_text(header_text, where + " (header)");
  if (!header.ok()) return header.status();
  if (!header->is_object()) return data_loss(where + ": header is not a JSON object");

  struct Span {
    size_t begin, end;
    const std::string* name;
  };
  std::vector<Span> spans;
  for (const auto& [name, info] : header->items()) {
    if (name == "__metadata__") continue;
    const std::string tensor = where + ": tensor '" + name + "'";
    if (!info.is_object()) return data_loss(tensor + ": entry is not an object");
    auto dtype_it = info.find("dtype");
    auto shape_it = info.find("shape");
    auto offsets_it = info.find("data_offsets");
    if (dtype_it == info.end() || !dtype_it->is_string()) return data_loss(tensor + ": missing string 'dtype'");
    if (shape_it == info.end() || !shape_it->is_array()) return data_loss(tensor + ": missing array 'shape'");
    if (offsets_it == info.end() || !offsets_it->is_array() || offsets_it->size() != 2) {
      return data_loss(tensor + ": 'data_offsets' must be [begin, end]");
    }
    const std::string dtype_name_text = dtype_it->get<std::string>();
    std::optional<DType> dtype = dtype_from_name(dtype_name_text);
    if (!dtype) {
      return unimplemented(tensor + " has dtype " + dtype_name_text + "; only F32, F16 and BF16 are supported");
    }
    Entry entry{*dtype, {}, 0, 0};
    for (const auto& d : *shape_it) {
      std::optional<int64_t> dim = as_count(d);
      if (!dim) return data_loss(tensor + ": shape " + shape_it->dump() + " has a dimension that is not a count");
      entry.shape.push_back(*dim);
    }
    std::optional<int64_t> begin = as_count((*offsets_it)[0]);
    std::optional<int64_t> end = as_count((*offsets_it)[1]);
    if (!begin || !end || *begin > *end) {
      return data_loss(tensor + ": data_offsets " + offsets_it->dump() + " are not an ordered pair of counts");
    }
    if (static_cast<uint64_t>(*end) > data_size) {
      return data_loss(tensor + ": data_offsets " + offsets_it->dump() + " run past the end of the data (" +
                       std::to_string(data_size) + " bytes); the file is truncated or corrupt");
    }
    int64_t expected_bytes = checked_tensor_bytes(entry.shape, dtype_size(*dtype));
    if (expected_bytes < 0) return data_loss(tensor + ": shape " + shape_to_string(entry.shape) + " is too large");
    if (expected_bytes != *end - *begin) {
      return data_loss(tensor + ": shape " + shape_to_string(entry.shape) + " of " + dtype_name_text + " needs " +
                       std::to_string(expected_bytes) + " bytes but data_offsets " + offsets_it->dump() + " hold " +
                       std::to_string(*end - *begin));
    }
    entry.offset = data_start + static_cast<size_t>(*begin);
    entry.bytes = static_cast<size_t>(expected_bytes);
    auto [it, inserted] = file.entries_.emplace(name, std::move(entry));
    spans.push_back({static_cast<size_t>(*begin), static_cast<size_t>(*end), &it->first});
  }

  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.begin < b.begin; });
  const Span* furthest = nullptr;  // the non-empty span seen so far that ends last
  for (const Span& span : spans) {
    if (span.begin == span.end) continue;
    if (furthest != nullptr && span.begin < furthest->end) {
      return data_loss(where + ": tensors '" + *furthest->name + "' and '" + *span.name + "' overlap");
    }
    if (furthest == nullptr || span.end > furthest->end) furthest = &span;
  }
  return file;
}

std::vector<std::string> SafetensorsFile::names() const {
  std::vector<std::string> names;
  names.reserve(entries_.size());
  for (const auto& [name, entry] : entries_) names.push_back(name);
  return names;
}

Result<TensorView> SafetensorsFile::find(std::string_view name) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) return not_found(path().string() + ": no tensor '" + std::string(name) + "'");
  const Entry& e = it->second;
  return TensorView{it->first, e.dtype, e.shape, mapping_->data() + e.offset, e.bytes, mapping_};
}

Result<SafetensorsCheckpoint> SafetensorsCheckpoint::open(const std::filesystem::path& model_dir) {
  SafetensorsCheckpoint checkpoint;
  checkpoint.directory_ = model_dir;
  const std::filesystem::path index_path = model_dir / "model.safetensors.index.json";
  const std::filesystem::path single_path = model_dir / "model.safetensors";
  std::error_code ec;

  if (!std::filesystem::exists(index_path, ec)) {
    if (!std::filesystem::exists(single_path, ec)) {
      return not_found(model_dir.string() + ": neither model.safetensors nor model.safetensors.index.json");
    }
    checkpoint.source_ = single_path;
    auto file = SafetensorsFile::open(single_path);
    if (!file.ok()) return file.status();
    for (const std::string& name : file->names()) checkpoint.shard_of_.emplace(name, 0);
    checkpoint.shards_.push_back(std::move(file).value());
    return checkpoint;
  }

  checkpoint.source_ = index_path;
  auto index = read_json_file(index_path);
  if (!index.ok()) return index.status();
  const std::string where = index_path.string();
  auto map_it = index->find("weight_map");
  if (!index->is_object() || map_it == index->end() || !map_it->is_object()) {
    return data_loss(where + ": missing object 'weight_map'");
  }
  std::map<std::string, size_t> shard_index;  // shard file name -> index into shards_
  for (const auto& [tensor, shard_value] : map_it->items()) {
    if (!shard_value.is_string()) return data_loss(where + ": weight_map['" + tensor + "'] is not a file name");
    const std::string shard_name = shard_value.get<std::string>();
    const std::filesystem::path relative(shard_name);
    bool escapes = relative.empty() || relative.is_absolute() ||
                   std::any_of(relative.begin(), relative.end(), [](const auto& part) { return part == ".."; });
    if (escapes) {
      return data_loss(where + ": weight_map['" + tensor + "'] = '" + shard_name + "' is not a file in the model directory");
    }
    auto [it, inserted] = shard_index.emplace(shard_name, checkpoint.shards_.size());
    if (inserted) {
      auto shard = SafetensorsFile::open(model_dir / relative);
      if (!shard.ok()) return shard.status();
      checkpoint.shards_.push_back(std::move(shard).value());
    }
    const SafetensorsFile& shard = checkpoint.shards_[it->second];
    if (!shard.contains(tensor)) {
      return not_found(where + ": tensor '" + tensor + "' is mapped to " + shard_name + ", which does not contain it");
    }
    checkpoint.shard_of_.emplace(tensor, it->second);
  }
  return checkpoint;
}

std::vector<std::string> SafetensorsCheckpoint::names() const {
  std::vector<std::string> names;
  names.reserve(shard_of_.size());
  for (const auto& [name, shard] : shard_of_) names.push_back(name);
  return names;
}

Result<TensorView> SafetensorsCheckpoint::find(std::string_view name) const {
  auto it = shard_of_.find(name);
  if (it == shard_of_.end()) {
    return not_found(source_.string() + ": no tensor '" + std::string(name) + "'");
  }
  return shards_[it->second].find(name);
}

}  // namespace star
