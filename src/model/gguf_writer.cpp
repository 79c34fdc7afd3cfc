#include "star/model/gguf_writer.h"

#include <cstring>
#include <fstream>

#include "star/model/gguf.h"
#include "star/model/tensor_view.h"

namespace star {
namespace {

constexpr uint32_t kGgufVersion = 3;
constexpr uint64_t kAlignment = 32;  // GGUF's default general.alignment

template <typename T>
void put(std::string& out, T value) {
  char raw[sizeof(T)];
  std::memcpy(raw, &value, sizeof(T));
  out.append(raw, sizeof(T));
}

void put_string(std::string& out, std::string_view text) {
  put<uint64_t>(out, text.size());
  out.append(text);
}

uint64_t aligned(uint64_t offset) { return (offset + kAlignment - 1) / kAlignment * kAlignment; }

}  // namespace

void GgufWriter::begin_entry(std::string_view key, uint32_t value_type) {
  put_string(metadata_, key);
  put<uint32_t>(metadata_, value_type);
  ++metadata_count_;
}

void GgufWriter::add_uint32(std::string_view key, uint32_t value) {
  begin_entry(key, static_cast<uint32_t>(GgufType::kUint32));
  put<uint32_t>(metadata_, value);
}

void GgufWriter::add_float32(std::string_view key, float value) {
  begin_entry(key, static_cast<uint32_t>(GgufType::kFloat32));
  put<float>(metadata_, value);
}

void GgufWriter::add_bool(std::string_view key, bool value) {
  begin_entry(key, static_cast<uint32_t>(GgufType::kBool));
  put<uint8_t>(metadata_, value ? 1 : 0);
}

void GgufWriter::add_string(std::string_view key, std::string_view value) {
  begin_entry(key, static_cast<uint32_t>(GgufType::kString));
  put_string(metadata_, value);
}

void GgufWriter::add_string_array(std::string_view key, const std::vector<std::string>& values) {
  begin_entry(key, static_cast<uint32_t>(GgufType::kArray));
  put<uint32_t>(metadata_, static_cast<uint32_t>(GgufType::kString));
  put<uint64_t>(metadata_, values.size());
  for (const std::string& v : values) put_string(metadata_, v);
}

void GgufWriter::add_int32_array(std::string_view key, const std::vector<int32_t>& values) {
  begin_entry(key, static_cast<uint32_t>(GgufType::kArray));
  put<uint32_t>(metadata_, static_cast<uint32_t>(GgufType::kInt32));
  put<uint64_t>(metadata_, values.size());
  for (int32_t v : values) put<int32_t>(metadata_, v);
}

Status GgufWriter::add_tensor(std::string name, std::vector<int64_t> shape, DType dtype, std::vector<std::byte> bytes) {
  const int64_t row_length = shape.empty() ? 1 : shape.back();
  const int64_t row_bytes = dtype_row_bytes(dtype, row_length);
  const int64_t rows = shape.empty() ? 1 : checked_tensor_bytes(std::span(shape).first(shape.size() - 1), 1);
  if (row_bytes < 0 || rows < 0 || static_cast<uint64_t>(rows * row_bytes) != bytes.size()) {
    return invalid_argument("GGUF tensor '" + name + "': " + std::to_string(bytes.size()) + " bytes of " +
                            dtype_name(dtype) + " do not make a tensor of shape " + shape_to_string(shape));
  }
  tensors_.push_back({std::move(name), std::move(shape), dtype, std::move(bytes)});
  return ok_status();
}

Status GgufWriter::write(const std::filesystem::path& path) const {
  std::string header = "GGUF";
  put<uint32_t>(header, kGgufVersion);
  put<uint64_t>(header, tensors_.size());
  put<uint64_t>(header, metadata_count_);
  header += metadata_;
  uint64_t offset = 0;
  for (const Tensor& t : tensors_) {
    put_string(header, t.name);
    put<uint32_t>(header, static_cast<uint32_t>(t.shape.size()));
    for (auto d = t.shape.rbegin(); d != t.shape.rend(); ++d) put<uint64_t>(header, static_cast<uint64_t>(*d));
    put<uint32_t>(header, ggml_type_of(t.dtype));
    put<uint64_t>(header, offset);
    offset = aligned(offset + t.bytes.size());
  }
  header.resize(aligned(header.size()), '\0');

  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return unavailable(path.string() + ": cannot open for writing");
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  const std::string padding(kAlignment, '\0');
  for (const Tensor& t : tensors_) {
    out.write(reinterpret_cast<const char*>(t.bytes.data()), static_cast<std::streamsize>(t.bytes.size()));
    out.write(padding.data(), static_cast<std::streamsize>(aligned(t.bytes.size()) - t.bytes.size()));
  }
  out.close();
  if (!out) return unavailable(path.string() + ": write failed");
  return ok_status();
}

}  // namespace star
