#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "star/model/safetensors.h"

namespace star {

Status write_safetensors(const std::filesystem::path& path, std::span<const SafetensorsTensor> tensors) {
  const std::string where = path.string();
  nlohmann::ordered_json header;
  header["__metadata__"] = {{"format", "pt"}};
  std::set<std::string_view> seen;
  uint64_t offset = 0;
  for (const SafetensorsTensor& t : tensors) {
    if (t.name == "__metadata__" || !seen.insert(t.name).second) {
      return invalid_argument(where + ": tensor name '" + t.name + "' is reserved or repeated");
    }
    int64_t expected = checked_tensor_bytes(t.shape, dtype_size(t.dtype));
    if (expected < 0 || static_cast<uint64_t>(expected) != t.bytes.size()) {
      return invalid_argument(where + ": tensor '" + t.name + "' has shape " + shape_to_string(t.shape) + " of " +
                              dtype_name(t.dtype) + " (" + std::to_string(expected) + " bytes) but " +
                              std::to_string(t.bytes.size()) + " bytes were given");
    }
    header[t.name] = {{"dtype", dtype_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  std::string header_text = header.dump();
  header_text.append((8 - header_text.size() % 8) % 8, ' ');
  const uint64_t header_length = header_text.size();

  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return unavailable(where + ": cannot create");
  out.write(reinterpret_cast<const char*>(&header_length), 8);
  out.write(header_text.data(), static_cast<std::streamsize>(header_text.size()));
  for (const SafetensorsTensor& t : tensors) {
    out.write(reinterpret_cast<const char*>(t.bytes.data()), static_cast<std::streamsize>(t.bytes.size()));
  }
  out.close();
  if (!out) return unavailable(where + ": write failed");
  return ok_status();
}

}  // namespace star
